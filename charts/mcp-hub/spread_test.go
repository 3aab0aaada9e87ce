package chart_test

import (
	"slices"
	"testing"
)

// TestZoneSpread: more than one pod spreads over zones by default, soft so
// a one-zone cluster still schedules; one pod, zoneSpread none or the
// user's own constraints render none of the chart's.
func TestZoneSpread(t *testing.T) {
	type constraint struct {
		MaxSkew           int      `json:"maxSkew"`
		TopologyKey       string   `json:"topologyKey"`
		WhenUnsatisfiable string   `json:"whenUnsatisfiable"`
		MatchLabelKeys    []string `json:"matchLabelKeys"`
		LabelSelector     struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"labelSelector"`
	}
	cases := []struct {
		name   string
		values string
		// want is whenUnsatisfiable of the zone constraint; "" for none.
		want string
		// key is the constraint's topologyKey when one is rendered.
		key string
	}{
		{name: "defaults: two replicas", want: "ScheduleAnyway", key: "topology.kubernetes.io/zone"},
		{name: "autoscaling", values: "autoscaling: {enabled: true}\n", want: "ScheduleAnyway", key: "topology.kubernetes.io/zone"},
		{name: "hard", values: "zoneSpread: hard\n", want: "DoNotSchedule", key: "topology.kubernetes.io/zone"},
		{name: "none", values: "zoneSpread: none\n"},
		{name: "one replica", values: "replicaCount: 1\n"},
		{name: "the user's own", values: "topologySpreadConstraints: [{maxSkew: 2, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: x}}}]\n",
			want: "DoNotSchedule", key: "kubernetes.io/hostname"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := render(t, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			var d struct {
				Spec struct {
					Selector struct {
						MatchLabels map[string]string `json:"matchLabels"`
					} `json:"selector"`
					Template struct {
						Spec struct {
							TopologySpreadConstraints []constraint `json:"topologySpreadConstraints"`
						} `json:"spec"`
					} `json:"template"`
				} `json:"spec"`
			}
			index(objs).one(t, "Deployment").decode(t, &d)
			got := d.Spec.Template.Spec.TopologySpreadConstraints
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("topologySpreadConstraints %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].WhenUnsatisfiable != tc.want || got[0].TopologyKey != tc.key {
				t.Fatalf("topologySpreadConstraints %+v, want one on %s, %s", got, tc.key, tc.want)
			}
			if tc.key != "topology.kubernetes.io/zone" {
				return
			}
			c := got[0]
			if c.MaxSkew != 1 || !slices.Equal(c.MatchLabelKeys, []string{"pod-template-hash"}) {
				t.Errorf("zone constraint %+v: want maxSkew 1 within one rollout", c)
			}
			for k, v := range d.Spec.Selector.MatchLabels {
				if c.LabelSelector.MatchLabels[k] != v {
					t.Errorf("zone constraint selects %v, not the Deployment's pods %v", c.LabelSelector.MatchLabels, d.Spec.Selector.MatchLabels)
				}
			}
		})
	}
}

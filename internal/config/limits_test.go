package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestLimitsParsed(t *testing.T) {
	t.Setenv("MCPHUB_TEST_CI", "ci-secret")
	for _, tc := range []struct {
		name, yaml  string
		settings    LimitSettings
		token, serv *Limits
	}{
		{"nothing configured", "servers: []\n", LimitSettings{MaxInFlight: new(DefaultMaxInFlight)}, nil, nil},
		{"the documented example", `
limits:
  perCaller:   {rate: 20, burst: 40, maxInFlight: 8}
  perUpstream: {rate: 0, burst: 0, maxInFlight: 64}
auth:
  tokens:
    - name: ci
      token: {env: MCPHUB_TEST_CI}
      maxLevel: full
      limits: {rate: 5, burst: 10, maxInFlight: 2}
servers:
  - name: github
    url: http://github-mcp/mcp
    limits: {maxInFlight: 16}
`, LimitSettings{MaxInFlight: new(512), PerCaller: Limits{Rate: 20, Burst: 40, MaxInFlight: 8}, PerUpstream: Limits{MaxInFlight: 64}},
			&Limits{Rate: 5, Burst: 10, MaxInFlight: 2}, &Limits{MaxInFlight: 16}},
		{"burst defaults to ceil(rate)", `
limits: {perCaller: {rate: 2.5}}
auth: {tokens: [{name: ci, token: {env: MCPHUB_TEST_CI}, maxLevel: full, limits: {rate: 0.5}}]}
servers: [{name: github, url: http://github-mcp/mcp, limits: {rate: 7}}]
`, LimitSettings{MaxInFlight: new(512), PerCaller: Limits{Rate: 2.5, Burst: 3}}, &Limits{Rate: 0.5, Burst: 1}, &Limits{Rate: 7, Burst: 7}},
		{"the hub's calls in flight", "limits: {maxInFlight: 2000, perCaller: {maxInFlight: 4}}\n",
			LimitSettings{MaxInFlight: new(2000), PerCaller: Limits{MaxInFlight: 4}}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("t.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.Limits, tc.settings) {
				t.Errorf("limits = %+v, want %+v", c.Limits, tc.settings)
			}
			if tc.token != nil && !reflect.DeepEqual(c.Auth.Tokens[0].Limits, tc.token) {
				t.Errorf("auth.tokens[0].limits = %+v, want %+v", c.Auth.Tokens[0].Limits, tc.token)
			}
			if tc.serv != nil && !reflect.DeepEqual(c.Servers[0].Limits, tc.serv) {
				t.Errorf("servers[0].limits = %+v, want %+v", c.Servers[0].Limits, tc.serv)
			}
		})
	}
}

func TestLimitsErrorsNameFileAndField(t *testing.T) {
	t.Setenv("MCPHUB_TEST_CI", "ci-secret")
	token := func(limits string) string {
		return "auth: {tokens: [{name: ci, token: {env: MCPHUB_TEST_CI}, maxLevel: full, limits: " + limits + "}]}\n"
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"negative rate", "limits: {perCaller: {rate: -1}}\n", "limits.perCaller.rate: -1 is not within 0..1e+06"},
		{"huge rate", "limits: {perUpstream: {rate: 1e9}}\n", "limits.perUpstream.rate: 1e+09 is not within"},
		{"negative burst", "limits: {perCaller: {rate: 1, burst: -2}}\n", "limits.perCaller.burst: -2 must not be negative"},
		{"burst without rate", "limits: {perCaller: {burst: 5}}\n", "limits.perCaller.burst: 5 is set without a rate"},
		{"negative in flight", "limits: {perUpstream: {maxInFlight: -1}}\n", "limits.perUpstream.maxInFlight: -1 must not be negative"},
		{"the hub's bound off", "limits: {maxInFlight: 0}\n", "limits.maxInFlight: 0 must be positive (omit it for the default, 512)"},
		{"the hub's bound negative", "limits: {maxInFlight: -8}\n", "limits.maxInFlight: -8 must be positive"},
		{"the hub's bound of another type", "limits: {maxInFlight: many}\n", "limits.maxInFlight"},
		{"rate of another type", "limits: {perCaller: {rate: fast}}\n", "limits.perCaller.rate"},
		{"unknown key", "limits: {perCaller: {qps: 3}}\n", `unknown field "qps"`},
		{"caller could take an upstream", "limits: {perCaller: {maxInFlight: 64}, perUpstream: {maxInFlight: 64}}\n",
			"limits.perCaller.maxInFlight: 64 is not below limits.perUpstream.maxInFlight 64"},
		{"token negative", token("{maxInFlight: -3}"), "auth.tokens[0] (ci).limits.maxInFlight: -3 must not be negative"},
		{"token could take an upstream", "limits: {perUpstream: {maxInFlight: 4}}\n" + token("{maxInFlight: 4}"),
			"auth.tokens[0] (ci).limits.maxInFlight: 4 is not below limits.perUpstream.maxInFlight 4"},
		{"server negative", "servers: [{name: gh, url: http://gh/mcp, limits: {rate: -5}}]\n", "servers[0] (gh).limits.rate: -5 is not within"},
		{"server burst without rate", "servers: [{name: gh, url: http://gh/mcp, limits: {burst: 5}}]\n", "servers[0] (gh).limits.burst: 5 is set without a rate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("test.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.HasPrefix(err.Error(), "config test.yaml: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q\nwant it to start with the file and contain %q", err, tc.want)
			}
		})
	}
}

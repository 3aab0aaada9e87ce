package server

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/registry/quarantine"
	"github.com/purko-io/mcp-hub/internal/toolscreen"
)

// TestScreenedCounted: a screened definition counts once per rule it hit
// in mcphub_tools_screened_total, and not as a pin change.
func TestScreenedCounted(t *testing.T) {
	s := newPinSignals(prometheus.NewRegistry(), zerolog.Nop())
	s.heard(quarantine.Event{Server: "s", Tool: "fact", Quarantine: quarantine.Quarantine{CurrentSHA256: "c",
		Enforced: true, Screened: []toolscreen.Hit{
			{Rule: toolscreen.HiddenBlock, Where: "description"},
			{Rule: toolscreen.HiddenBlock, Where: "title"},
			{Rule: toolscreen.Exfiltration, Where: "description"}}}})
	for rule, want := range map[string]float64{toolscreen.HiddenBlock: 1, toolscreen.Exfiltration: 1, toolscreen.ToolShadowing: 0} {
		if got := value(t, s.screened.WithLabelValues("s", rule)); got != want {
			t.Errorf("mcphub_tools_screened_total{rule=%q} = %v, want %v", rule, got, want)
		}
	}
	if got := value(t, s.changes.WithLabelValues("s")); got != 0 {
		t.Errorf("a screened definition counted as a pin change: %v", got)
	}
}

func value(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

package quarantine

import (
	"testing"

	"github.com/rs/zerolog"
)

func TestReportedOncePerDefinition(t *testing.T) {
	c := New(nil, "", zerolog.Nop())
	var got []string
	tell := func(ev Event) { got = append(got, ev.Server+"/"+ev.Tool+"@"+ev.Quarantine.CurrentSHA256) }
	for _, step := range []struct {
		sum  string // "" : not quarantined any more
		want int
	}{{"c1", 1}, {"c1", 1}, {"c2", 2}, {"", 2}, {"c2", 3}} {
		var held []Event
		if step.sum != "" {
			held = []Event{{Server: "fs", Tool: "read", Published: "fs__read", Quarantine: Quarantine{
				Diff: `description changed: "a" -> "b"`, PinnedSHA256: "p", CurrentSHA256: step.sum, Enforced: true}}}
		}
		c.Report(held, tell)
		if len(got) != step.want {
			t.Fatalf("after %q: reported %v, want %d reports", step.sum, got, step.want)
		}
	}
}

package registry

import (
	"errors"
	"testing"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/upstream"
)

func quarantinedServer(name, tool, sum string) ServerView {
	sv := server(name, upstream.StateConnected, "x")
	q := server(name, upstream.StateConnected, tool).Tools[0]
	q.Quarantine = &Quarantine{Diff: `description changed: "a" -> "b"`, PinnedSHA256: "p", CurrentSHA256: sum, Enforced: true}
	sv.Quarantined = []Tool{q}
	return sv
}

func TestLookupRefusesQuarantinedTool(t *testing.T) {
	r := New(Options{RouteCacheSize: 8}, zerolog.Nop())
	r.catalog.Store(catalogOf(1, quarantinedServer("fs", "read", "c1")))
	_, err := r.Lookup("fs__read")
	var q *QuarantinedError
	if !errors.As(err, &q) || q.Server != "fs" || q.Original != "read" {
		t.Fatalf("Lookup of a quarantined tool = %v (%T)", err, err)
	}
	want := `tool 'fs__read' is quarantined: its definition changed since it was pinned: description changed: "a" -> "b". ` +
		"An operator approves it with `mcp-hub pins approve --server fs --tool read` or POST /api/mcp/pins/approve"
	if err.Error() != want {
		t.Errorf("error\n %s\nwant\n %s", err, want)
	}
	if _, err := r.Lookup("fs__x"); err != nil {
		t.Errorf("the server's other tool: %v", err)
	}
}

func TestQuarantineReportedOncePerDefinition(t *testing.T) {
	r := New(Options{}, zerolog.Nop())
	var got []string
	r.OnQuarantine(func(ev QuarantineEvent) { got = append(got, ev.Server+"/"+ev.Tool+"@"+ev.Quarantine.CurrentSHA256) })
	for _, step := range []struct {
		sum  string // "" : not quarantined any more
		want int
	}{{"c1", 1}, {"c1", 1}, {"c2", 2}, {"", 2}, {"c2", 3}} {
		cat := catalogOf(1, server("fs", upstream.StateConnected, "x"))
		if step.sum != "" {
			cat = catalogOf(1, quarantinedServer("fs", "read", step.sum))
		}
		r.reportQuarantines(cat)
		if len(got) != step.want {
			t.Fatalf("after %q: reported %v, want %d reports", step.sum, got, step.want)
		}
	}
}

package registry

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/pinning"
	"github.com/purko-io/mcp-hub/internal/registry/quarantine"
)

func quarantinedServer(name, tool, sum string) ServerView {
	sv := server(name, StateConnected, "x")
	q := server(name, StateConnected, tool).Tools[0]
	q.Quarantine = &quarantine.Quarantine{Diff: `description changed: "a" -> "b"`, PinnedSHA256: "p", CurrentSHA256: sum, Enforced: true}
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

// TestRemovedServerPinsAreDeleted: the pins and name claims of a server
// removed from every source are deleted from the files (a server of that
// name added later is pinned afresh); the other servers' stay.
func TestRemovedServerPinsAreDeleted(t *testing.T) {
	// Up before the registry, so they are closed after it stops (a
	// server closed first waits for the hub's open streams).
	a, b := newEchoUpstream(t, "a", true), newEchoUpstream(t, "b", true)
	dir := t.TempDir()
	pinsFile := filepath.Join(dir, "pins.json")
	pins, err := pinning.OpenFile(pinsFile)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pinning.OpenClaimsFile(pinning.NamesFileFor(pinsFile))
	if err != nil {
		t.Fatal(err)
	}
	r, src, _ := runRegistry(t, Options{Names: names, Pins: pinning.New(pinning.Enforce, pins, nil)})

	// held reads the servers of the pins and claims files as a restart
	// would.
	held := func() (string, string) {
		p, err := pinning.OpenFile(pinsFile)
		if err != nil {
			t.Fatal(err)
		}
		n, err := pinning.OpenClaimsFile(pinning.NamesFileFor(pinsFile))
		if err != nil {
			t.Fatal(err)
		}
		var ps, ns []string
		for _, pin := range p.List() {
			ps = append(ps, pin.Server)
		}
		for _, c := range n.Claims() {
			ns = append(ns, c.Server)
		}
		return strings.Join(ps, ","), strings.Join(ns, ",")
	}
	waitHeld := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			p, n := held()
			if p == want && n == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("pins of %q and claims of %q; want both of %q", p, n, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	src <- []config.ServerSpec{a.spec(), b.spec()}
	waitNames(t, r, map[string]string{"a__echo": "a", "b__echo": "b"})
	waitHeld("a,b")
	src <- []config.ServerSpec{a.spec()}
	waitHeld("a")
	waitNames(t, r, map[string]string{"a__echo": "a"})
	src <- []config.ServerSpec{a.spec(), b.spec()}
	waitHeld("a,b")
}

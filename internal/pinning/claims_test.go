package pinning

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

func claim(name, server, tool string) Claim {
	return Claim{Name: name, Key: Key{Server: server, Tool: tool}}
}

func TestClaimFirst(t *testing.T) {
	cases := []struct {
		name       string
		held       []Claim
		candidates []Claim
		want       []Claim
	}{
		{"new names are claimed", nil, []Claim{claim("echo", "a", "echo")}, []Claim{claim("echo", "a", "echo")}},
		{"a claimed name stays with its owner", []Claim{claim("echo", "a", "echo")},
			[]Claim{claim("echo", "b", "echo")}, []Claim{claim("echo", "a", "echo")}},
		{"a named tool keeps its name", []Claim{claim("a__echo", "a", "echo")},
			[]Claim{claim("echo", "a", "echo")}, []Claim{claim("a__echo", "a", "echo")}},
		{"the first of two candidates wins", nil,
			[]Claim{claim("echo", "a", "echo"), claim("echo", "b", "echo")}, []Claim{claim("echo", "a", "echo")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMemoryClaims()
			if _, err := m.ClaimFirst(context.Background(), tc.held); err != nil {
				t.Fatal(err)
			}
			got, err := m.ClaimFirst(context.Background(), tc.candidates)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("ClaimFirst = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestClaimsFileSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state", "names.json")
	s, err := OpenClaimsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimFirst(ctx, []Claim{claim("echo", "a", "echo"), claim("b__echo", "b", "echo"), claim("x", "c", "x")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	again, err := OpenClaimsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Claim{claim("b__echo", "b", "echo"), claim("echo", "a", "echo")}
	if got := again.Claims(); !slices.Equal(got, want) {
		t.Fatalf("claims after a restart %v, want %v", got, want)
	}

	if err := os.WriteFile(path, []byte(`{"version":1,"claims":[{"name":"x"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenClaimsFile(path); err == nil || !strings.Contains(err.Error(), "names file "+path+" is corrupt") {
		t.Fatalf("a corrupt names file: %v", err)
	}
	if NamesFileFor("/s/mcp-hub/pins.json") != "/s/mcp-hub/names.json" {
		t.Errorf("names file beside pins: %s", NamesFileFor("/s/mcp-hub/pins.json"))
	}
}

// TestConfigMapClaimsReplicasAgree: two replicas claim the same name for
// different tools at once (each saw another server up); one wins and the
// other adopts it. The claims share the pins ConfigMap without touching
// the pins, with the chart's RBAC only.
func TestConfigMapClaimsReplicasAgree(t *testing.T) {
	a, b, _, _ := replicas(t, "names")
	ctx := context.Background()

	// A pin first: claims must leave it alone.
	if _, err := New(Enforce, a, nil).Check(ctx, "a", []mcp.Tool{rawTool(t, "echo", "Echo", `{"type":"object"}`)}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var gotA, gotB []Claim
	var errA, errB error
	wg.Add(2)
	go func() { defer wg.Done(); gotA, errA = a.ClaimFirst(ctx, []Claim{claim("echo", "a", "echo")}) }()
	go func() { defer wg.Done(); gotB, errB = b.ClaimFirst(ctx, []Claim{claim("echo", "b", "echo")}) }()
	wg.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("claims: %v / %v", errA, errB)
	}
	if len(gotA) != 1 || !slices.Equal(gotA, gotB) {
		t.Fatalf("replicas disagree on who owns echo: A %v, B %v", gotA, gotB)
	}
	for name, s := range map[string]*ConfigMapStore{"A": a, "B": b} {
		eventually(t, "replica "+name+" holds the winning claim and the pin", func() error {
			if got := s.Claims(); !slices.Equal(got, gotA) {
				return fmt.Errorf("claims %v", got)
			}
			if _, ok := s.Get(Key{Server: "a", Tool: "echo"}); !ok {
				return fmt.Errorf("pin lost")
			}
			return nil
		})
	}

	// A release on one replica reaches the other by the watch.
	if err := a.Release(ctx, gotA[0].Server); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.ClaimsChanged():
	case <-time.After(20 * time.Second):
		t.Fatal("replica B was not told of the release")
	}
	eventually(t, "replica B sees the release", func() error {
		if got := b.Claims(); len(got) != 0 {
			return fmt.Errorf("claims %v", got)
		}
		return nil
	})
}

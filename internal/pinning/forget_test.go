package pinning

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// pinnedServers are the servers with pins in s, in order.
func pinnedServers(s Store) string {
	var out []string
	for _, p := range s.List() {
		if len(out) == 0 || out[len(out)-1] != p.Server {
			out = append(out, p.Server)
		}
	}
	return strings.Join(out, ",")
}

// TestForgetDropsTheServersPins: Forget deletes every pin of the servers
// named, saved and unsaved, and keeps the others, in the file.
func TestForgetDropsTheServersPins(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "pins.json")
	fs, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	store := &flakyStore{FileStore: fs}
	p := New(Enforce, store, nil)
	tools := []mcp.Tool{rawTool(t, "read", "Read", `{"type":"object"}`), rawTool(t, "write", "Write", `{"type":"object"}`)}
	for _, s := range []string{"a", "b", "c"} {
		if _, err := p.Check(ctx, s, tools); err != nil {
			t.Fatal(err)
		}
	}
	store.down = true
	if _, err := p.Check(ctx, "d", tools); err == nil {
		t.Fatal("check with the store down succeeded")
	}
	store.down = false
	if err := p.Forget(ctx, "b", "d"); err != nil {
		t.Fatal(err)
	}
	reopened, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := pinnedServers(reopened); got != "a,c" {
		t.Fatalf("pins of %s after forgetting b and d; want a,c", got)
	}
	if len(p.unsaved) != 0 {
		t.Fatalf("unsaved pins of a forgotten server kept: %v", p.unsaved)
	}
	if err := p.Forget(ctx, "gone"); err != nil {
		t.Fatalf("forgetting a server without pins: %v", err)
	}
}

// TestStateFileIsBounded: a write that would make a state file larger than
// its bound is refused with an error saying so, and the file and the pins
// in force stay as they were.
func TestStateFileIsBounded(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "pins.json")
	s, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s.maxBytes = 4 << 10
	pin := func(i int) Pin {
		return NewPin(Key{Server: "s", Tool: fmt.Sprint("t", i)}, defOf(t, rawTool(t, "t", "A tool", `{"type":"object"}`)), time.Now())
	}
	if _, err := s.PinFirst(ctx, []Pin{pin(0)}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	var many []Pin
	for i := 1; i <= 100; i++ {
		many = append(many, pin(i))
	}
	_, err = s.PinFirst(ctx, many)
	if err == nil || !strings.Contains(err.Error(), "refusing to write "+path) || !strings.Contains(err.Error(), "a state file may hold") {
		t.Fatalf("a write over the bound: %v", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) || len(s.List()) != 1 {
		t.Fatalf("the refused write changed the file or the pins (%d pins)", len(s.List()))
	}

	c, err := OpenClaimsFile(filepath.Join(t.TempDir(), "names.json"))
	if err != nil {
		t.Fatal(err)
	}
	c.maxBytes = 1 << 10
	var claims []Claim
	for i := range 100 {
		claims = append(claims, claim(fmt.Sprint("t", i), "s", fmt.Sprint("t", i)))
	}
	if _, err := c.ClaimFirst(ctx, claims); err == nil || !strings.Contains(err.Error(), "a state file may hold") || len(c.Claims()) != 0 {
		t.Fatalf("claims over the bound: %v, %d held", err, len(c.Claims()))
	}
}

// TestConfigMapForget: a replica's Forget deletes the pins of the servers
// from the shared ConfigMap (with the chart's RBAC), the other replica
// sees it, and the claims are left alone.
func TestConfigMapForget(t *testing.T) {
	a, b, _, _ := replicas(t, "pinforget")
	ctx := context.Background()
	pa := New(Enforce, a, nil)
	tools := []mcp.Tool{rawTool(t, "read", "Read", `{"type":"object"}`)}
	if _, err := pa.CheckAll(ctx, []Offer{{Server: "keep", Tools: tools}, {Server: "gone", Tools: tools}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ClaimFirst(ctx, []Claim{claim("read", "gone", "read")}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "replica B holds both servers' pins", func() error {
		if got := pinnedServers(b); got != "gone,keep" {
			return fmt.Errorf("pins of %s", got)
		}
		return nil
	})
	if err := pa.Forget(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "replica B sees the pins of gone deleted", func() error {
		if got := pinnedServers(b); got != "keep" {
			return fmt.Errorf("pins of %s", got)
		}
		if len(b.Claims()) != 1 {
			return fmt.Errorf("claims %v: forgetting pins must leave them", b.Claims())
		}
		return nil
	})
}

package registry

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/discovery"
)

// cutOff is a source that can be cut off from what it watches.
type cutOff struct {
	oneShot
	since *atomic.Pointer[time.Time]
}

func (s cutOff) Outage() (discovery.Outage, bool) {
	t := s.since.Load()
	if t == nil {
		return discovery.Outage{}, false
	}
	return discovery.Outage{Source: s.name, What: "the cluster", Since: *t}, true
}

// TestOutages: the registry asks the sources of Run that can tell they
// are cut off, and only those; none before Run.
func TestOutages(t *testing.T) {
	r := New(Options{}, zerolog.Nop())
	if got := r.Outages(); len(got) != 0 {
		t.Fatalf("outages before Run: %v", got)
	}
	var since atomic.Pointer[time.Time]
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx, oneShot{name: "file"}, cutOff{oneShot{name: "kube"}, &since}) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(5 * time.Second)
	for !r.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("not ready")
		}
		time.Sleep(time.Millisecond)
	}
	if got := r.Outages(); len(got) != 0 {
		t.Fatalf("outages while all is well: %v", got)
	}
	at := time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC)
	since.Store(&at)
	got := r.Outages()
	if len(got) != 1 || got[0].Source != "kube" || got[0].String() != "the cluster unreachable since 2026-12-03T02:00:00Z" {
		t.Fatalf("outages = %v", got)
	}
}

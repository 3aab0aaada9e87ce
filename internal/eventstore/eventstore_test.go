package eventstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"
)

func TestEventStoreReplayAndBounds(t *testing.T) {
	ctx := context.Background()
	s := New()
	msg := func(i int) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)) }
	var ids []string
	for i := range eventsPerStream + 10 {
		id, err := s.StoreEvent(ctx, "sess", "stream-1", msg(i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	replay := func(last string) ([]string, error) {
		var got []string
		_, err := s.ReplayEventsAfter(ctx, "sess", last, func(id string, m json.RawMessage) error {
			got = append(got, string(m))
			return nil
		})
		return got, err
	}
	// Resuming after the last-but-two event replays the last two.
	got, err := replay(ids[len(ids)-3])
	if err != nil || strings.Join(got, "") != fmt.Sprintf(`{"n":%d}{"n":%d}`, len(ids)-2, len(ids)-1) {
		t.Fatalf("replay = %v, %v", got, err)
	}
	// The oldest events were forgotten: resuming from one fails as unknown.
	if _, err := replay(ids[0]); !errors.Is(err, server.ErrUnknownEventID) {
		t.Fatalf("replay from a forgotten event: %v", err)
	}
	// A message too large to keep is sent (it has an id) but not kept.
	big, _ := s.StoreEvent(ctx, "sess", "stream-1", json.RawMessage(`"`+strings.Repeat("x", storeMaxEvent)+`"`))
	if _, err := replay(big); !errors.Is(err, server.ErrUnknownEventID) {
		t.Fatalf("a large event was kept: %v", err)
	}
	// Old streams of a session are forgotten.
	first, _ := s.StoreEvent(ctx, "sess2", "s0", msg(0))
	for i := 1; i <= streamsPerSession; i++ {
		_, _ = s.StoreEvent(ctx, "sess2", fmt.Sprint("s", i), msg(i))
	}
	if _, err := s.ReplayEventsAfter(ctx, "sess2", first, func(string, json.RawMessage) error { return nil }); !errors.Is(err, server.ErrUnknownEventID) {
		t.Fatalf("the oldest stream was kept: %v", err)
	}
	// Purging a session forgets it and its bytes.
	before := s.bytes.Load()
	_ = s.PurgeSession(ctx, "sess")
	if _, err := replay(ids[len(ids)-2]); !errors.Is(err, server.ErrUnknownEventID) || s.bytes.Load() >= before {
		t.Fatalf("purged session still known (%v) or bytes not released (%d -> %d)", err, before, s.bytes.Load())
	}
}

// The store never holds much more than storeMaxBytes, however many
// sessions write to it.
func TestEventStoreByteBudget(t *testing.T) {
	ctx := context.Background()
	s := New()
	payload := json.RawMessage(`"` + strings.Repeat("y", storeMaxEvent-16) + `"`)
	for i := range 2 * storeMaxBytes / storeMaxEvent {
		_, _ = s.StoreEvent(ctx, fmt.Sprint("sess-", i), "st", payload)
	}
	if b := s.bytes.Load(); b > storeMaxBytes || b <= 0 {
		t.Fatalf("store holds %d bytes, budget %d", b, storeMaxBytes)
	}
	var total int64
	for _, k := range s.sessions.Keys() {
		if log, ok := s.sessions.Peek(k); ok {
			total += log.bytes
		}
	}
	if total != s.bytes.Load() {
		t.Fatalf("accounted %d bytes, sessions hold %d", s.bytes.Load(), total)
	}
}

package registry

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/upstream"
)

// TestUnavailableOf: a call's error that says the connection was down
// reaches the server as the registry's own *UnavailableError, with the
// connection's text unchanged (wrapped or not); every other error passes
// as it is.
func TestUnavailableOf(t *testing.T) {
	down := &upstream.UnavailableError{Server: "fs", Reason: "circuit breaker open"}
	other := errors.New("connection reset")
	cases := []struct {
		name        string
		err         error
		unavailable bool
	}{
		{"no error", nil, false},
		{"another error", other, false},
		{"the connection's", down, true},
		{"the connection's, wrapped", fmt.Errorf("call tool x: %w", down), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := unavailableOf(tc.err)
			var ue *UnavailableError
			if errors.As(got, &ue) != tc.unavailable {
				t.Fatalf("unavailableOf(%v) = %#v, unavailable %v", tc.err, got, !tc.unavailable)
			}
			if !tc.unavailable {
				if got != tc.err {
					t.Fatalf("unavailableOf(%v) = %v, want it unchanged", tc.err, got)
				}
				return
			}
			if ue.Server != "fs" || ue.Reason != "circuit breaker open" || got.Error() != tc.err.Error() {
				t.Fatalf("unavailableOf(%v) = %+v (%q)", tc.err, ue, got)
			}
			if !errors.Is(got, down) {
				t.Fatalf("unavailableOf(%v) lost the connection's error", tc.err)
			}
		})
	}
	// Refused before a call (the catalog says the server is down), the
	// text is the connection's own wording.
	if got, want := (&UnavailableError{Server: "fs", Reason: "circuit breaker open"}).Error(), down.Error(); got != want {
		t.Fatalf("route-time text %q, the connection's %q", got, want)
	}
}

// TestStatusOf: the catalog's status names the connection's states with
// the same words (listings, metrics and MCPServer statuses show them) and
// keeps what the server shows.
func TestStatusOf(t *testing.T) {
	at := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   upstream.State
		want State
	}{
		{upstream.StateConnecting, StateConnecting},
		{upstream.StateConnected, StateConnected},
		{upstream.StateError, StateError},
	} {
		got := statusOf(upstream.Status{State: tc.in, Error: "e", Protocol: "2025-06-18", ListedAt: at, Detail: "d", Since: at})
		want := Status{State: tc.want, Error: "e", Protocol: "2025-06-18", ListedAt: at, Detail: "d"}
		if got != want {
			t.Errorf("statusOf(%s) = %+v, want %+v", tc.in, got, want)
		}
	}
}

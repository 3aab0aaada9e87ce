package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// The JSON-RPC error of a listing is what mcp-go's client made of it, so
// the handshake's fallbacks read it as before.
func TestAsMCPError(t *testing.T) {
	err := asMCPError(&RPCError{Code: mcp.UNSUPPORTED_PROTOCOL_VERSION, Message: "no", Data: json.RawMessage(`{"requested":"2026-07-28","supported":["2025-11-25"]}`)})
	var unsupported mcp.UnsupportedProtocolVersionError
	if !errors.As(err, &unsupported) || unsupported.Version != "2026-07-28" {
		t.Errorf("asMCPError = %#v, want an UnsupportedProtocolVersionError for 2026-07-28", err)
	}
	if err := asMCPError(&RPCError{Code: mcp.INVALID_PARAMS, Message: "bad"}); !errors.Is(err, mcp.ErrInvalidParams) {
		t.Errorf("asMCPError = %v, want mcp.ErrInvalidParams", err)
	}
}

type nopRelay struct{ name string }

func (nopRelay) Notify(string, map[string]any) {}
func (nopRelay) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return nil, nil
}
func (nopRelay) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return nil, nil
}
func (nopRelay) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return nil, nil
}

// A message outside any request's stream goes to the single request in
// flight, and to no one when there are several or when the one in flight
// takes nothing back: it must never reach a caller it may not belong to.
func TestRelaysOnlyRoutesAnUnambiguousMessage(t *testing.T) {
	var rs relays
	a, b := nopRelay{"a"}, nopRelay{"b"}
	if rs.only() != nil {
		t.Fatal("no request in flight, yet a relay")
	}
	ra := rs.begin(a)
	if rs.only() != Relay(a) {
		t.Fatal("one relayed request in flight: want its relay")
	}
	plain := rs.begin(nil)
	if rs.only() != nil {
		t.Fatal("two requests in flight (one plain): a message was routed")
	}
	rs.end(ra)
	if rs.only() != nil {
		t.Fatal("only a plain request in flight: a message was routed")
	}
	rs.end(plain)
	rb := rs.begin(b)
	if rs.only() != Relay(b) {
		t.Fatal("after the others ended, b is the only one")
	}
	rs.end(rb)

	hub, done := rs.mapProgress("srv", a, "caller-token")
	v, ok := rs.progress.Load(hub)
	if !ok || v.(*relayCall).token != "caller-token" || v.(*relayCall).relay != Relay(a) {
		t.Fatalf("progress token %s not mapped: %v", hub, v)
	}
	hub2, done2 := rs.mapProgress("srv", b, "caller-token")
	if hub2 == hub {
		t.Fatal("two callers with the same token got the same hub token")
	}
	done()
	done2()
	if _, ok := rs.progress.Load(hub); ok {
		t.Fatal("token mapping outlived the call")
	}
}

package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/upstream/streamhttp"
)

// The JSON-RPC error of a listing is what mcp-go's client made of it, so
// the handshake's fallbacks read it as before.
func TestAsMCPError(t *testing.T) {
	err := streamhttp.MCPError(&RPCError{Code: mcp.UNSUPPORTED_PROTOCOL_VERSION, Message: "no", Data: json.RawMessage(`{"requested":"2026-07-28","supported":["2025-11-25"]}`)})
	var unsupported mcp.UnsupportedProtocolVersionError
	if !errors.As(err, &unsupported) || unsupported.Version != "2026-07-28" {
		t.Errorf("asMCPError = %#v, want an UnsupportedProtocolVersionError for 2026-07-28", err)
	}
	if err := streamhttp.MCPError(&RPCError{Code: mcp.INVALID_PARAMS, Message: "bad"}); !errors.Is(err, mcp.ErrInvalidParams) {
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

package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/upstream/relay"
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

// notedRelay records the notifications it is asked to deliver.
type notedRelay struct {
	nopRelay
	got *[]string // method, then elicitationId
}

func (r notedRelay) Notify(method string, params map[string]any) {
	*r.got = append(*r.got, method+" "+fmt.Sprint(params["elicitationId"]))
}

// notifications/elicitation/complete reaches the caller its URL-mode
// elicitation went to, whether it came in elicitation/create or in the
// data of a -32042 error, and no other caller; one the hub never relayed
// goes to the single caller in flight or to no one.
func TestElicitationCompleteReachesItsCaller(t *testing.T) {
	complete := mcp.NewElicitationCompleteNotification
	for _, tc := range []struct {
		name    string
		prepare func(c *Client, a, b relay.Relay)
		id      string
		want    string // "a", "b" or "" (no one)
	}{
		{name: "elicitation/create of a", id: "e-a", want: "a", prepare: func(c *Client, a, b relay.Relay) {
			c.relays.Elicited("e-a", a)
			c.relays.Elicited("e-b", b)
		}},
		{name: "-32042 of b", id: "e-err", want: "b", prepare: func(c *Client, a, b relay.Relay) {
			c.relays.Elicited("e-a", a)
			c.elicitationsRequired(relay.With(context.Background(), b), fmt.Errorf("call: %w", &RPCError{
				Code: mcp.URL_ELICITATION_REQUIRED, Message: "needs auth",
				Data: json.RawMessage(`{"elicitations":[{"mode":"url","url":"https://x","message":"m","elicitationId":"e-err"}]}`),
			}))
		}},
		{name: "another error code is not remembered", id: "e-other", want: "", prepare: func(c *Client, a, b relay.Relay) {
			c.elicitationsRequired(relay.With(context.Background(), b), &RPCError{
				Code: mcp.INVALID_PARAMS, Data: json.RawMessage(`{"elicitations":[{"elicitationId":"e-other"}]}`),
			})
		}},
		{name: "unknown, one caller in flight", id: "e-?", want: "a", prepare: func(c *Client, a, b relay.Relay) {
			c.relays.Begin(a)
		}},
		{name: "unknown, two callers in flight", id: "e-?", want: "", prepare: func(c *Client, a, b relay.Relay) {
			c.relays.Begin(a)
			c.relays.Begin(b)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(config.ServerSpec{Name: "s", URL: "http://127.0.0.1:1/mcp", Transport: config.TransportStreamableHTTP}, Options{}, zerolog.Nop(), func() {})
			var gotA, gotB []string
			a, b := notedRelay{nopRelay{"a"}, &gotA}, notedRelay{nopRelay{"b"}, &gotB}
			tc.prepare(c, a, b)
			c.notification(complete(tc.id))
			want := map[string][]string{"a": nil, "b": nil}
			if tc.want != "" {
				want[tc.want] = []string{"notifications/elicitation/complete " + tc.id}
			}
			if !slices.Equal(gotA, want["a"]) || !slices.Equal(gotB, want["b"]) {
				t.Errorf("a got %q, b got %q; want %q", gotA, gotB, want)
			}
			// Delivered once: a second one has no caller left.
			gotA, gotB = nil, nil
			if tc.want != "" && !strings.HasPrefix(tc.name, "unknown") {
				c.notification(complete(tc.id))
				if len(gotA)+len(gotB) != 0 {
					t.Errorf("a second complete of %s was delivered: a %q, b %q", tc.id, gotA, gotB)
				}
			}
		})
	}
}

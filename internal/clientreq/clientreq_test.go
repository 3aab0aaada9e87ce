package clientreq

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// Each request goes to Call with its method and params, and the client's
// answer comes back decoded; sampling content becomes mcp-go's concrete
// type; Call's error is the request's.
func TestRequests(t *testing.T) {
	failed := errors.New("no stream")
	for _, tc := range []struct {
		name, method, answer string
		send                 func(Requests) (string, error)
		callErr              error
		want                 string
	}{
		{
			name: "sampling", method: "sampling/createMessage",
			answer: `{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}`,
			send: func(r Requests) (string, error) {
				res, err := r.RequestSampling(context.Background(), mcp.CreateMessageRequest{})
				if err != nil {
					return "", err
				}
				return res.Content.(mcp.TextContent).Text, nil
			},
			want: "hi",
		},
		{
			name: "roots", method: "roots/list", answer: `{"roots":[{"uri":"file:///w"}]}`,
			send: func(r Requests) (string, error) {
				res, err := r.ListRoots(context.Background(), mcp.ListRootsRequest{})
				if err != nil {
					return "", err
				}
				return res.Roots[0].URI, nil
			},
			want: "file:///w",
		},
		{
			name: "elicitation", method: "elicitation/create", answer: `{"action":"accept"}`,
			send: func(r Requests) (string, error) {
				res, err := r.RequestElicitation(context.Background(), mcp.ElicitationRequest{})
				if err != nil {
					return "", err
				}
				return string(res.Action), nil
			},
			want: "accept",
		},
		{
			name: "no stream", method: "roots/list", callErr: failed,
			send: func(r Requests) (string, error) {
				_, err := r.ListRoots(context.Background(), mcp.ListRootsRequest{})
				return "", err
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sent mcp.MCPMethod
			r := Requests{Call: func(_ context.Context, method mcp.MCPMethod, _, out any) error {
				sent = method
				if tc.callErr != nil {
					return tc.callErr
				}
				return json.Unmarshal([]byte(tc.answer), out)
			}}
			got, err := tc.send(r)
			if string(sent) != tc.method {
				t.Errorf("sent %q, want %q", sent, tc.method)
			}
			if !errors.Is(err, tc.callErr) || got != tc.want {
				t.Errorf("got %q, %v; want %q, %v", got, err, tc.want, tc.callErr)
			}
		})
	}
}

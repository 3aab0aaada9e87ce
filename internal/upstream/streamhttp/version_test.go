package streamhttp

import (
	"errors"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// TestVersionRefusal: an HTTP error whose body refuses the protocol
// revision is mcp-go's typed error (connect falls back to the initialize
// handshake on it alone, found by the conformance suite's server); any
// other body is not.
func TestVersionRefusal(t *testing.T) {
	refused := `{"jsonrpc":"2.0","id":"hub-1","error":{"code":-32022,"message":"protocol version \"2026-07-28\" is not supported by this server","data":{"supported":["2025-11-25","2025-06-18"],"requested":"2026-07-28"}}}`
	for _, tc := range []struct {
		name, body string
		want       bool
	}{
		{"refused revision", refused, true},
		{"another request's id", `{"jsonrpc":"2.0","id":"hub-2","error":{"code":-32022,"message":"x"}}`, false},
		{"another error", `{"jsonrpc":"2.0","id":"hub-1","error":{"code":-32600,"message":"bad request"}}`, false},
		{"not JSON", `Bad Request`, false},
		{"empty", ``, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := versionRefusal(new(jsonrpc.Reader), []byte(tc.body), "hub-1")
			var unsupported mcp.UnsupportedProtocolVersionError
			if got := errors.As(err, &unsupported); got != tc.want {
				t.Fatalf("versionRefusal = %v, want a refusal: %v", err, tc.want)
			}
			if tc.want && (unsupported.Version != "2026-07-28" || !slices.Equal(unsupported.Supported, []string{"2025-11-25", "2025-06-18"})) {
				t.Fatalf("refusal %+v", unsupported)
			}
		})
	}
}

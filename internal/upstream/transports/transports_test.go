package transports

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/upstream/credentials"
)

// Each transport the hub speaks is made; one it does not is refused by
// name, before anything is dialled.
func TestNewMakesEachTransport(t *testing.T) {
	for _, tc := range []struct {
		spec    config.ServerSpec
		wantErr string
	}{
		{config.ServerSpec{Name: "h", URL: "http://127.0.0.1:1/mcp", Transport: config.TransportStreamableHTTP}, ""},
		{config.ServerSpec{Name: "s", URL: "http://127.0.0.1:1/sse", Transport: config.TransportSSE}, ""},
		{config.ServerSpec{Name: "w", URL: "ws://127.0.0.1:1/ws", Transport: config.TransportWebSocket}, ""},
		{config.ServerSpec{Name: "p", URL: "http://127.0.0.1:1/mcp", Transport: "carrier-pigeon"}, `transport "carrier-pigeon" is not supported`},
	} {
		cfg := Config{Spec: tc.spec, MaxMessageBytes: 1 << 20, Credentials: credentials.New(tc.spec, nil), Log: zerolog.Nop()}
		tr, err := cfg.New(false, func(error) {})
		switch {
		case tc.wantErr == "" && (err != nil || tr == nil):
			t.Errorf("%s: New = %v, %v", tc.spec.Transport, tr, err)
		case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
			t.Errorf("%s: New = %v, want %q", tc.spec.Transport, err, tc.wantErr)
		}
		if tr != nil {
			_ = tr.Close()
		}
	}
}

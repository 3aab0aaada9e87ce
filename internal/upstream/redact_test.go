package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/upstream/relay"
)

// The credentials of the test upstreams. Each must never appear in a
// status, an error or a log line.
const (
	testToken  = "s3cr3t-bearer-T0KEN"
	testAPIKey = "k3y-in-a-header-42"
	testQuery  = "q-s3cr3t-in-url-7"
	testPass   = "pa55w0rd-in-userinfo"
)

var testSecrets = []string{testToken, testAPIKey, testQuery, testPass}

// lockedBuffer is a log sink shared by the client's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func assertNoSecret(t *testing.T, what, text string) {
	t.Helper()
	for _, s := range testSecrets {
		if strings.Contains(text, s) {
			t.Errorf("%s leaks %q: %s", what, s, text)
		}
	}
}

// echoHeaders is what a server that reflects its request writes back.
func echoHeaders(r *http.Request) string {
	return "bad token " + r.Header.Get("Authorization") + " key " + r.Header.Get("X-Api-Key") + " query " + r.URL.RawQuery
}

func secretSpec(name, rawURL string) config.ServerSpec {
	return config.ServerSpec{
		Name: name, URL: rawURL, Transport: config.TransportStreamableHTTP,
		BearerToken: config.Secret(testToken),
		Headers:     map[string]string{"X-Api-Key": testAPIKey, "Accept-Language": "en"},
	}
}

// A server that answers the handshake with an error body echoing the
// request: the status (as /api/mcp/tools shows it) and the log name the
// failure without any credential.
func TestStatusErrorRedacted(t *testing.T) {
	ts := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":"`+echoHeaders(r)+`"}`)
	}))
	u := strings.Replace(ts.URL, "http://", "http://hub:"+testPass+"@", 1) + "/mcp?token=" + testQuery
	var logs lockedBuffer
	c := New(secretSpec("echoer", u), Options{ConnectTimeout: time.Second, BackoffMin: time.Hour, BackoffMax: time.Hour},
		zerolog.New(&logs).Level(zerolog.DebugLevel), func() {})
	c.Start(context.Background())
	t.Cleanup(c.Stop)
	st := waitState(t, c, StateError)
	assertNoSecret(t, "status error", st.Error)
	assertNoSecret(t, "status detail", st.Detail)
	if st.Error != "initialize: HTTP 500 Internal Server Error (text/plain)" || !strings.Contains(st.Detail, "bad token Bearer [redacted]") {
		t.Errorf("status error %q (detail %q) does not say what failed", st.Error, st.Detail)
	}
	err := c.Unavailable()
	if err == nil {
		t.Fatal("Unavailable() = nil for a server in error")
	}
	assertNoSecret(t, "unavailable error", err.Error())
	assertNoSecret(t, "log", logs.String())
	if !strings.Contains(logs.String(), "connect failed") {
		t.Errorf("log has no connect failure: %s", logs.String())
	}
}

// A server that works but answers tools/call with an HTTP error, or a
// JSON-RPC error, echoing the request: the caller's error carries no
// credential, on the direct and on the relayed path.
func TestCallErrorRedacted(t *testing.T) {
	inner := mcpserver.NewStreamableHTTPServer(testServer("up", nil))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				var req struct {
					ID     json.RawMessage `json:"id"`
					Params struct {
						Name string `json:"name"`
					} `json:"params"`
				}
				_ = json.Unmarshal(body, &req)
				switch req.Params.Name {
				case "http":
					w.WriteHeader(http.StatusForbidden)
					_, _ = io.WriteString(w, echoHeaders(r))
				case "rpc":
					w.Header().Set("Content-Type", "application/json")
					msg, _ := json.Marshal(echoHeaders(r))
					_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"error":{"code":-32001,"message":`+string(msg)+`,"data":{"echo":`+string(msg)+`}}}`)
				}
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		inner.ServeHTTP(w, r)
	})
	u := serve(t, h).URL + "/mcp?token=" + testQuery
	var logs lockedBuffer
	spec := secretSpec("echoer", u)
	c := New(spec, Options{ConnectTimeout: 5 * time.Second, Timeout: 5 * time.Second, BackoffMin: 10 * time.Millisecond, BackoffMax: 10 * time.Millisecond, BreakerFailures: 100},
		zerolog.New(&logs).Level(zerolog.DebugLevel), func() {})
	c.Start(context.Background())
	t.Cleanup(c.Stop)
	waitState(t, c, StateConnected)

	for _, relayed := range []bool{false, true} {
		for _, tool := range []string{"http", "rpc"} {
			ctx := context.Background()
			if relayed {
				ctx = relay.With(ctx, nopRelay{"caller"})
			}
			_, err := callTool(ctx, c, tool, "x")
			if err == nil {
				t.Fatalf("%s (relayed %v): call succeeded", tool, relayed)
			}
			assertNoSecret(t, tool+" call error", err.Error())
			if !strings.Contains(err.Error(), "[redacted]") {
				t.Errorf("%s (relayed %v): error %q lost the server's message", tool, relayed, err)
			}
			var rpcErr *RPCError
			if errors.As(err, &rpcErr) {
				assertNoSecret(t, tool+" JSON-RPC error", rpcErr.Message+string(rpcErr.Data))
			} else if tool == "rpc" {
				t.Errorf("rpc (relayed %v): error %v is not the upstream's JSON-RPC error", relayed, err)
			}
		}
	}
	assertNoSecret(t, "log", logs.String())
}

// A stdio child that prints the token of its environment to stderr: the
// hub's log gets the line without the token.
func TestStdioStderrRedacted(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	spec := config.ServerSpec{Name: "child", Command: self, Transport: config.TransportStdio,
		Env: map[string]string{stdioServerEnv: "1", stdioTokenEnv: testToken}}
	c := New(spec, Options{ConnectTimeout: 10 * time.Second, BackoffMin: time.Hour, BackoffMax: time.Hour},
		zerolog.New(&logs).Level(zerolog.DebugLevel), func() {})
	c.Start(context.Background())
	t.Cleanup(c.Stop)
	waitState(t, c, StateConnected)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "starting with token") {
		if time.Now().After(deadline) {
			t.Fatalf("the child's stderr never reached the log: %s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	assertNoSecret(t, "log", logs.String())
	if !strings.Contains(logs.String(), "starting with token [redacted]") {
		t.Errorf("stderr line not redacted in place: %s", logs.String())
	}
}

// An upstream that redirects to another port of 127.0.0.1 (another origin)
// must not get the credentials there; a redirect within its own origin
// still connects.
func TestRedirectKeepsCredentialsAtTheirOrigin(t *testing.T) {
	var mu sync.Mutex
	var stolen []string
	other := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		stolen = append(stolen, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Api-Key"))
		mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
	}))
	inner := mcpserver.NewStreamableHTTPServer(testServer("up", nil))
	mux := http.NewServeMux()
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/mcp", http.StatusTemporaryRedirect)
	})
	mux.Handle("/mcp", inner)
	base := serve(t, mux).URL

	// A shared client with Go's own redirect policy: the client must guard
	// its credentials whatever it is given.
	shared := &http.Client{}
	opts := Options{ConnectTimeout: 5 * time.Second, BackoffMin: time.Hour, BackoffMax: time.Hour, HTTPClient: shared}

	away := New(secretSpec("away", base+"/away"), opts, zerolog.Nop(), func() {})
	away.Start(context.Background())
	t.Cleanup(away.Stop)
	st := waitState(t, away, StateError)
	mu.Lock()
	for _, h := range stolen {
		if strings.Contains(h, testToken) || strings.Contains(h, testAPIKey) {
			t.Errorf("the other origin got credentials: %s", h)
		}
	}
	mu.Unlock()
	if !strings.Contains(st.Error, "another origin") {
		t.Errorf("status error %q does not say why the redirect failed", st.Error)
	}

	moved := startClient(t, secretSpec("moved", base+"/moved"), opts)
	if got, err := callTool(context.Background(), moved, "echo", "same origin"); err != nil || got != "up:same origin" {
		t.Fatalf("call through a same-origin redirect = %q, %v", got, err)
	}
}

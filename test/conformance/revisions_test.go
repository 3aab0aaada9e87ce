package conformance

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"testing"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// TestHubBySpecVersion runs, through the hub, the scenarios the suite names
// for each revision it knows (`--spec-version`; 0.1.16 tags server
// scenarios with 2025-06-18 and 2025-11-25 only: none for 2025-03-26, and
// the draft names none), with the suite's caller pinned to that revision.
// The suite's client is the TypeScript SDK's, which always asks for its
// newest revision (2025-11-25); a proxy in front of the hub asks for the
// pinned one in its place, and the SDK then speaks what the hub answered
// (the negotiated revision is checked). Every scenario of a revision must
// pass through the hub (go-sdk's everything-server in its stateful mode
// passes all of them directly, TestEverythingServerDirect).
func TestHubBySpecVersion(t *testing.T) {
	upstream := EverythingServer(t, false)
	hub := hubtest.StartHub(t, hubtest.HubOptions{Bin: hubtest.HubBinary(t), Config: oneUpstream(upstream), LogLevel: "info", Wait: hubtest.Connected})
	for _, tc := range []struct {
		revision string
		// scenarios is how many the suite names for the revision.
		scenarios int
	}{
		{"2025-06-18", 26},
		{"2025-11-25", 32},
	} {
		t.Run(tc.revision, func(t *testing.T) {
			want := ScenariosFor(t, tc.revision)
			if len(want) != tc.scenarios {
				t.Errorf("the suite names %d scenarios for %s, want %d: %v", len(want), tc.revision, tc.scenarios, want)
			}
			pin := pinRevision(t, hub.MCPURL(), tc.revision)
			results := RunSuite(t, pin.url, "all", "--spec-version", tc.revision)
			if got := Names(results); !slices.Equal(got, sorted(want)) {
				t.Errorf("ran %v, want %v", got, sorted(want))
			}
			passed, failed := Passing(results)
			for _, name := range failed {
				t.Errorf("%s fails through the hub at %s:\n%s", name, tc.revision, indent(results[name].Details))
			}
			if got := pin.negotiated(); len(got) == 0 || slices.ContainsFunc(got, func(v string) bool { return v != tc.revision }) {
				t.Errorf("the hub answered initialize with %v, want only %s", got, tc.revision)
			}
			t.Logf("%s: %d/%d scenarios passed through the hub, %d sessions at %s", tc.revision, len(passed), len(results), len(pin.negotiated()), tc.revision)
		})
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// revisionPin is a reverse proxy that asks for its revision in every
// initialize it passes on, and records the revision each was answered with.
type revisionPin struct {
	url string
	mu  sync.Mutex
	got []string
}

func (p *revisionPin) negotiated() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.got)
}

// pinRevision starts a revisionPin for target on a free 127.0.0.1 port.
func pinRevision(t *testing.T, target, revision string) *revisionPin {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &revisionPin{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: u.Scheme, Host: u.Host})
			r.Out.URL.Path = u.Path
			// The Host the suite sent, which dns-rebinding-protection
			// sets to a foreign one on purpose.
			r.Out.Host = r.In.Host
			body, isInit := pinnedInitialize(r.In, revision)
			if body != nil {
				r.Out.Body = io.NopCloser(bytes.NewReader(body))
				r.Out.ContentLength = int64(len(body))
			}
			if isInit {
				r.Out.Header.Set("X-Pin-Initialize", "1")
			}
		},
		ModifyResponse: func(resp *http.Response) error {
			if resp.Request.Header.Get("X-Pin-Initialize") == "" {
				return nil
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			resp.Body = io.NopCloser(bytes.NewReader(body))
			// An initialize the hub refused (a foreign Host) has no result.
			if v := answeredRevision(body); v != "" {
				p.mu.Lock()
				p.got = append(p.got, v)
				p.mu.Unlock()
			}
			return nil
		},
		FlushInterval: -1, // SSE streams pass as they come
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: rp}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	p.url = "http://" + ln.Addr().String() + u.Path
	return p
}

// pinnedInitialize reads r's body (leaving it readable) and, for an
// initialize request, returns the body with revision as its
// protocolVersion; body is the unchanged copy otherwise (nil when there
// was none).
func pinnedInitialize(r *http.Request, revision string) (body []byte, isInit bool) {
	if r.Body == nil || r.Method != http.MethodPost {
		return nil, false
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, false
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(raw, &msg) != nil || string(msg["method"]) != `"initialize"` {
		return raw, false
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(msg["params"], &params) != nil {
		return raw, false
	}
	params["protocolVersion"], _ = json.Marshal(revision)
	msg["params"], _ = json.Marshal(params)
	out, _ := json.Marshal(msg)
	return out, true
}

// answeredRevision is the protocolVersion of an initialize result, sent as
// JSON or as the data of an SSE event.
func answeredRevision(body []byte) string {
	if i := bytes.Index(body, []byte("data: ")); i >= 0 && !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		body = body[i+len("data: "):]
		if j := bytes.IndexByte(body, '\n'); j >= 0 {
			body = body[:j]
		}
	}
	var out struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if json.Unmarshal(body, &out) != nil {
		return "(unreadable: " + string(body) + ")"
	}
	return out.Result.ProtocolVersion // "" for an error
}

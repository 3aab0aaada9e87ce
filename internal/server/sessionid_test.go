package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

func TestSessionIDs(t *testing.T) {
	anonymous := callers.AnonymousOnly(autonomy.Full)
	as := func(remote, token string, f sessionFlags) server.SessionIdManager {
		r := &http.Request{RemoteAddr: remote, Header: http.Header{}}
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		auth := anonymous
		if token != "" {
			auth = tokens("ci")
		}
		c, err := auth.Authenticate(r)
		if err != nil {
			t.Fatal(err.Msg)
		}
		return sessionIDs{}.ResolveSessionIdManager(r.WithContext(withInitFlags(callers.With(context.Background(), c), f)))
	}
	relayed := as("10.0.0.7:1", "", sessionFlags{relayed: true})
	plain := as("10.0.0.7:2", "", sessionFlags{})
	other := as("10.0.0.8:1", "", sessionFlags{})
	ci := as("10.0.0.7:1", "tok-ci", sessionFlags{})
	r1, r2, p, o, c := relayed.Generate(), relayed.Generate(), plain.Generate(), other.Generate(), ci.Generate()
	if r1 == r2 || !strings.HasPrefix(r1, "mh2-r-") || !strings.HasPrefix(p, "mh2-p-") || len(r1) != sessionIDLen {
		t.Fatalf("ids %q %q %q", r1, r2, p)
	}
	// The binding is the caller's: the same for one address (any port),
	// another for another address or a token caller.
	_, b1, _ := splitSessionID(r1)
	_, bp, _ := splitSessionID(p)
	_, bo, _ := splitSessionID(o)
	_, bc, _ := splitSessionID(c)
	if b1 != bp || b1 == bo || b1 == bc {
		t.Fatalf("bindings: 10.0.0.7 %q and %q, 10.0.0.8 %q, ci %q", b1, bp, bo, bc)
	}
	hexOf := func(n int) string { return strings.Repeat("a", n) }
	for _, tc := range []struct {
		id      string
		valid   bool
		relayed bool
	}{
		{r1, true, true},
		{p, true, false},
		{"mh2-p-" + hexOf(16) + "-" + hexOf(32), true, false}, // well formed: any replica serves it
		// Ids without a binding (hubs before this one, mcp-go's own) are
		// unknown: their clients initialize again.
		{"mh1-p-" + hexOf(32), false, false},
		{"mcp-session-6f1d4c9e-1f0e-4c44-9a55-b3a5e0a7f001", false, false},
		{"mh2-x-" + hexOf(16) + "-" + hexOf(32), false, false},
		{"mh2-r-" + hexOf(16) + "-" + strings.Repeat("z", 32), false, false},
		{"mh2-r-" + strings.Repeat("Z", 16) + "-" + hexOf(32), false, false},
		{"mh2-r-" + hexOf(16) + "_" + hexOf(32), false, false},
		{"mh2-r-" + hexOf(16) + "-" + hexOf(31), false, false},
		{"mh2-r-abc", false, false},
		{"", false, false},
		{"garbage", false, false},
	} {
		// Any replica validates any well-formed id, whoever minted it.
		_, err := sessionIDs{}.ResolveSessionIdManager(nil).Validate(tc.id)
		if (err == nil) != tc.valid {
			t.Errorf("Validate(%q) = %v, want valid %v", tc.id, err, tc.valid)
		}
		f, _ := parseSessionID(tc.id)
		if f.relayed != tc.relayed {
			t.Errorf("parseSessionID(%q).relayed = %v, want %v", tc.id, f.relayed, tc.relayed)
		}
	}
}

// TestOwnsSession: an id is its creator's only, and checking it allocates
// nothing (it runs on the fast path).
func TestOwnsSession(t *testing.T) {
	mint := func(c callers.Caller) string {
		r := (&http.Request{}).WithContext(callers.With(context.Background(), c))
		return sessionIDs{}.ResolveSessionIdManager(r).Generate()
	}
	a := callers.Anonymous("10.0.0.7:1234", autonomy.Manual)
	aOtherPort := callers.Anonymous("10.0.0.7:999", autonomy.Manual)
	b := callers.Anonymous("10.0.0.8:1234", autonomy.Manual)
	v6 := callers.Anonymous("[2001:db8:1:2::5]:80", autonomy.Manual)
	v6Same64 := callers.Anonymous("[2001:db8:1:2::9]:81", autonomy.Manual)
	ops := callers.Caller{Name: "ops", Admin: true}
	bot := callers.Caller{Name: "bot"}
	for _, tc := range []struct {
		name      string
		owner, by callers.Caller
		want      bool
	}{
		{"same address", a, aOtherPort, true},
		{"another address", a, b, false},
		{"same /64", v6, v6Same64, true},
		{"token caller", ops, ops, true},
		{"another token caller", ops, bot, false},
		{"anonymous with a token caller's id", ops, a, false},
		{"token caller with an anonymous id", a, ops, false},
	} {
		if got := ownsSession(tc.by, mint(tc.owner)); got != tc.want {
			t.Errorf("%s: ownsSession = %v, want %v", tc.name, got, tc.want)
		}
	}
	id := mint(a)
	for _, c := range []callers.Caller{a, ops} {
		if n := testing.AllocsPerRun(100, func() { ownsSession(c, id) }); n != 0 {
			t.Errorf("ownsSession(%s) allocates %v times", c.Name, n)
		}
	}
}

func TestInitializeFlags(t *testing.T) {
	for body, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"sampling":{}}}}`:    true,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"elicitation":{}}}}`: true,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"roots":{}}}}`:       true,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`:                 false,
	} {
		msg, err := jsonrpc.Parse([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if f := initializeFlags(msg); f.relayed != want {
			t.Errorf("initializeFlags(%s) = %+v, want relayed %v", body, f, want)
		}
	}
}

// A session whose GET stream closed is let go after the grace period (its
// mcp-go registration is dropped), unless a stream comes back in time; its
// id stays valid for the next request.
func TestClosedStreamReleasesSession(t *testing.T) {
	a := newFakeUpstream(t, "alpha")
	h := newTestHub(t, []config.ServerSpec{a.spec()})
	h.waitConnected("alpha")
	h.srv.streams.mu.Lock()
	h.srv.streams.grace = 50 * time.Millisecond
	h.srv.streams.mu.Unlock()
	registered := func(id string) bool {
		h.srv.streams.mu.Lock()
		defer h.srv.streams.mu.Unlock()
		_, ok := h.srv.streams.sessions[id]
		return ok
	}
	sid := h.initializeSession(t)
	openStream := func() func() {
		ctx, stop := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.url("/mcp"), nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "stream held", func() bool { _, ok := h.srv.streams.session(sid); return ok })
		return func() { stop(); resp.Body.Close() }
	}
	closeIt := openStream()
	closeIt()
	reopen := openStream() // back within the grace period: kept
	time.Sleep(150 * time.Millisecond)
	mustf(t, registered(sid), "the session was let go while its stream was open")
	reopen()
	waitFor(t, "session let go after its stream closed", func() bool { return !registered(sid) })
	// The id is still good.
	mustf(t, len(toolNamesRaw(t, h, sid)) > 0, "no tools for the session after it was let go")
}

func toolNamesRaw(t *testing.T, h *testHub, sid string) []any {
	req, _ := http.NewRequest(http.MethodPost, h.url("/mcp"), strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result struct {
			Tools []any `json:"tools"`
		} `json:"result"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return out.Result.Tools
}

// BenchmarkOwnsSession is what checking a request's session id against its
// caller costs every request that carries one (the fast path's included).
func BenchmarkOwnsSession(b *testing.B) {
	for _, c := range []callers.Caller{{Name: "ci"}, callers.Anonymous("10.0.0.7:1234", autonomy.Manual), callers.Anonymous("[2001:db8:1:2::5]:80", autonomy.Manual)} {
		r := (&http.Request{}).WithContext(callers.With(context.Background(), c))
		id := sessionIDs{}.ResolveSessionIdManager(r).Generate()
		b.Run(c.Key(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !ownsSession(c, id) {
					b.Fatal("not the owner")
				}
			}
		})
	}
}

package peers

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
)

const maxBody = 1 << 20

// Only a configured peer may ask this replica to send a server request to
// one of its clients; anyone else is refused before the body is read.
func TestServeOnlyForPeers(t *testing.T) {
	for _, tc := range []struct {
		peers  []string
		remote string
		want   int
	}{
		{nil, "127.0.0.1:5000", http.StatusForbidden},
		{[]string{"10.1.2.3:8080"}, "127.0.0.1:5000", http.StatusForbidden},
		{[]string{"127.0.0.1:8080"}, "127.0.0.1:5000", http.StatusNotFound}, // a peer; no stream for the session here
	} {
		sent := false
		serve := New(tc.peers, maxBody).Serve(func(context.Context, string, string, json.RawMessage) (any, error) {
			sent = true
			return nil, ErrNoStream
		})
		r := httptest.NewRequest(http.MethodPost, "http://hub"+RequestPath, strings.NewReader(`{"session":"s","method":"roots/list"}`))
		r.RemoteAddr = tc.remote
		rec := httptest.NewRecorder()
		serve(rec, r)
		if rec.Code != tc.want || sent != (tc.want == http.StatusNotFound) {
			t.Errorf("peers %v, remote %s: status %d (sent %v), want %d (%s)", tc.peers, tc.remote, rec.Code, sent, tc.want, rec.Body.String())
		}
	}
}

// TestClientOf: a client's answer a peer passes on counts as from the
// client's address (its anonymous session is bound to it), and only when a
// peer passes it on.
func TestClientOf(t *testing.T) {
	p := New([]string{"10.0.0.5:8080"}, maxBody)
	auth := callers.AnonymousOnly(autonomy.Full)
	for _, tc := range []struct {
		name, remote, method string
		forwarded            bool
		want                 string
	}{
		{"passed on by a peer", "10.0.0.5:40000", http.MethodPost, true, "anonymous@10.9.9.9"},
		{"the header from anyone else", "10.0.0.6:40000", http.MethodPost, true, "anonymous@10.0.0.6"},
		{"a peer's own request", "10.0.0.5:40000", http.MethodPost, false, "anonymous@10.0.0.5"},
		{"not a POST", "10.0.0.5:40000", http.MethodGet, true, "anonymous@10.0.0.5"},
		{"a session's DELETE passed on by a peer", "10.0.0.5:40000", http.MethodDelete, true, "anonymous@10.9.9.9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := http.NewRequest(tc.method, "http://hub/mcp", nil)
			r.RemoteAddr = tc.remote
			r.Header.Set(forwardedForHeader, "10.9.9.9:5555")
			if tc.forwarded {
				r.Header.Set(forwardedHeader, "1")
			}
			c, refused := auth.Authenticate(p.ClientOf(r))
			if refused != nil {
				t.Fatal(refused.Msg)
			}
			if got := c.Key(); got != tc.want {
				t.Errorf("caller %q, want %q", got, tc.want)
			}
		})
	}
	if (*Peers)(nil).ClientOf(&http.Request{Method: http.MethodPost, RemoteAddr: "10.0.0.5:1"}).RemoteAddr != "10.0.0.5:1" {
		t.Error("a hub without peers believed a forwarded address")
	}
}

// replica is a peer on 127.0.0.1: it holds the stream of session "mine"
// and takes the answers whose Mcp-Session-Id is "mine".
func replica(t *testing.T, asked *atomic.Int32) string {
	t.Helper()
	p := New([]string{"127.0.0.1:1"}, maxBody) // every 127.0.0.1 address is a peer
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+RequestPath, p.Serve(func(_ context.Context, session, method string, params json.RawMessage) (any, error) {
		asked.Add(1)
		if session != "mine" {
			return nil, ErrNoStream
		}
		return map[string]any{"method": method, "params": params}, nil
	}))
	mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("Mcp-Session-Id") == "mine" && r.Header.Get(forwardedHeader) == "1" &&
			r.Header.Get(forwardedForHeader) == "10.9.9.9:5555" && string(body) == `{"answer":1}` {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.WriteHeader(http.StatusNotFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestAskAndPassOn: a request reaches the peer holding the session's
// stream, whichever it is; an answer reaches the peer waiting for it,
// once; with no such peer both say so.
func TestAskAndPassOn(t *testing.T) {
	var asked atomic.Int32
	p := New([]string{replica(t, &asked), replica(t, &asked)}, maxBody)
	ctx := context.Background()

	var out struct {
		Method string
		Params struct{ X int }
	}
	if err := p.Ask(ctx, "mine", "roots/list", map[string]int{"x": 7}, &out); err != nil || out.Method != "roots/list" || out.Params.X != 7 {
		t.Fatalf("Ask: %v, %+v", err, out)
	}
	if err := p.Ask(ctx, "theirs", "roots/list", struct{}{}, &out); !errors.Is(err, ErrNoHolder) {
		t.Fatalf("Ask for a session no peer holds: %v", err)
	}

	answer := func(session string, forwarded bool) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.RemoteAddr = "10.9.9.9:5555"
		r.Header.Set("Mcp-Session-Id", session)
		if forwarded {
			r.Header.Set(forwardedHeader, "1")
		}
		return r
	}
	body := []byte(`{"answer":1}`)
	if !p.PassOn(answer("mine", false), body, "") {
		t.Fatal("no peer took the answer it waits for")
	}
	if p.PassOn(answer("theirs", false), body, "") {
		t.Fatal("a peer took an answer it does not wait for")
	}
	asked.Store(0)
	if p.PassOn(answer("mine", true), body, "") || asked.Load() != 0 {
		t.Fatalf("an answer a peer passed on was passed on again (%d peers asked)", asked.Load())
	}
	if (*Peers)(nil).PassOn(answer("mine", false), body, "") {
		t.Fatal("a hub without peers passed an answer on")
	}
}

// fakeDNS answers lookups from a map that a test changes; a host it does
// not hold fails, as a DNS server out of reach does.
type fakeDNS struct {
	mu    sync.Mutex
	hosts map[string][]string
}

func (d *fakeDNS) set(host string, ips ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ips == nil {
		delete(d.hosts, host)
		return
	}
	d.hosts[host] = ips
}

func (d *fakeDNS) lookup(_ context.Context, host string) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ips, ok := d.hosts[host]; ok {
		return ips, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// TestCountReplicas: the replicas are the distinct targets the addresses
// resolve to (a headless Service's every ready pod, this one included),
// at least 1; an address that stops resolving keeps what it last resolved
// to, so a replica cut off from DNS does not take the whole budget.
func TestCountReplicas(t *testing.T) {
	dns := &fakeDNS{hosts: map[string][]string{}}
	steps := []struct {
		name    string
		change  func()
		want    int
		wantErr bool
	}{
		{"nothing resolves yet", func() {}, 1, true},
		{"three pods ready", func() { dns.set("hub-headless", "10.0.0.1", "10.0.0.2", "10.0.0.3") }, 3, false},
		{"one pod gone", func() { dns.set("hub-headless", "10.0.0.1", "10.0.0.3") }, 2, false},
		{"DNS out of reach: the last count stays", func() { dns.set("hub-headless") }, 2, true},
		{"back, four pods", func() { dns.set("hub-headless", "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4") }, 4, false},
	}
	p := New([]string{"hub-headless:8080"}, maxBody)
	p.lookupHost = dns.lookup
	if got := p.Replicas(); got != 1 {
		t.Fatalf("before a count: %d replicas, want 1", got)
	}
	for _, s := range steps {
		s.change()
		n, err := p.CountReplicas(context.Background())
		if n != s.want || p.Replicas() != s.want || (err != nil) != s.wantErr {
			t.Fatalf("%s: %d replicas (Replicas %d), error %v; want %d, error %v", s.name, n, p.Replicas(), err, s.want, s.wantErr)
		}
	}

	// A list of host:port names each replica once, itself included;
	// names that resolve to one target count it once.
	p = New([]string{"127.0.0.1:9001", "127.0.0.1:9002", "localhost:9001", "127.0.0.1:9003"}, maxBody)
	p.lookupHost = func(_ context.Context, host string) ([]string, error) {
		if host == "localhost" {
			return []string{"127.0.0.1"}, nil
		}
		return []string{host}, nil
	}
	if n, err := p.CountReplicas(context.Background()); n != 3 || err != nil {
		t.Fatalf("three listed replicas: %d, %v", n, err)
	}
	var none *Peers
	if none.Replicas() != 1 {
		t.Fatal("no peers: not one replica")
	}
	none.WatchReplicas(context.Background(), nil) // returns at once
}

// TestWatchReplicas: the watch counts at once, reports changes and the
// start of a failure (not every failed count), and stops with its context.
func TestWatchReplicas(t *testing.T) {
	dns := &fakeDNS{hosts: map[string][]string{"hub": {"10.0.0.1", "10.0.0.2"}}}
	p := New([]string{"hub:8080"}, maxBody)
	p.lookupHost = dns.lookup
	ctx, cancel := context.WithCancel(context.Background())
	reports := make(chan int, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.WatchReplicas(ctx, func(n int, err error) { reports <- n })
	}()
	select {
	case n := <-reports:
		if n != 2 || p.Replicas() != 2 {
			t.Fatalf("first report %d, Replicas %d; want 2", n, p.Replicas())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no first count")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch outlived its context")
	}
}

// TestForward: a request of another replica's task reaches the peer whose
// it is (the others answer NotMine), with the client's credentials;
// ForwardAll gathers every peer's part; neither passes a request a peer
// passed on again.
func TestForward(t *testing.T) {
	var asked atomic.Int32
	peer := func(name string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			asked.Add(1)
			b, _ := io.ReadAll(r.Body)
			if r.Header.Get("Authorization") != "Bearer t" || !PassedOn(r) {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			if string(b) != "list" && string(b) != name {
				w.WriteHeader(NotMine)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`"` + name + `"`))
		}))
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
	}
	p := New([]string{peer("a"), peer("b")}, maxBody)
	req := func(forwarded bool) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Header.Set("Authorization", "Bearer t")
		if forwarded {
			r.Header.Set(forwardedHeader, "1")
		}
		return r
	}
	for _, tc := range []struct {
		body   string
		want   string
		wantOK bool
	}{{"a", `"a"`, true}, {"b", `"b"`, true}, {"gone", "", false}} {
		status, ct, answer, ok := p.Forward(req(false), []byte(tc.body), "")
		if ok != tc.wantOK || string(answer) != tc.want || (ok && (status != http.StatusOK || ct != "application/json")) {
			t.Errorf("Forward(%s) = %d %q %q %v; want %q %v", tc.body, status, ct, answer, ok, tc.want, tc.wantOK)
		}
	}
	all := p.ForwardAll(req(false), []byte("list"))
	if len(all) != 2 || string(all[0])+string(all[1]) != `"a""b"` {
		t.Errorf("ForwardAll = %q; want both peers' parts", all)
	}
	asked.Store(0)
	if _, _, _, ok := p.Forward(req(true), []byte("a"), ""); ok || p.ForwardAll(req(true), []byte("list")) != nil || asked.Load() != 0 {
		t.Errorf("a request a peer passed on was passed on again (%d peers asked)", asked.Load())
	}
	if _, _, _, ok := (*Peers)(nil).Forward(req(false), []byte("a"), ""); ok {
		t.Error("a hub without peers forwarded a request")
	}
}

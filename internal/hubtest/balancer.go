package hubtest

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Balancer is a round-robin reverse proxy on 127.0.0.1 with no affinity,
// as a plain Kubernetes Service is (WebSocket upgrades included): the
// suites that run replicas put it in front of them. It counts the
// requests each replica got, and the answers 404 (a session a replica did
// not know).
type Balancer struct {
	// Base is where it listens: http://127.0.0.1:port.
	Base string

	next      atomic.Uint64
	hits      []atomic.Int64
	transport *http.Transport
	notFound  atomic.Int64

	mu           sync.Mutex
	notFoundWhat []string // the first 404s: request, replica and body
}

// StartBalancer starts a Balancer over backends (base URLs; a trailing
// /mcp is dropped), stopped with t.
func StartBalancer(t testing.TB, backends []string) *Balancer {
	t.Helper()
	// Its own transport: nothing else in the test shares (or closes) the
	// balancer's connections to the replicas.
	b := &Balancer{hits: make([]atomic.Int64, len(backends)), transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	targets := make([]*url.URL, len(backends))
	for i, s := range backends {
		u, err := url.Parse(strings.TrimSuffix(s, "/mcp"))
		if err != nil {
			t.Fatal(err)
		}
		targets[i] = u
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			i := int(b.next.Add(1)-1) % len(targets)
			b.hits[i].Add(1)
			r.SetURL(targets[i])
			r.Out.Host = r.In.Host // keep the client's Host, as a Service does
		},
		Transport:      b.transport,
		FlushInterval:  -1,
		ModifyResponse: b.noteNotFound,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: FullDuplex(proxy), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	b.Base = "http://" + ln.Addr().String()
	return b
}

// noteNotFound counts an answer 404 and keeps the first few.
func (b *Balancer) noteNotFound(resp *http.Response) error {
	if resp.StatusCode != http.StatusNotFound {
		return nil
	}
	b.notFound.Add(1)
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.notFoundWhat) < 5 {
		b.notFoundWhat = append(b.notFoundWhat, fmt.Sprintf("%s %s session %q at %s: %s", resp.Request.Method,
			resp.Request.URL.Path, resp.Request.Header.Get("Mcp-Session-Id"), resp.Request.URL.Host, bytes.TrimSpace(body)))
	}
	return nil
}

// Spread is how many requests each backend got.
func (b *Balancer) Spread() []int64 {
	out := make([]int64, len(b.hits))
	for i := range b.hits {
		out[i] = b.hits[i].Load()
	}
	return out
}

// NotFound is how many answers were 404, and the first few of them.
func (b *Balancer) NotFound() (n int64, first []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.notFound.Load(), append([]string(nil), b.notFoundWhat...)
}

// CloseIdleConnections closes the balancer's idle connections to the
// backends.
func (b *Balancer) CloseIdleConnections() { b.transport.CloseIdleConnections() }

// FullDuplex serves h with the request body readable after the response's
// head is written, as a reverse proxy in a test needs: an MCP server
// answers a POST with a stream's head as soon as it has read the body, and
// on that head a half-duplex net/http server drains and closes the request
// body that the proxy's transport may not have read to its end yet; the
// transport then fails the request and cuts the stream (httputil: "read
// error during body copy"; 1 elicitation in about 25 of the conformance
// suite behind the replicas' balancer). A Service balances connections,
// not requests, and has no such race.
func FullDuplex(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		h.ServeHTTP(w, r)
	})
}

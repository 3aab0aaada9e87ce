package server

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// A client answers a server request (sampling, elicitation, roots) with a
// POST of its own. Behind a load balancer with no affinity that POST can
// reach a replica other than the one whose call is waiting for it. That
// replica tries to deliver it itself, and when it has no such request it
// passes the POST to its peers: the one waiting takes it (202), the others
// refuse it. Nothing is shared or stored; a replica learns nothing about
// other replicas' sessions. A passed-on POST is never passed on again.

// forwardedHeader marks a POST passed on by a peer.
const forwardedHeader = "X-Mcp-Hub-Forwarded"

// forwardedForHeader names, on a POST passed on by a peer, the address of
// the client the peer got it from: an anonymous caller is its address, and
// so is the binding of its session (sessionid.go). Believed from peers only
// (Server.peerClient).
const forwardedForHeader = "X-Mcp-Hub-Forwarded-For"

// peerTimeout bounds the delivery of one answer to the peers.
const peerTimeout = 5 * time.Second

// peers passes answers on to the other replicas.
type peers struct {
	addrs    []string // host:port; hosts are resolved on every use
	client   *http.Client
	resolver *net.Resolver
	// streamClient has no timeout: a server request waits for a person
	// (elicitation) or a model (sampling); the caller's context bounds it.
	streamClient *http.Client
}

func newPeers(addrs []string) *peers {
	if len(addrs) == 0 {
		return nil
	}
	return &peers{
		addrs:        addrs,
		client:       &http.Client{Timeout: peerTimeout},
		resolver:     net.DefaultResolver,
		streamClient: &http.Client{},
	}
}

// deliverAnswer serves the client's answer locally, and when this replica
// was not waiting for it, passes it to the peers.
func (s *Server) deliverAnswer(w http.ResponseWriter, r *http.Request, body []byte) {
	rec := &recorder{header: http.Header{}}
	s.streamable.ServeHTTP(rec, r)
	if rec.status == http.StatusAccepted || s.peers == nil || r.Header.Get(forwardedHeader) != "" {
		rec.copyTo(w)
		return
	}
	if s.peers.deliver(r.Context(), r, body) {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	rec.copyTo(w)
}

// targets resolves the peers' addresses.
func (p *peers) targets(ctx context.Context) []string {
	var out []string
	for _, a := range p.addrs {
		host, port, _ := net.SplitHostPort(a)
		ips, err := p.resolver.LookupHost(ctx, host)
		if err != nil {
			continue
		}
		for _, ip := range ips {
			out = append(out, net.JoinHostPort(ip, port))
		}
	}
	return out
}

// isPeer reports whether remote (an http.Request's RemoteAddr) is one of
// the peers.
func (p *peers) isPeer(ctx context.Context, remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return false
	}
	for _, t := range p.targets(ctx) {
		if h, _, _ := net.SplitHostPort(t); h == host {
			return true
		}
	}
	return false
}

// deliver sends the answer to every peer address at once and reports
// whether one of them took it.
func (p *peers) deliver(ctx context.Context, r *http.Request, body []byte) bool {
	ctx, cancel := context.WithTimeout(ctx, peerTimeout)
	defer cancel()
	targets := p.targets(ctx)
	taken := make(chan bool, len(targets))
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Go(func() { taken <- p.post(ctx, t, r, body) })
	}
	go func() { wg.Wait(); close(taken) }()
	for ok := range taken {
		if ok {
			cancel() // the others need not finish
			return true
		}
	}
	return false
}

// post passes the answer to one peer with the client's own credentials and
// session headers.
func (p *peers) post(ctx context.Context, target string, r *http.Request, body []byte) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+target+r.URL.Path, bytes.NewReader(body))
	if err != nil {
		return false
	}
	for _, h := range []string{"Authorization", "Content-Type", "Accept", "Mcp-Session-Id", "Mcp-Protocol-Version", "X-Autonomy-Level"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	req.Header.Set(forwardedHeader, "1")
	req.Header.Set(forwardedForHeader, r.RemoteAddr)
	resp, err := p.client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusAccepted
}

// recorder keeps a response so it can be replaced by a peer's verdict.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

func (r *recorder) copyTo(w http.ResponseWriter) {
	for k, v := range r.header {
		w.Header()[k] = v
	}
	if r.status == 0 {
		r.status = http.StatusOK
	}
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body.Bytes())
}

// Package peers lets the replicas of one hub serve a client together with
// no affinity at the load balancer and nothing shared or stored. Two
// things can reach the wrong replica:
//
//   - A client answers a server request (sampling, elicitation, roots)
//     with a POST of its own, which may reach a replica other than the one
//     whose call is waiting for it. That replica tries to deliver it
//     itself, and when it has no such request it passes the POST on to
//     its peers (PassOn): the one waiting takes it (202), the others refuse
//     it. A passed-on POST is never passed on again.
//   - mcp-go sends sampling/createMessage and roots/list to a Streamable
//     HTTP client only on the session's standalone GET stream, which
//     another replica may hold. The replica whose call needs the request
//     asks its peers (Ask); the one holding the stream sends it and returns
//     the client's answer (Serve).
//
// A replica learns nothing about other replicas' sessions but the request
// it is asked to send. What a replica made names it (Tag), so a request of
// it costs one internal request, not one per peer (owners.go).
//
// The peers also say how many replicas there are (Replicas), so each can
// take its share of budgets that are fleet-wide (internal/ratelimit): the
// count is what the peers' addresses resolve to, this replica included, as
// a headless Service lists every ready pod.
package peers

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// forwardedHeader marks a POST passed on by a peer.
const forwardedHeader = "X-Mcp-Hub-Forwarded"

// forwardedForHeader names, on a POST passed on by a peer, the address of
// the client the peer got it from: an anonymous caller is its address, and
// so is the binding of its session. Believed from peers only (ClientOf).
const forwardedForHeader = "X-Mcp-Hub-Forwarded-For"

// RequestPath is where a replica asks its peers to send a server request
// to a session whose GET stream they hold. Only peers may use it.
const RequestPath = "/internal/peer-request"

// passOnTimeout bounds the delivery of one answer to the peers.
const passOnTimeout = 5 * time.Second

// Peers are the replicas of this hub (the list may name this one too). A
// nil *Peers is a hub without peers: it passes nothing on, trusts no one
// as a peer and counts one replica.
type Peers struct {
	addrs  []string // host:port; hosts are resolved on every use
	client *http.Client
	// lookupHost resolves a host (net.DefaultResolver; tests set their own).
	lookupHost func(ctx context.Context, host string) ([]string, error)
	// streamClient has no timeout: a server request waits for a person
	// (elicitation) or a model (sampling); the caller's context bounds it.
	streamClient *http.Client
	// maxBody bounds a request a peer sends and an answer it returns.
	maxBody int64
	// self is this replica's id among its peers (rand.Text): its Tags,
	// and the name by which owners are chosen (owners.go).
	self string

	// replicas is the count of the last CountReplicas, 0 before the first.
	replicas atomic.Int64
	// resolved is what each address last resolved to, kept when its
	// resolution fails (CountReplicas); only CountReplicas uses it.
	resolvedMu sync.Mutex
	resolved   map[string][]string

	// members are the replicas' ids and addresses (owners.go).
	members *members
	// holders is where a session's GET stream was found last (Ask), so
	// the next server request of the session is one internal request.
	holders *lru.Cache[string, string]
}

// holdersKept bounds the sessions whose stream holder Ask remembers.
const holdersKept = 4096

// New returns the peers at addrs (host:port; a host may name several
// replicas, resolved on every use), nil for none. maxBody bounds what a
// peer may send or return, as the hub bounds a request body.
func New(addrs []string, maxBody int64) *Peers {
	if len(addrs) == 0 {
		return nil
	}
	holders, _ := lru.New[string, string](holdersKept)
	return &Peers{
		addrs:        addrs,
		client:       &http.Client{Timeout: passOnTimeout},
		lookupHost:   net.DefaultResolver.LookupHost,
		streamClient: &http.Client{},
		maxBody:      maxBody,
		self:         rand.Text(),
		resolved:     map[string][]string{},
		members:      newMembers(),
		holders:      holders,
	}
}

// ReplicaRefresh is how often WatchReplicas counts the replicas again: a
// replica come or gone changes every budget's share within it (plus the
// time the Service's DNS takes to list or drop the pod).
const ReplicaRefresh = 5 * time.Second

// Replicas is the number of replicas last counted (CountReplicas), this
// one included; at least 1, and 1 without peers. It reads an atomic, so
// the call path may ask on every call.
func (p *Peers) Replicas() int {
	if p == nil {
		return 1
	}
	return max(1, int(p.replicas.Load()))
}

// CountReplicas resolves the peers' addresses and counts the distinct
// host:port targets, which Replicas then returns. The configured list is
// every replica, this one included (the chart's headless Service lists
// every ready pod; a list of host:port names each replica once).
//
// An address that does not resolve counts what it resolved to last time:
// a replica cut off from DNS keeps its share instead of taking the whole
// budget for itself (the replicas cannot tell a partition from the others
// being gone, and a budget exceeded N times is worse than one under-used
// for a while). err names the addresses that failed.
func (p *Peers) CountReplicas(ctx context.Context) (n int, err error) {
	p.resolvedMu.Lock()
	defer p.resolvedMu.Unlock()
	var errs []error
	seen := map[string]bool{}
	for _, a := range p.addrs {
		host, port, _ := net.SplitHostPort(a)
		if ips, lerr := p.lookupHost(ctx, host); lerr == nil {
			targets := make([]string, len(ips))
			for i, ip := range ips {
				targets[i] = net.JoinHostPort(ip, port)
			}
			p.resolved[a] = targets
		} else {
			errs = append(errs, fmt.Errorf("resolving peer %s: %w", a, lerr))
		}
		for _, t := range p.resolved[a] {
			seen[t] = true
		}
	}
	n = max(1, len(seen))
	p.replicas.Store(int64(n))
	return n, errors.Join(errs...)
}

// counted is every address the last CountReplicas resolved the peers to.
func (p *Peers) counted() []string {
	p.resolvedMu.Lock()
	defer p.resolvedMu.Unlock()
	var out []string
	for _, ts := range p.resolved {
		for _, t := range ts {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// WatchReplicas counts the replicas and learns their ids (owners.go) at
// once and then every ReplicaRefresh (every fifth of it while an address
// does not answer with its id) until ctx ends, each count bounded by
// ReplicaRefresh. It calls report
// when the count changes or a count fails where the last did not (or the
// other way round), never on the call path; report may be nil. A nil
// *Peers returns at once (one replica, always).
func (p *Peers) WatchReplicas(ctx context.Context, report func(n int, err error)) {
	if p == nil {
		return
	}
	last, failing := 0, false
	for {
		cctx, cancel := context.WithTimeout(ctx, ReplicaRefresh)
		n, err := p.CountReplicas(cctx)
		targets := p.counted()
		complete := p.members.refresh(cctx, p.client, p.self, targets) >= len(targets)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if report != nil && (n != last || (err != nil) != failing) {
			report(n, err)
		}
		last, failing = n, err != nil
		// A peer that does not answer yet (starting, as replicas do
		// together) is asked again soon: until the replicas agree on the
		// members, they disagree on owners.
		wait := ReplicaRefresh
		if !complete {
			wait = ReplicaRefresh / 5
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// targets resolves the peers' addresses.
func (p *Peers) targets(ctx context.Context) []string {
	var out []string
	for _, a := range p.addrs {
		host, port, _ := net.SplitHostPort(a)
		ips, err := p.lookupHost(ctx, host)
		if err != nil {
			continue
		}
		for _, ip := range ips {
			out = append(out, net.JoinHostPort(ip, port))
		}
	}
	return out
}

// IsPeer reports whether remote (an http.Request's RemoteAddr) is one of
// the peers.
func (p *Peers) IsPeer(ctx context.Context, remote string) bool {
	if p == nil {
		return false
	}
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

// ClientOf is r as its client sent it. A client's answer (or its
// session's DELETE) that a peer passed on comes from the peer's address; when it does come from a peer,
// it counts as from the address of the client the peer names, so that an
// anonymous caller's answer reaches its own session on this replica too.
// Anyone else's header is ignored.
func (p *Peers) ClientOf(r *http.Request) *http.Request {
	client := r.Header.Get(forwardedForHeader)
	if client == "" || r.Method != http.MethodPost && r.Method != http.MethodDelete || r.Header.Get(forwardedHeader) == "" || !p.IsPeer(r.Context(), r.RemoteAddr) {
		return r
	}
	r = r.WithContext(r.Context())
	r.RemoteAddr = client
	return r
}

// PassedOn reports whether r is a client's answer a peer passed on.
func PassedOn(r *http.Request) bool { return r.Header.Get(forwardedHeader) != "" }

// PassOn sends a client's answer (r, whose body was read into body) that
// this replica was not waiting for to the replica that sent the request
// (holder, the id its request id names: HolderOf), else to every peer at
// once, and reports whether one of them took it. An answer a peer passed
// on is not passed on again.
func (p *Peers) PassOn(r *http.Request, body []byte, holder string) bool {
	if p == nil || PassedOn(r) || holder == p.self {
		return false
	}
	ctx, cancel := context.WithTimeout(r.Context(), passOnTimeout)
	defer cancel()
	targets := p.targetsFor(ctx, holder)
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

// targetsFor is where a request of something holder made goes: holder's
// address alone when it is a member, else every peer (holder unknown,
// not probed yet, or gone: every peer then refuses it).
func (p *Peers) targetsFor(ctx context.Context, holder string) []string {
	if holder != "" {
		if t := p.members.targetOf(holder); t != "" {
			return []string{t}
		}
	}
	return p.targets(ctx)
}

// post passes the answer to one peer with the client's own credentials and
// session headers.
func (p *Peers) post(ctx context.Context, target string, r *http.Request, body []byte) bool {
	resp, err := p.do(ctx, KindAnswer, p.client, target, r, body)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusAccepted
}

// do sends a client's request (a POST, or a GET of a list every replica
// has a part of) to one peer with the client's own credentials and
// session headers, marked as passed on.
func (p *Peers) do(ctx context.Context, kind string, client *http.Client, target string, r *http.Request, body []byte) (*http.Response, error) {
	p.members.sent(kind)
	req, err := http.NewRequestWithContext(ctx, r.Method, "http://"+target+r.URL.Path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for _, h := range []string{"Authorization", "Content-Type", "Accept", "Mcp-Session-Id", "Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name", "X-Autonomy-Level"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	req.Header.Set(forwardedHeader, "1")
	req.Header.Set(forwardedForHeader, r.RemoteAddr)
	return client.Do(req)
}

// request is a server request one replica asks another to send.
type request struct {
	Session string          `json:"session"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// Ask has the peer that holds session's GET stream send the server
// request method with params to its client, and decodes the client's
// answer into out. The peers are asked in turn, the one that held the
// stream last time first: a stream stays where the client opened it, so
// after the first request of a session each costs one internal request.
func (p *Peers) Ask(ctx context.Context, session, method string, params, out any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(request{Session: session, Method: method, Params: raw})
	targets := p.targets(ctx)
	if last, ok := p.holders.Get(session); ok {
		if i := slices.Index(targets, last); i > 0 {
			targets = append([]string{last}, slices.Delete(targets, i, i+1)...)
		}
	}
	for _, t := range targets {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+t+RequestPath, bytes.NewReader(body))
		if err != nil {
			continue
		}
		req.Header.Set("Content-Type", "application/json")
		p.members.sent(KindAsk)
		resp, err := p.streamClient.Do(req)
		if err != nil {
			continue
		}
		data, rerr := p.readAll(resp)
		switch {
		case resp.StatusCode == http.StatusNotFound:
			continue // not the replica holding the stream
		case rerr != nil:
			return rerr
		case resp.StatusCode != http.StatusOK:
			return fmt.Errorf("%s through a peer: %s", method, bytes.TrimSpace(data))
		}
		p.holders.Add(session, t)
		return json.Unmarshal(data, out)
	}
	return fmt.Errorf("%s: %w", method, ErrNoHolder)
}

// ErrNoHolder is Ask's answer when no peer holds the session's GET stream:
// the client has not opened it yet, or it is between two streams.
var ErrNoHolder = errors.New("no replica holds the client's GET stream (mcp-go sends this request to Streamable HTTP clients only on that stream)")

func (p *Peers) readAll(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	return io.ReadAll(io.LimitReader(resp.Body, p.maxBody))
}

// ErrNoStream is a Sender's answer when this replica does not hold the
// session's GET stream: the peer that asked tries the next one.
var ErrNoStream = errors.New("no stream for this session here")

// Sender sends a server request to the client of session on this replica
// and returns its answer, or ErrNoStream.
type Sender func(ctx context.Context, session, method string, params json.RawMessage) (any, error)

// Serve answers a peer's Ask (POST RequestPath) with send; anyone but a
// peer is refused before the body is read.
func (p *Peers) Serve(send Sender) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !p.IsPeer(r.Context(), r.RemoteAddr) {
			http.Error(w, "only peers may ask", http.StatusForbidden)
			return
		}
		var pr request
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, p.maxBody)).Decode(&pr); err != nil {
			http.Error(w, "bad peer request: "+err.Error(), http.StatusBadRequest)
			return
		}
		res, err := send(r.Context(), pr.Session, pr.Method, pr.Params)
		switch {
		case errors.Is(err, ErrNoStream):
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(res)
	}
}

// RunPath is where a replica asks the owner of a caller (Owner) to count
// one call of its run and hour (guardrails maxIterations,
// maxIterationsPerHour; AtOwner). Only peers may use it.
const RunPath = "/internal/peer-run"

// Self names this replica to its peers ("" without peers): a task's handle
// carries it, so a request of the task reaches the replica that holds it.
func (p *Peers) Self() string {
	if p == nil {
		return ""
	}
	return p.self
}

// NotMine is the status a replica answers a forwarded request with that
// belongs to another replica (Forward).
const NotMine = http.StatusMisdirectedRequest

// Answer answers r (whose body was read into body), a client's request of
// something another replica holds (holder, its id; "" when the request
// does not say), and reports whether it did: to a peer's own pass-on,
// NotMine (the peer that passed it on asks the others); else with the
// answer of the peer that took it (Forward). false: no replica took it,
// and the caller answers it itself.
func (p *Peers) Answer(w http.ResponseWriter, r *http.Request, body []byte, holder string) bool {
	if PassedOn(r) {
		w.WriteHeader(NotMine)
		return true
	}
	status, ct, answer, ok := p.Forward(r, body, holder)
	if !ok {
		return false
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(answer)
	return true
}

// Forward sends a client's request (r, whose body was read into body) that
// belongs to another replica to that replica (holder: one internal
// request) or, when holder is "" or not a member, to every peer at once,
// with the client's own credentials, and returns the answer of the one that took it (any status
// but NotMine): its status, Content-Type and body. ok is false when none
// did. A request a peer forwarded is not forwarded again. Only the
// client's request bounds the wait: a tasks/result waits for its task.
func (p *Peers) Forward(r *http.Request, body []byte, holder string) (status int, contentType string, answer []byte, ok bool) {
	if p == nil || PassedOn(r) || holder == p.self {
		return 0, "", nil, false
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	type reply struct {
		status int
		ct     string
		body   []byte
	}
	targets := p.targetsFor(ctx, holder)
	got := make(chan reply, len(targets))
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Go(func() {
			resp, err := p.do(ctx, KindForward, p.streamClient, t, r, body)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode == NotMine {
				return
			}
			b, err := p.readAll(resp)
			if err == nil {
				got <- reply{resp.StatusCode, resp.Header.Get("Content-Type"), b}
			}
		})
	}
	go func() { wg.Wait(); close(got) }()
	for rep := range got {
		cancel() // the others need not finish
		return rep.status, rep.ct, rep.body, true
	}
	return 0, "", nil, false
}

// ForwardAll sends a client's request (r, whose body was read into body)
// to every peer at once, with the client's own credentials, and returns
// the bodies of the answers 200 OK: each peer's own part of an answer
// that no replica has whole (tasks/list). A request a peer forwarded is
// not forwarded again.
func (p *Peers) ForwardAll(r *http.Request, body []byte) [][]byte {
	return p.fanOut(r, body, KindList)
}

// Close passes a client's DELETE of its Streamable HTTP session (r) to
// every peer, so that each forgets the session now rather than at its idle
// sweep: the balancer sends the DELETE to one replica, and every replica
// the session's requests reached keeps state of it. Once per session, not
// per call. Any other request, and a DELETE a peer passed on, it ignores.
func (p *Peers) Close(r *http.Request) {
	if r.Method == http.MethodDelete && r.Header.Get("Mcp-Session-Id") != "" {
		p.fanOut(r, nil, KindClose)
	}
}

// fanOut sends r (with body) to every peer at once as kind and returns
// the bodies of the answers 200 OK.
func (p *Peers) fanOut(r *http.Request, body []byte, kind string) [][]byte {
	if p == nil || PassedOn(r) {
		return nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), passOnTimeout)
	defer cancel()
	targets := p.targets(ctx)
	answers := make([][]byte, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			resp, err := p.do(ctx, kind, p.client, t, r, body)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			if b, err := p.readAll(resp); err == nil && resp.StatusCode == http.StatusOK {
				answers[i] = b
			}
		})
	}
	wg.Wait()
	return answers
}

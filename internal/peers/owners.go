package peers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Owners: a fleet of N replicas must not cost N-1 internal requests per
// call. Each thing one replica keeps for the whole fleet (a caller's run
// and hour counts) has one owner, chosen by rendezvous hashing over the
// replicas the peers' addresses name now; each thing a replica made (a
// task, a call waiting for approval or for its next round, a server
// request waiting for the client's answer) names its maker in its id
// (Tag), and a request of it goes to that replica alone (Forward). A
// replica that joins or leaves moves only the keys it owns (rendezvous),
// and what is not known (a replica not yet probed, an id from a replica
// gone or from an older release) falls back to asking every peer.
//
// A replica learns its peers' ids by asking each address for it
// (IDPath), every ReplicaRefresh (WatchReplicas): N requests per replica
// per refresh, none per call.

// IDPath answers a peer with this replica's id (Self). Only peers may ask.
const IDPath = "/internal/peer-id"

// Kinds of internal requests (mcphub_peer_requests_total{kind}).
const (
	KindRun     = "run"     // a call's count, to its caller's owner
	KindForward = "forward" // a client's request of something a peer made
	KindAnswer  = "answer"  // a client's answer to a server request a peer sent
	KindAsk     = "ask"     // a server request for the peer holding the GET stream
	KindList    = "list"    // a list every replica has a part of
	KindClose   = "close"   // a client's DELETE of its session, to every peer (once per session)
	KindMembers = "members" // the refresh of the peers' ids (not per call)
)

// idLen is the length of a replica id (rand.Text: 26 base32 characters).
const idLen = 26

// members are the replicas last probed: id to host:port, this replica
// included (its own address answers with its id; it is added when it
// does not).
type members struct {
	mu     sync.RWMutex
	byID   map[string]string
	ids    []string // sorted, for a stable order in logs and tests
	counts *prometheus.CounterVec
	known  prometheus.GaugeFunc
}

func newMembers() *members {
	m := &members{counts: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcphub_peer_requests_total",
		Help: "Internal requests this replica sent to its peers, by kind: run (a call's count to its owner), forward, answer, ask, list, close (a session's DELETE), members (the periodic refresh of the peers' ids).",
	}, []string{"kind"})}
	m.known = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "mcphub_peer_members",
		Help: "Replicas that answered with their id at the last refresh, this one included: the replicas owners are chosen among (mcphub_replicas counts the addresses).",
	}, func() float64 {
		m.mu.RLock()
		defer m.mu.RUnlock()
		return float64(max(1, len(m.ids)))
	})
	return m
}

// Register adds mcphub_peer_requests_total and mcphub_peer_members to reg.
// A nil *Peers registers nothing.
func (p *Peers) Register(reg prometheus.Registerer) error {
	if p == nil || reg == nil {
		return nil
	}
	return errors.Join(reg.Register(p.members.counts), reg.Register(p.members.known))
}

// sent counts one internal request of kind.
func (m *members) sent(kind string) { m.counts.WithLabelValues(kind).Inc() }

// refresh asks each target (the addresses resolved now) with client for
// its id. A target that does not answer is not a member until it does:
// it is down, starting, or of a release without IDPath. self is always
// one. It returns how many members there are now.
func (m *members) refresh(ctx context.Context, client *http.Client, self string, targets []string) int {
	byID := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Go(func() {
			m.sent(KindMembers)
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+t+IDPath, nil)
			if err != nil {
				return
			}
			resp, err := client.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(io.LimitReader(resp.Body, 2*idLen))
			if id := string(bytes.TrimSpace(b)); err == nil && resp.StatusCode == http.StatusOK && isID(id) {
				mu.Lock()
				byID[id] = t
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if _, ok := byID[self]; !ok {
		byID[self] = ""
	}
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	m.mu.Lock()
	m.byID, m.ids = byID, ids
	m.mu.Unlock()
	return len(ids)
}

// targetOf is the address of the replica with id, "" when it is not a
// member (or is this one).
func (m *members) targetOf(id string) string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.byID[id]
}

// ServeID answers IDPath: this replica's id, to peers only.
func (p *Peers) ServeID(w http.ResponseWriter, r *http.Request) {
	if !p.IsPeer(r.Context(), r.RemoteAddr) {
		http.Error(w, "only peers may ask", http.StatusForbidden)
		return
	}
	_, _ = io.WriteString(w, p.self)
}

// Owner is the id of the replica that owns key now: of the members, the
// one whose id hashed with key scores highest (rendezvous hashing), so a
// member that joins or leaves moves only the keys it wins or held. self
// is true when it is this replica (always, without peers).
func (p *Peers) Owner(key string) (id string, self bool) {
	if p == nil {
		return "", true
	}
	p.members.mu.RLock()
	defer p.members.mu.RUnlock()
	best, top := p.self, uint64(0)
	if len(p.members.ids) > 0 {
		best = ""
	}
	for _, m := range p.members.ids {
		if s := score(m, key); best == "" || s > top {
			best, top = m, s
		}
	}
	return best, best == p.self
}

// score hashes a member's id with a key: FNV-1a over both, then a
// finalizer that spreads FNV's weak high bits (splitmix64).
func score(id, key string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(id); i++ {
		h = (h ^ uint64(id[i])) * prime
	}
	h = (h ^ 0) * prime
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * prime
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

// AtOwner sends req (as JSON) to the owner of key at path and decodes its
// answer into resp: one internal request of kind. local is true, and
// nothing is sent, when this replica owns key. An owner that cannot be
// reached, or answers anything but 200, is an error: the caller decides
// what it counts alone.
func (p *Peers) AtOwner(ctx context.Context, kind, key, path string, req, resp any) (local bool, err error) {
	id, self := p.Owner(key)
	if self {
		return true, nil
	}
	target := p.members.targetOf(id)
	if target == "" {
		return true, nil
	}
	body, err := json.Marshal(req)
	if err != nil {
		return false, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+target+path, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	hr.Header.Set("Content-Type", "application/json")
	p.members.sent(kind)
	hresp, err := p.client.Do(hr)
	if err != nil {
		return false, fmt.Errorf("asking owner %s: %w", target, err)
	}
	data, err := p.readAll(hresp)
	if err != nil {
		return false, fmt.Errorf("reading owner %s: %w", target, err)
	}
	if hresp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("owner %s: %s", target, bytes.TrimSpace(data))
	}
	return false, json.Unmarshal(data, resp)
}

// Asker is AtOwner of kind at path as a function of the key and the
// request: ok is false (local) when this replica owns key or the owner
// could not be asked, and the caller then answers it itself. Nil without
// peers.
func Asker[Req, Resp any](p *Peers, kind, path string) func(ctx context.Context, key string, req Req) (resp Resp, local bool) {
	if p == nil {
		return nil
	}
	return func(ctx context.Context, key string, req Req) (Resp, bool) {
		var resp Resp
		local, err := p.AtOwner(ctx, kind, key, path, req, &resp)
		return resp, local || err != nil
	}
}

// ServeOwned answers a peer's AtOwner with serve; anyone but a peer is
// refused before the body is read.
func ServeOwned[Req, Resp any](p *Peers, serve func(Req) Resp) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !p.IsPeer(r.Context(), r.RemoteAddr) {
			http.Error(w, "only peers may ask", http.StatusForbidden)
			return
		}
		var req Req
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxOwnedBody)).Decode(&req); err != nil {
			http.Error(w, "bad peer request: "+err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(serve(req))
	}
}

// maxOwnedBody bounds a request of an owner: a call's count is two keys
// and an hour's slots.
const maxOwnedBody = 16 << 10

// Tag is s marked as made by this replica ("<id>.<s>"), so that a request
// of it reaches this replica alone (HolderOf, Forward). Without peers it
// is s.
func (p *Peers) Tag(s string) string {
	if p == nil {
		return s
	}
	return p.self + "." + s
}

// HolderOfID is the replica id a JSON-RPC id names (a string Tag), ""
// when it names none.
func HolderOfID(id json.RawMessage) string {
	var s string
	if json.Unmarshal(id, &s) != nil {
		return ""
	}
	return HolderOf(s)
}

// HolderOf is the replica id a Tag names, "" when s has none.
func HolderOf(s string) string {
	if len(s) <= idLen || s[idLen] != '.' || !isID(s[:idLen]) {
		return ""
	}
	return s[:idLen]
}

// isID reports whether s reads as a replica id (rand.Text's alphabet).
func isID(s string) bool {
	return len(s) == idLen && strings.IndexFunc(s, func(c rune) bool { return (c < 'A' || c > 'Z') && (c < '2' || c > '7') }) < 0
}

package peers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// fleet is n replicas on 127.0.0.1, each with every replica as its peers,
// each answering IDPath, counting at RunPath ("count" answers how many
// it counted) and taking a forwarded POST /mcp whose body names it.
type fleet struct {
	peers   []*Peers
	servers []*httptest.Server
	counted []atomic.Int32
	asked   []atomic.Int32
}

type countReq struct{ Key string }
type countResp struct{ By string }

func newFleet(t *testing.T, n int) *fleet {
	t.Helper()
	f := &fleet{counted: make([]atomic.Int32, n), asked: make([]atomic.Int32, n)}
	var addrs []string
	for range n {
		srv := httptest.NewUnstartedServer(nil)
		f.servers = append(f.servers, srv)
		addrs = append(addrs, srv.Listener.Addr().String())
	}
	for i, srv := range f.servers {
		p := New(addrs, maxBody)
		f.peers = append(f.peers, p)
		mux := http.NewServeMux()
		mux.HandleFunc("GET "+IDPath, p.ServeID)
		mux.HandleFunc("POST "+RunPath, ServeOwned(p, func(countReq) countResp {
			f.counted[i].Add(1)
			return countResp{By: p.Self()}
		}))
		mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
			f.asked[i].Add(1)
			b, _ := io.ReadAll(r.Body)
			if string(b) != p.Self() {
				w.WriteHeader(NotMine)
				return
			}
			_, _ = io.WriteString(w, "taken by "+p.Self())
		})
		srv.Config.Handler = mux
		srv.Start()
		t.Cleanup(srv.Close)
	}
	f.refresh(t)
	return f
}

// refresh has every replica count and probe its peers, as WatchReplicas
// does every ReplicaRefresh.
func (f *fleet) refresh(t *testing.T) {
	t.Helper()
	for _, p := range f.peers {
		_, _ = p.CountReplicas(context.Background())
		p.members.refresh(context.Background(), p.client, p.self, p.counted())
	}
}

// TestOwners: every replica agrees on each key's owner and learns its
// peers' ids; keys spread over the replicas; a replica that leaves moves
// only the keys it owned; asking an owner is one internal request from
// any other replica and none from the owner itself.
func TestOwners(t *testing.T) {
	f := newFleet(t, 4)
	if got := f.peers[0].members.ids; len(got) != 4 {
		t.Fatalf("members %q, want 4 ids", got)
	}
	const keys = 2000
	owner := map[string]string{}
	per := map[string]int{}
	for k := range keys {
		key := fmt.Sprintf("caller-%d", k)
		id, _ := f.peers[0].Owner(key)
		for i, p := range f.peers {
			if o, self := p.Owner(key); o != id || self != (p.Self() == id) {
				t.Fatalf("replica %d: owner of %s is %s (self %v), replica 0 says %s", i, key, o, self, id)
			}
		}
		owner[key] = id
		per[id]++
	}
	for id, n := range per {
		if n < keys/4*7/10 || n > keys/4*13/10 {
			t.Errorf("replica %s owns %d of %d keys, want about a quarter", id, n, keys)
		}
	}

	ctx := context.Background()
	for i, p := range f.peers {
		before := sentOf(p, KindRun)
		var resp countResp
		local, err := p.AtOwner(ctx, KindRun, "caller-7", RunPath, countReq{Key: "caller-7"}, &resp)
		sent := sentOf(p, KindRun) - before
		switch {
		case err != nil:
			t.Fatalf("replica %d: %v", i, err)
		case p.Self() == owner["caller-7"] && (!local || sent != 0):
			t.Errorf("the owner itself: local %v, %v requests; want local, none", local, sent)
		case p.Self() != owner["caller-7"] && (local || sent != 1 || resp.By != owner["caller-7"]):
			t.Errorf("replica %d: local %v, %v requests, counted by %q; want one request, counted by the owner %s", i, local, sent, resp.By, owner["caller-7"])
		}
	}

	// Replica 3 leaves: its keys move, no other key does.
	gone := f.peers[3].Self()
	f.servers[3].Close()
	f.peers = f.peers[:3]
	f.refresh(t)
	moved := 0
	for key, was := range owner {
		now, _ := f.peers[1].Owner(key)
		switch {
		case now == gone:
			t.Fatalf("%s still owned by the replica that left", key)
		case was != gone && now != was:
			t.Fatalf("%s moved from %s, which stayed, to %s", key, was, now)
		case was == gone:
			moved++
		}
	}
	if moved != per[gone] {
		t.Fatalf("%d keys moved, want the %d the leaver owned", moved, per[gone])
	}
}

// TestForwardToHolder: a request of something a replica made (its id in a
// Tag) goes to that replica alone; one whose maker is unknown goes to
// every peer, and the maker answers it.
func TestForwardToHolder(t *testing.T) {
	f := newFleet(t, 3)
	p := f.peers[0]
	maker := f.peers[2].Self()
	tagged := f.peers[2].Tag("task-1")
	if HolderOf(tagged) != maker || !strings.HasSuffix(tagged, ".task-1") {
		t.Fatalf("HolderOf(%q) = %q, want %q", tagged, HolderOf(tagged), maker)
	}
	if h := HolderOfID([]byte(`"` + tagged + `"`)); h != maker {
		t.Fatalf("HolderOfID of the JSON-RPC id %q = %q", tagged, h)
	}
	if h := HolderOfID([]byte("12")); h != "" {
		t.Fatalf("HolderOfID(12) = %q, want none", h)
	}
	for _, s := range []string{"", "task-1", "hub-12", "abc.def", strings.Repeat("a", idLen) + ".x", maker} {
		if h := HolderOf(s); h != "" {
			t.Errorf("HolderOf(%q) = %q, want none", s, h)
		}
	}
	for _, tc := range []struct {
		holder    string
		wantAsked int32
	}{{maker, 1}, {"", 3}, {strings.Repeat("Z", idLen), 3}} {
		for i := range f.asked {
			f.asked[i].Store(0)
		}
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		status, _, answer, ok := p.Forward(r, []byte(maker), tc.holder)
		asked := f.asked[0].Load() + f.asked[1].Load() + f.asked[2].Load()
		if !ok || status != http.StatusOK || string(answer) != "taken by "+maker {
			t.Errorf("holder %q: %d %q %v, want the maker's answer", tc.holder, status, answer, ok)
		}
		if asked > tc.wantAsked || tc.holder == maker && f.asked[2].Load() != 1 {
			t.Errorf("holder %q: %d replicas asked, want at most %d", tc.holder, asked, tc.wantAsked)
		}
	}
	if _, _, _, ok := p.Forward(httptest.NewRequest(http.MethodPost, "/mcp", nil), []byte("x"), p.Self()); ok {
		t.Error("a request of this replica's own was forwarded")
	}
}

// sentOf is mcphub_peer_requests_total{kind} of p.
func sentOf(p *Peers, kind string) float64 {
	var m dto.Metric
	if err := p.members.counts.WithLabelValues(kind).Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// TestAskRemembersTheHolder: the first server request of a session asks
// the peers in turn until the one holding its GET stream; the next goes to
// that one alone; a stream that moved is looked for again.
func TestAskRemembersTheHolder(t *testing.T) {
	var holder atomic.Int32 // the index of the replica holding "s"
	asked := make([]atomic.Int32, 3)
	var addrs []string
	for i := range 3 {
		p := New([]string{"127.0.0.1:1"}, maxBody)
		srv := httptest.NewServer(p.Serve(func(_ context.Context, session, method string, _ json.RawMessage) (any, error) {
			asked[i].Add(1)
			if int(holder.Load()) != i {
				return nil, ErrNoStream
			}
			return map[string]int{"by": i}, nil
		}))
		t.Cleanup(srv.Close)
		addrs = append(addrs, strings.TrimPrefix(srv.URL, "http://"))
	}
	p := New(addrs, maxBody)
	ask := func() (by int, requests int32) {
		for i := range asked {
			asked[i].Store(0)
		}
		var out struct{ By int }
		if err := p.Ask(context.Background(), "s", "roots/list", struct{}{}, &out); err != nil {
			t.Fatal(err)
		}
		return out.By, asked[0].Load() + asked[1].Load() + asked[2].Load()
	}
	holder.Store(2)
	if by, n := ask(); by != 2 || n != 3 {
		t.Fatalf("first request: answered by %d after %d requests, want 2 after 3 (in turn)", by, n)
	}
	for range 3 {
		if by, n := ask(); by != 2 || n != 1 {
			t.Fatalf("next request: answered by %d after %d requests, want 2 after 1", by, n)
		}
	}
	holder.Store(0) // the client opened its stream elsewhere
	if by, n := ask(); by != 0 || n != 2 {
		t.Fatalf("after the stream moved: answered by %d after %d requests, want 0 after 2", by, n)
	}
}

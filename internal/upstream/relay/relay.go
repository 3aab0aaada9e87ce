// Package relay carries what an upstream sends during one caller's request
// back to that caller: progress, log messages, and the server's requests
// (sampling, elicitation, roots).
//
// One upstream session serves every caller (plain tool calls, reads and
// lists need nothing per caller). What must reach one caller travels with
// the request's context as a Relay:
//   - progress: the caller's token is swapped for a hub-wide unique one on
//     the way up and swapped back on the way down, so two callers using the
//     same token on one upstream never see each other's progress;
//   - sampling, elicitation and roots: mcp-go's client calls its handlers
//     with the context of the call that caused them, both for the
//     2026-07-28 multi round-trip results and for legacy requests sent on a
//     call's stream, so the handler finds the caller's Relay there;
//   - log messages carry no request id: they go to the caller whose call is
//     in flight on this upstream when there is exactly one, else to the
//     hub's own log (never to a caller they may not belong to);
//   - notifications/elicitation/complete names the URL-mode elicitation it
//     ends by its elicitationId, which the Tracker remembers with the
//     caller it was relayed to (the request's elicitation/create, or the
//     elicitations of a -32042 error), so it reaches that caller even after
//     the call that asked has ended.
//
// It knows of MCP messages only; the upstream client owns the session and
// keeps a Tracker per upstream.
package relay

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// Relay delivers what an upstream sends during one caller's request.
type Relay interface {
	// Notify sends a notification (progress with the caller's own token,
	// or a log message) to the caller.
	Notify(method string, params map[string]any)
	CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
	Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error)
	ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error)
}

type key struct{}

// With returns ctx carrying r: calls made under it relay the upstream's
// messages for this caller to r.
func With(ctx context.Context, r Relay) context.Context {
	return context.WithValue(ctx, key{}, r)
}

// From is the Relay in ctx, nil when the caller takes nothing back.
func From(ctx context.Context) Relay {
	r, _ := ctx.Value(key{}).(Relay)
	return r
}

// Tracker tracks the requests in flight on one upstream: how many, and which
// of them carry a relay. A plain call costs two atomic adds.
type Tracker struct {
	total    atomic.Int64
	mu       sync.Mutex
	relayed  map[*Call]struct{}
	progress sync.Map // hub token -> *Call
	next     atomic.Uint64

	elicitOnce sync.Once
	elicited   *lru.Cache[string, Relay] // URL-mode elicitationId -> its caller
}

// maxElicited bounds the URL-mode elicitations a Tracker remembers: a
// server that never sends notifications/elicitation/complete must not grow
// the hub's memory; the least recently relayed are forgotten first.
const maxElicited = 1024

// elicitations is the memory of URL-mode elicitations, made on first use
// so that a Tracker's zero value works.
func (rs *Tracker) elicitations() *lru.Cache[string, Relay] {
	rs.elicitOnce.Do(func() {
		rs.elicited, _ = lru.New[string, Relay](maxElicited) // fails only for a size below 1
	})
	return rs.elicited
}

// Elicited remembers that the URL-mode elicitation id went to r, for its
// notifications/elicitation/complete. An empty id is ignored.
func (rs *Tracker) Elicited(id string, r Relay) {
	if id == "" || r == nil {
		return
	}
	rs.elicitations().Add(id, r)
}

// Completed returns the caller the URL-mode elicitation id went to and
// forgets it: its notifications/elicitation/complete arrived. ok is false
// for an id the Tracker does not know (never relayed, or forgotten), and
// for all but one of completions racing for the same id.
func (rs *Tracker) Completed(id string) (r Relay, ok bool) {
	c := rs.elicitations()
	r, ok = c.Peek(id)
	if !ok || !c.Remove(id) {
		return nil, false
	}
	return r, true
}

// Call is one request in flight that carries a relay, or a progress token
// mapped to one.
type Call struct {
	relay Relay
	token any // the caller's progress token
}

// Begin registers a request in flight on the session, with the caller's
// relay (nil when the caller takes nothing back); End undoes it.
func (rs *Tracker) Begin(r Relay) *Call {
	rs.total.Add(1)
	if r == nil {
		return nil
	}
	rc := &Call{relay: r}
	rs.mu.Lock()
	if rs.relayed == nil {
		rs.relayed = map[*Call]struct{}{}
	}
	rs.relayed[rc] = struct{}{}
	rs.mu.Unlock()
	return rc
}

// End ends a request Begin registered.
func (rs *Tracker) End(rc *Call) {
	if rc != nil {
		rs.mu.Lock()
		delete(rs.relayed, rc)
		rs.mu.Unlock()
	}
	rs.total.Add(-1)
}

// MapProgress registers the caller's progress token and returns the
// hub-wide unique token the upstream gets instead (unique with server's
// name in it), and the func that forgets it.
func (rs *Tracker) MapProgress(server string, r Relay, token any) (string, func()) {
	hub := "hub-" + server + "-" + strconv.FormatUint(rs.next.Add(1), 10)
	rs.progress.Store(hub, &Call{relay: r, token: token})
	return hub, func() { rs.progress.Delete(hub) }
}

// Only returns the relay of the request in flight when it is the only one
// on the session: a message that came outside of any request's stream can
// belong to no other. Nil when there are several, or the one takes nothing.
func (rs *Tracker) Only() Relay {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.total.Load() != 1 || len(rs.relayed) != 1 {
		return nil
	}
	for rc := range rs.relayed {
		return rc.relay
	}
	return nil
}

// Progress returns the relay of the hub-wide progress token hub and the
// caller's own token it stands for.
func (rs *Tracker) Progress(hub string) (r Relay, token any, ok bool) {
	v, ok := rs.progress.Load(hub)
	if !ok {
		return nil, nil, false
	}
	rc := v.(*Call)
	return rc.relay, rc.token, true
}

// Handlers answer the upstream's requests to the client (mcp-go's
// sampling, elicitation and roots handlers) on behalf of the caller whose
// call caused them.
type Handlers struct {
	Server  string // the upstream's name, for errors
	Tracker *Tracker
}

var (
	_ client.SamplingHandler    = Handlers{}
	_ client.ElicitationHandler = Handlers{}
	_ client.RootsHandler       = Handlers{}
)

func (h Handlers) relay(ctx context.Context, method string) (Relay, error) {
	if r := From(ctx); r != nil {
		return r, nil
	}
	if r := h.Tracker.Only(); r != nil {
		return r, nil
	}
	return nil, fmt.Errorf("mcp-hub cannot pass %s from %s to a caller: it arrived outside the stream of the request it belongs to, "+
		"and that request's caller takes no server requests or other requests were in flight", method, h.Server)
}

// CreateMessage passes a sampling request to the caller.
func (h Handlers) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	r, err := h.relay(ctx, string(mcp.MethodSamplingCreateMessage))
	if err != nil {
		return nil, err
	}
	return r.CreateMessage(ctx, req)
}

// Elicit passes an elicitation request to the caller.
func (h Handlers) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	r, err := h.relay(ctx, string(mcp.MethodElicitationCreate))
	if err != nil {
		return nil, err
	}
	if req.Params.Mode == mcp.ElicitationModeURL {
		h.Tracker.Elicited(req.Params.ElicitationID, r)
	}
	return r.Elicit(ctx, req)
}

// ListRoots asks the caller for its roots.
func (h Handlers) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	r, err := h.relay(ctx, string(mcp.MethodListRoots))
	if err != nil {
		return nil, err
	}
	return r.ListRoots(ctx, req)
}

// Fulfil answers a 2026-07-28 upstream's input requests through the
// caller's relay, one by one, as mcp-go's client would with these handlers.
func (h Handlers) Fulfil(ctx context.Context, reqs mcp.InputRequests) (mcp.InputResponses, error) {
	out := make(mcp.InputResponses, len(reqs))
	for id, req := range reqs {
		var res mcp.InputResponse
		var err error
		answered := false
		switch req.Method {
		case mcp.MethodElicitationCreate:
			if req.Elicitation == nil {
				return nil, fmt.Errorf("input request %q: elicitation without params", id)
			}
			var r *mcp.ElicitationResult
			if r, err = h.Elicit(ctx, mcp.ElicitationRequest{Request: mcp.Request{Method: string(req.Method)}, Params: *req.Elicitation}); err == nil && r != nil {
				res, answered = mcp.NewElicitationInputResponse(*r), true
			}
		case mcp.MethodSamplingCreateMessage:
			if req.Sampling == nil {
				return nil, fmt.Errorf("input request %q: sampling without params", id)
			}
			var r *mcp.CreateMessageResult
			if r, err = h.CreateMessage(ctx, mcp.CreateMessageRequest{Request: mcp.Request{Method: string(req.Method)}, CreateMessageParams: *req.Sampling}); err == nil && r != nil {
				res, answered = mcp.NewSamplingInputResponse(*r), true
			}
		case mcp.MethodListRoots:
			var r *mcp.ListRootsResult
			if r, err = h.ListRoots(ctx, mcp.ListRootsRequest{Request: mcp.Request{Method: string(req.Method)}}); err == nil && r != nil {
				if r.Roots == nil {
					rr := *r
					rr.Roots, r = []mcp.Root{}, &rr
				}
				res, answered = mcp.NewRootsInputResponse(*r), true
			}
		default:
			return nil, fmt.Errorf("input request %q: unsupported method %q", id, req.Method)
		}
		if err != nil {
			return nil, fmt.Errorf("input request %q (%s): %w", id, req.Method, err)
		}
		if !answered {
			return nil, fmt.Errorf("input request %q (%s): no answer", id, req.Method)
		}
		out[id] = res
	}
	return out, nil
}

// Rounds answers the input requests of one call to a 2026-07-28 upstream,
// round after round, through its caller's relay (Fulfil). A URL-mode
// elicitation reaches a caller of an older revision with an elicitationId
// the hub makes (that revision requires one; 2026-07-28 has none), and when
// the server stops asking (the call ends) the caller gets
// notifications/elicitation/complete for each such id: as far as the
// server is concerned, the flows it sent the user to are over.
type Rounds struct {
	Handlers
	minted []string
}

// Fulfil is Handlers.Fulfil, with an elicitationId for each URL-mode
// elicitation that has none.
func (r *Rounds) Fulfil(ctx context.Context, reqs mcp.InputRequests) (mcp.InputResponses, error) {
	for id, req := range reqs {
		if req.Elicitation != nil && req.Elicitation.Mode == mcp.ElicitationModeURL && req.Elicitation.ElicitationID == "" {
			p := *req.Elicitation
			var b [12]byte
			_, _ = rand.Read(b[:])
			p.ElicitationID = "mcp-hub-" + base64.RawURLEncoding.EncodeToString(b[:])
			req.Elicitation = &p
			reqs[id] = req
			r.minted = append(r.minted, p.ElicitationID)
		}
	}
	return r.Handlers.Fulfil(ctx, reqs)
}

// Done tells the caller that the URL-mode flows of the ids the hub made
// are over: the call has its result.
func (r *Rounds) Done(ctx context.Context) {
	if len(r.minted) == 0 {
		return // every call's path: nothing to look up
	}
	rel := From(ctx)
	if rel == nil {
		return
	}
	for _, id := range r.minted {
		rel.Notify(string(mcp.MethodNotificationElicitationComplete), map[string]any{"elicitationId": id})
	}
}

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/guardrails"
	"github.com/purko-io/mcp-hub/internal/pipeline"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/rounds"
)

// relay brings what an upstream sends during a call to the caller's session.
type relay struct {
	s   *Server
	ctx context.Context // the caller's request: it names the session
	// ask, when set, puts server requests to a 2026-07-28 caller as the
	// input requests of its call's next round (package rounds); url says
	// the caller takes URL-mode elicitation there.
	ask rounds.Ask
	url bool
}

func (s *Server) relayFor(ctx context.Context) registry.Relay { return &relay{s: s, ctx: ctx} }

// askRelay is the relay of a 2026-07-28 caller's call kept between rounds.
func (s *Server) askRelay(ctx context.Context, ask rounds.Ask, url bool) registry.Relay {
	return &relay{s: s, ctx: ctx, ask: ask, url: url}
}

// ElicitsURLInRounds says a sign-in may be asked as a round of the call
// (calltoken.URLRounds).
func (r *relay) ElicitsURLInRounds() bool { return r.ask != nil && r.url }

func (r *relay) Notify(method string, params map[string]any) {
	if r.ask != nil && method == string(mcp.MethodNotificationElicitationComplete) {
		return // a 2026-07-28 caller learns the outcome by its next round
	}
	if method == string(mcp.MethodNotificationMessage) {
		lvl, _ := params["level"].(string)
		if !r.s.feat.Admits(r.ctx, mcp.LoggingLevel(lvl)) {
			return
		}
	}
	if pipeline.Filters(callers.From(r.ctx)) && method == string(mcp.MethodNotificationMessage) {
		// A log message's data is text or any JSON, never base64: the
		// filters skip a member named data (an image's), so it is
		// screened under another name.
		if d, ok := params["data"]; ok {
			wrapped := map[string]any{"logData": d}
			if !screen(r, method, guardrails.Result, &wrapped) {
				return
			}
			params = maps.Clone(params)
			params["data"] = wrapped["logData"]
		}
	}
	if !screen(r, method, guardrails.Result, &params) {
		return
	}
	ctx := r.ctx
	if ctx.Err() != nil {
		// The call has ended (a notifications/elicitation/complete comes
		// when the user's flow is over): its reply stream is gone, so the
		// notification goes on the session's GET stream, where the session
		// is the hub's (mcpsession); a WebSocket session keeps its own.
		ctx = r.s.sessions.WithSession(context.WithoutCancel(ctx), sessionID(ctx))
	}
	if err := r.s.mcp.SendNotificationToClient(ctx, method, params); err != nil {
		r.s.log.Debug().Err(err).Str("method", method).Msg("relay notification")
	}
}

// within runs under the caller's session and ends with either side.
func (r *relay) within(ctx context.Context) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancel(r.ctx)
	stop := context.AfterFunc(ctx, cancel)
	return out, func() { stop(); cancel() }
}

// Server requests and their answers cross the caller's content filters:
// the request on its way to the caller as a result does, the answer on its
// way to the upstream as arguments do. A message a filter refuses is not
// passed, and the upstream hears why.

func (r *relay) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	ctx, cancel := r.within(ctx)
	defer cancel()
	if !screen(r, string(mcp.MethodSamplingCreateMessage), guardrails.Result, &req.CreateMessageParams) {
		return nil, r.refused(mcp.MethodSamplingCreateMessage)
	}
	var res *mcp.CreateMessageResult
	var err error
	if r.ask != nil {
		res, err = rounds.Sample(ctx, r.ask, req)
	} else if handled, serr := r.s.streams.viaStream(ctx, mcp.MethodSamplingCreateMessage, req.CreateMessageParams, &res); handled {
		err = serr
	} else {
		res, err = r.s.mcp.RequestSampling(r.s.sessions.WithSession(ctx, sessionID(ctx)), req)
	}
	if err == nil && res != nil && !screen(r, string(mcp.MethodSamplingCreateMessage), guardrails.Arguments, res) {
		return nil, r.refused(mcp.MethodSamplingCreateMessage)
	}
	return res, r.unbridged(mcp.MethodSamplingCreateMessage, err)
}

func (r *relay) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	ctx, cancel := r.within(ctx)
	defer cancel()
	if !screen(r, string(mcp.MethodElicitationCreate), guardrails.Result, &req.Params) {
		return nil, r.refused(mcp.MethodElicitationCreate)
	}
	var res *mcp.ElicitationResult
	var err error
	if r.ask != nil {
		res, err = rounds.Elicit(ctx, r.ask, req)
	} else {
		res, err = r.s.mcp.RequestElicitation(ctx, req)
	}
	if err == nil && res != nil && !screen(r, string(mcp.MethodElicitationCreate), guardrails.Arguments, res) {
		return nil, r.refused(mcp.MethodElicitationCreate)
	}
	return res, r.unbridged(mcp.MethodElicitationCreate, err)
}

func (r *relay) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	ctx, cancel := r.within(ctx)
	defer cancel()
	var res *mcp.ListRootsResult
	var err error
	if r.ask != nil {
		res, err = rounds.Roots(ctx, r.ask)
	} else if handled, serr := r.s.streams.viaStream(ctx, mcp.MethodListRoots, struct{}{}, &res); handled {
		err = serr
	} else {
		res, err = r.s.mcp.RequestRoots(r.s.sessions.WithSession(ctx, sessionID(ctx)), req)
	}
	if err == nil && res != nil && !screen(r, string(mcp.MethodListRoots), guardrails.Arguments, res) {
		return nil, r.refused(mcp.MethodListRoots)
	}
	return res, r.unbridged(mcp.MethodListRoots, err)
}

// screen passes *v, a message relayed for method in direction, through
// the caller's content filters (pipeline.Screen), replacing it with what
// they let pass. It reports false when the message must not pass. A
// caller without content filters costs a nil check.
func screen[T any](r *relay, method, direction string, v *T) bool {
	caller := callers.From(r.ctx)
	if !pipeline.Filters(caller) {
		return true
	}
	raw, err := json.Marshal(*v)
	if err != nil {
		return false
	}
	out, denial := r.s.pipe.Screen(r.ctx, caller, sessionID(r.ctx), method, "", direction, raw)
	if denial != "" {
		r.s.log.Warn().Str("method", method).Str("direction", direction).Str("caller", caller.Name).Msg("relayed message withheld by a content filter")
		return false
	}
	var screened T
	if err := json.Unmarshal(out, &screened); err != nil {
		return false
	}
	*v = screened
	return true
}

// refused is the error the upstream hears for a server request (or its
// answer) the caller's content filters withheld.
func (r *relay) refused(method mcp.MCPMethod) error {
	return fmt.Errorf("mcp-hub withheld %s: the caller's content filters refuse what it holds", method)
}

// unbridged explains why a server request could not reach the caller: the
// upstream's tool reports it, and the caller reads it in the tool's error.
func (r *relay) unbridged(method mcp.MCPMethod, err error) error {
	if err == nil || r.ctx.Err() != nil {
		return err
	}
	return fmt.Errorf("mcp-hub could not pass %s to the caller (its transport or protocol revision may not take server requests: "+
		"a 2026-07-28 caller gets them as input requests when it declares the capability, and the HTTP+SSE endpoint takes none; use /mcp or /ws): %w", method, err)
}

package server

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/registry"
)

// relay brings what an upstream sends during a call to the caller's session.
type relay struct {
	s   *Server
	ctx context.Context // the caller's request: it names the session
}

func (s *Server) relayFor(ctx context.Context) registry.Relay { return &relay{s: s, ctx: ctx} }

func (r *relay) Notify(method string, params map[string]any) {
	if method == string(mcp.MethodNotificationMessage) {
		lvl, _ := params["level"].(string)
		if !r.s.feat.Admits(r.ctx, mcp.LoggingLevel(lvl)) {
			return
		}
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

func (r *relay) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	ctx, cancel := r.within(ctx)
	defer cancel()
	var res *mcp.CreateMessageResult
	handled, err := r.s.streams.viaStream(ctx, mcp.MethodSamplingCreateMessage, req.CreateMessageParams, &res)
	if !handled {
		res, err = r.s.mcp.RequestSampling(r.s.sessions.WithSession(ctx, sessionID(ctx)), req)
	}
	return res, r.unbridged(mcp.MethodSamplingCreateMessage, err)
}

func (r *relay) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	ctx, cancel := r.within(ctx)
	defer cancel()
	res, err := r.s.mcp.RequestElicitation(ctx, req)
	return res, r.unbridged(mcp.MethodElicitationCreate, err)
}

func (r *relay) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	ctx, cancel := r.within(ctx)
	defer cancel()
	var res *mcp.ListRootsResult
	handled, err := r.s.streams.viaStream(ctx, mcp.MethodListRoots, struct{}{}, &res)
	if !handled {
		res, err = r.s.mcp.RequestRoots(r.s.sessions.WithSession(ctx, sessionID(ctx)), req)
	}
	return res, r.unbridged(mcp.MethodListRoots, err)
}

// unbridged explains why a server request could not reach the caller: the
// upstream's tool reports it, and the caller reads it in the tool's error.
func (r *relay) unbridged(method mcp.MCPMethod, err error) error {
	if err == nil || r.ctx.Err() != nil {
		return err
	}
	return fmt.Errorf("mcp-hub could not pass %s to the caller (its transport or protocol revision may not take server requests: "+
		"2026-07-28 callers get them as input requests from 2026-07-28 upstreams only, and the HTTP+SSE endpoint takes none; use /mcp or /ws): %w", method, err)
}

package features

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/pipeline"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/registry/naming"
)

// subscriptions are the callers' resource subscriptions: the subscribers
// of each upstream resource (a legacy session by its id, or a 2026-07-28
// subscriptions/listen stream), each with the way to reach it, and the
// upstream subscribed to while anyone is. One upstream subscription serves
// every caller of the hub, so it is kept here, not per session; every
// subscription is decided, limited and recorded by the pipeline.
type subscriptions struct {
	reg  *registry.Registry
	log  zerolog.Logger
	pipe *pipeline.Pipeline
	// mcp is the server whose sessions subscribe (Features.Attach).
	mcp *server.MCPServer

	mu   sync.Mutex
	subs map[subKey]map[string]deliverFunc
}

// deliverFunc sends a notifications/resources/updated to one subscriber.
type deliverFunc func(params map[string]any) error

// subKey is one upstream resource subscribed to.
type subKey struct{ server, uri string }

// subscribeSession serves resources/subscribe of uri for the session of ctx (its
// mcp-go session): decided, limited and recorded by the pipeline, and the
// upstream subscribed to when this is the resource's first subscriber. A
// URI no upstream offers is the error mcp-go answers a resource it does
// not have with.
func (s *subscriptions) subscribeSession(ctx context.Context, uri string) pipeline.Result {
	id := sessionID(ctx)
	return s.serveSubscription(ctx, string(mcp.MethodResourcesSubscribe), id, uri, func(params map[string]any) error {
		return s.mcp.SendNotificationToSpecificClient(id, string(mcp.MethodNotificationResourceUpdated), params)
	})
}

// serveSubscription subscribes subscriber to uri through the pipeline
// (method names the request in its record).
func (s *subscriptions) serveSubscription(ctx context.Context, method, subscriber, uri string, deliver deliverFunc) pipeline.Result {
	_, srv, original, ok := s.resolveURI(uri)
	if !ok {
		return pipeline.Result{Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: no server in the catalog offers resource %q", method, uri)}}
	}
	rq := pipeline.Request{Method: method, Target: uri, Server: srv, Original: original}
	return s.pipe.Serve(ctx, callers.From(ctx), sessionID(ctx), rq, func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{}`), s.set(ctx, subscriber, uri, deliver)
	})
}

// set adds subscriber to the subscribers of uri (deliver reaches it),
// or removes it (deliver nil); the upstream is subscribed while anyone is.
// Adding was decided by the pipeline (serveSubscription).
func (s *subscriptions) set(ctx context.Context, subscriber, uri string, deliver deliverFunc) error {
	c, srv, original, ok := s.resolveURI(uri)
	if !ok || subscriber == "" {
		s.log.Debug().Str("uri", uri).Msg("subscription to a resource no upstream lists")
		return nil
	}
	k := subKey{server: srv, uri: original}
	if deliver != nil {
		// The subscriber hears of the resource by the URI it used.
		send := deliver
		deliver = func(params map[string]any) error {
			out := make(map[string]any, len(params))
			for k, v := range params {
				out[k] = v
			}
			out["uri"] = uri
			return send(out)
		}
	}
	s.mu.Lock()
	set := s.subs[k]
	before := len(set)
	if deliver != nil {
		if set == nil {
			set = map[string]deliverFunc{}
			s.subs[k] = set
		}
		set[subscriber] = deliver
	} else if set != nil {
		delete(set, subscriber)
		if len(set) == 0 {
			delete(s.subs, k)
		}
	}
	after := len(s.subs[k])
	s.mu.Unlock()
	switch {
	case before == 0 && after > 0:
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := c.Subscribe(cctx, original); err != nil {
			s.log.Warn().Err(err).Str("server", srv).Str("uri", original).Msg("subscribe upstream")
			return fmt.Errorf("subscribe to %s at %s: %w", original, srv, err)
		}
	case before > 0 && after == 0:
		s.unsubscribeUpstream(k)
	}
	return nil
}

// listen subscribes a 2026-07-28 subscriptions/listen stream to the
// resources in its filter, for as long as the stream is open.
func (s *subscriptions) listen(ctx context.Context, id any, req *mcp.SubscriptionsListenRequest) {
	uris := req.Params.Notifications.ResourceSubscriptions
	if len(uris) == 0 {
		return
	}
	subscriber := fmt.Sprintf("listen-%p", req)
	for _, uri := range uris {
		// A stream cannot be refused from here (mcp-go has opened it): a
		// resource the pipeline refuses is not subscribed, and its refusal
		// is recorded.
		s.serveSubscription(ctx, string(mcp.MethodSubscriptionsListen), subscriber, uri, func(params map[string]any) error {
			return s.mcp.SendNotificationToClient(ctx, string(mcp.MethodNotificationResourceUpdated), params)
		})
	}
	context.AfterFunc(ctx, func() { s.unsubscribeAll(subscriber) })
}

func (s *subscriptions) unsubscribeUpstream(k subKey) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c, ok := s.reg.Catalog().Upstream(k.server); ok {
		if err := c.Unsubscribe(ctx, k.uri); err != nil {
			s.log.Debug().Err(err).Str("server", k.server).Str("uri", k.uri).Msg("unsubscribe upstream")
		}
	}
}

// updated delivers an upstream's notifications/resources/updated to
// the subscribers of that resource, with the URI they know.
func (s *subscriptions) updated(srv string, params map[string]any) {
	uri, _ := params["uri"].(string)
	s.mu.Lock()
	var targets []deliverFunc
	for _, d := range s.subs[subKey{server: srv, uri: uri}] {
		targets = append(targets, d)
	}
	s.mu.Unlock()
	for _, deliver := range targets {
		if err := deliver(params); err != nil {
			s.log.Debug().Err(err).Str("uri", uri).Msg("deliver resources/updated")
		}
	}
}

// unsubscribeAll removes subscriber from every subscription.
func (s *subscriptions) unsubscribeAll(subscriber string) {
	s.mu.Lock()
	var gone []subKey
	for k, set := range s.subs {
		if _, ok := set[subscriber]; ok {
			delete(set, subscriber)
			if len(set) == 0 {
				delete(s.subs, k)
				gone = append(gone, k)
			}
		}
	}
	s.mu.Unlock()
	for _, k := range gone {
		s.unsubscribeUpstream(k)
	}
}

// resolveURI finds the upstream and its own URI for a published URI: a
// listed resource, else the first template that matches it.
func (s *subscriptions) resolveURI(uri string) (c registry.Upstream, server, original string, ok bool) {
	cat := &s.reg.Catalog().Features
	if r, found := cat.Resource(uri); found {
		return r.Client, r.Server, r.Original, true
	}
	for _, t := range cat.Templates {
		if t.Def.URITemplate != nil && t.Def.URITemplate.Regexp().MatchString(uri) {
			if original, ok := naming.UpstreamURI(t.Prefix, uri); ok {
				return t.Client, t.Server, original, true
			}
		}
	}
	return nil, "", "", false
}

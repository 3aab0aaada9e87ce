package upstream

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// Everything of MCP besides tools: resources, prompts, completions, logging,
// and what an upstream sends back while it serves one caller (progress, log
// messages, sampling, elicitation, roots).
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
//     hub's own log (never to a caller they may not belong to).
// Resource subscriptions are shared as well: the server package counts the
// sessions per URI and subscribes upstream once.

// Relay delivers what an upstream sends during one caller's request.
type Relay interface {
	// Notify sends a notification (progress with the caller's own token,
	// or a log message) to the caller.
	Notify(method string, params map[string]any)
	CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
	Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error)
	ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error)
}

type relayKey struct{}

// WithRelay returns ctx carrying r: calls made under it relay the
// upstream's messages for this caller to r.
func WithRelay(ctx context.Context, r Relay) context.Context {
	return context.WithValue(ctx, relayKey{}, r)
}

func relayFrom(ctx context.Context) Relay {
	r, _ := ctx.Value(relayKey{}).(Relay)
	return r
}

// Features is what an upstream offers besides tools, as last listed.
type Features struct {
	Capabilities mcp.ServerCapabilities
	Resources    []mcp.Resource
	Templates    []mcp.ResourceTemplate
	Prompts      []mcp.Prompt
}

// Events connects upstreams to what the hub shares among them: resource
// updates go out through it (called from the upstream's reader, it must not
// block), and it tells a newly connected server the log level to use.
type Events interface {
	ResourceUpdated(server string, params map[string]any)
	LogLevel() mcp.LoggingLevel
}

// relays tracks the requests in flight on one client: how many, and which
// of them carry a relay. A plain call costs two atomic adds.
type relays struct {
	total    atomic.Int64
	mu       sync.Mutex
	relayed  map[*relayCall]struct{}
	progress sync.Map // hub token -> *relayCall
	next     atomic.Uint64
}

type relayCall struct {
	relay Relay
	token any // the caller's progress token
}

// begin registers a request in flight on the session, with the caller's
// relay (nil when the caller takes nothing back); end undoes it.
func (rs *relays) begin(r Relay) *relayCall {
	rs.total.Add(1)
	if r == nil {
		return nil
	}
	rc := &relayCall{relay: r}
	rs.mu.Lock()
	if rs.relayed == nil {
		rs.relayed = map[*relayCall]struct{}{}
	}
	rs.relayed[rc] = struct{}{}
	rs.mu.Unlock()
	return rc
}

func (rs *relays) end(rc *relayCall) {
	if rc != nil {
		rs.mu.Lock()
		delete(rs.relayed, rc)
		rs.mu.Unlock()
	}
	rs.total.Add(-1)
}

// mapProgress registers the caller's progress token and returns the
// hub-wide unique token the upstream gets instead.
func (rs *relays) mapProgress(server string, r Relay, token any) (string, func()) {
	hub := "hub-" + server + "-" + strconv.FormatUint(rs.next.Add(1), 10)
	rs.progress.Store(hub, &relayCall{relay: r, token: token})
	return hub, func() { rs.progress.Delete(hub) }
}

// only returns the relay of the request in flight when it is the only one
// on the session: a message that came outside of any request's stream can
// belong to no other. Nil when there are several, or the one takes nothing.
func (rs *relays) only() Relay {
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

// notification handles what the upstream's session delivers outside of a
// response: list changes, resource updates, progress and log messages.
func (c *Client) notification(n mcp.JSONRPCNotification) {
	switch mcp.MCPMethod(n.Method) {
	case mcp.MethodNotificationToolsListChanged,
		mcp.MethodNotificationResourcesListChanged,
		mcp.MethodNotificationPromptsListChanged:
		select {
		case c.refresh <- struct{}{}:
		default:
		}
	case mcp.MethodNotificationSubscriptionsAcknowledged:
		select {
		case c.acked <- struct{}{}:
		default:
		}
	case mcp.MethodNotificationResourceUpdated:
		if c.opts.Events != nil {
			c.opts.Events.ResourceUpdated(c.spec.Name, n.Params.AdditionalFields)
		}
	case mcp.MethodNotificationProgress:
		token := fmt.Sprint(n.Params.AdditionalFields["progressToken"])
		v, ok := c.relays.progress.Load(token)
		if !ok {
			return
		}
		rc := v.(*relayCall)
		params := make(map[string]any, len(n.Params.AdditionalFields))
		for k, v := range n.Params.AdditionalFields {
			params[k] = v
		}
		params = c.cred.fields(params)
		params["progressToken"] = rc.token
		rc.relay.Notify(n.Method, params)
	case mcp.MethodNotificationMessage:
		if r := c.relays.only(); r != nil {
			r.Notify(n.Method, c.cred.fields(n.Params.AdditionalFields))
			return
		}
		c.log.Debug().RawJSON("message", c.cred.json(n.Params.AdditionalFields)).Msg("upstream log message with no single caller to deliver it to")
	}
}

// handlers answers the upstream's requests to the client on behalf of the
// caller whose call caused them.
type handlers struct{ c *Client }

var (
	_ client.SamplingHandler    = handlers{}
	_ client.ElicitationHandler = handlers{}
	_ client.RootsHandler       = handlers{}
)

func (h handlers) relay(ctx context.Context, method string) (Relay, error) {
	if r := relayFrom(ctx); r != nil {
		return r, nil
	}
	if r := h.c.relays.only(); r != nil {
		return r, nil
	}
	return nil, fmt.Errorf("mcp-hub cannot pass %s from %s to a caller: it arrived outside the stream of the request it belongs to, "+
		"and that request's caller takes no server requests or other requests were in flight", method, h.c.spec.Name)
}

func (h handlers) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	r, err := h.relay(ctx, string(mcp.MethodSamplingCreateMessage))
	if err != nil {
		return nil, err
	}
	return r.CreateMessage(ctx, req)
}

func (h handlers) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	r, err := h.relay(ctx, string(mcp.MethodElicitationCreate))
	if err != nil {
		return nil, err
	}
	return r.Elicit(ctx, req)
}

func (h handlers) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	r, err := h.relay(ctx, string(mcp.MethodListRoots))
	if err != nil {
		return nil, err
	}
	return r.ListRoots(ctx, req)
}

// Features returns what the server offers besides tools, as last listed
// (kept while it is down, like its tools).
func (c *Client) Features() Features {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.features
}

// rpcSentinels are the errors mcp-go's client makes of JSON-RPC error codes.
var rpcSentinels = []struct {
	err  error
	code int
}{
	{mcp.ErrParseError, mcp.PARSE_ERROR},
	{mcp.ErrInvalidRequest, mcp.INVALID_REQUEST},
	{mcp.ErrMethodNotFound, mcp.METHOD_NOT_FOUND},
	{mcp.ErrInvalidParams, mcp.INVALID_PARAMS},
	{mcp.ErrInternalError, mcp.INTERNAL_ERROR},
	{mcp.ErrRequestInterrupted, mcp.REQUEST_INTERRUPTED},
	{mcp.ErrResourceNotFound, mcp.RESOURCE_NOT_FOUND},
}

// fulfil answers a 2026-07-28 upstream's input requests through the
// caller's relay, one by one, as mcp-go's client would with these handlers.
func (h handlers) fulfil(ctx context.Context, reqs mcp.InputRequests) (mcp.InputResponses, error) {
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

// subscribe sends resources/subscribe (or unsubscribe) on cn. On 2026-07-28
// a subscription is part of the subscriptions/listen filter, so the listen
// stream is opened again with the new filter (it replaces the old one).
func (cn *conn) subscribe(ctx context.Context, uri string, on bool) error {
	c := cn.c
	var err error
	if on {
		req := mcp.SubscribeRequest{}
		req.Params.URI = uri
		err = cn.mc.Subscribe(ctx, req)
	} else {
		req := mcp.UnsubscribeRequest{}
		req.Params.URI = uri
		err = cn.mc.Unsubscribe(ctx, req)
	}
	if err == nil && mcp.IsModernProtocol(cn.protocol) {
		f := cn.mc.PendingSubscriptionFilter()
		base := listenFilter(cn.mc.GetServerCapabilities())
		f.ToolsListChanged, f.PromptsListChanged, f.ResourcesListChanged = base.ToolsListChanged, base.PromptsListChanged, base.ResourcesListChanged
		// Wait for the new stream to be in place, so an update sent after
		// Subscribe returns is not missed.
		select {
		case <-c.acked:
		default:
		}
		cn.listen(f)
		select {
		case <-c.acked:
		case <-ctx.Done():
			return fmt.Errorf("subscriptions/listen not acknowledged: %w", ctx.Err())
		}
	}
	return err
}

// Extras is what a connected upstream offers callers besides its tools:
// resources, prompts, completions, resource subscriptions and its log
// level. It is a handle of its own so that Client is about the
// connection's life and its tools; the registry hands Extras out
// (registry.Upstream) to the faces that serve these requests.
type Extras struct {
	c *Client

	mu sync.Mutex
	// subscribed are the resource URIs callers are subscribed to; they
	// are subscribed again after a reconnect.
	subscribed map[string]bool
}

// Extras returns the client's handle for what it offers besides tools.
func (c *Client) Extras() *Extras { return &c.extras }

// Name returns the server name.
func (x *Extras) Name() string { return x.c.spec.Name }

// ReadResource reads uri (the upstream's own URI) for a caller.
func (x *Extras) ReadResource(ctx context.Context, uri string, req mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	res, err := x.c.call(ctx, "resources/read "+uri, func(ctx context.Context, cn *conn) (any, error) {
		fwd := mcp.ReadResourceRequest{}
		fwd.Params.URI = uri
		fwd.Params.Arguments = req.Params.Arguments
		return cn.mc.ReadResource(ctx, fwd)
	})
	if err != nil {
		return nil, err
	}
	return redactParsed(&x.c.cred, res.(*mcp.ReadResourceResult), mcp.ParseReadResourceResult)
}

// GetPrompt gets the upstream's prompt called name for a caller.
func (x *Extras) GetPrompt(ctx context.Context, name string, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	res, err := x.c.call(ctx, "prompts/get "+name, func(ctx context.Context, cn *conn) (any, error) {
		fwd := mcp.GetPromptRequest{}
		fwd.Params.Name = name
		fwd.Params.Arguments = req.Params.Arguments
		return cn.mc.GetPrompt(ctx, fwd)
	})
	if err != nil {
		return nil, err
	}
	return redactParsed(&x.c.cred, res.(*mcp.GetPromptResult), mcp.ParseGetPromptResult)
}

// Complete asks the upstream for completions; ref already names the
// upstream's own prompt or URI template.
func (x *Extras) Complete(ctx context.Context, ref any, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	res, err := x.c.call(ctx, "completion/complete", func(ctx context.Context, cn *conn) (any, error) {
		req := mcp.CompleteRequest{}
		req.Params.Ref = ref
		req.Params.Argument = arg
		req.Params.Context = cctx
		return cn.mc.Complete(ctx, req)
	})
	if err != nil {
		return nil, err
	}
	red, err := redactParsed(&x.c.cred, res.(*mcp.CompleteResult), decodeAs[mcp.CompleteResult])
	if err != nil {
		return nil, err
	}
	return &red.Completion, nil
}

// Subscribe asks the upstream for notifications/resources/updated of uri.
// The hub remembers it and subscribes again after a reconnect.
func (x *Extras) Subscribe(ctx context.Context, uri string) error {
	return x.setSubscribed(ctx, uri, true)
}

// Unsubscribe ends the subscription to uri.
func (x *Extras) Unsubscribe(ctx context.Context, uri string) error {
	return x.setSubscribed(ctx, uri, false)
}

// setSubscribed remembers (on) or forgets uri and tells the upstream.
func (x *Extras) setSubscribed(ctx context.Context, uri string, on bool) error {
	x.mu.Lock()
	if on {
		if x.subscribed == nil {
			x.subscribed = map[string]bool{}
		}
		x.subscribed[uri] = true
	} else {
		delete(x.subscribed, uri)
	}
	x.mu.Unlock()
	what := "resources/subscribe "
	if !on {
		what = "resources/unsubscribe "
	}
	_, err := x.c.call(ctx, what+uri, func(ctx context.Context, cn *conn) (any, error) {
		return nil, cn.subscribe(ctx, uri, on)
	})
	return err
}

// resubscribe renews the remembered subscriptions on a new session.
func (x *Extras) resubscribe(cn *conn) {
	x.mu.Lock()
	uris := make([]string, 0, len(x.subscribed))
	for u := range x.subscribed {
		uris = append(uris, u)
	}
	x.mu.Unlock()
	for _, u := range uris {
		ctx, cancel := context.WithTimeout(cn.ctx, x.c.opts.ConnectTimeout)
		if err := cn.subscribe(ctx, u, true); err != nil {
			x.c.log.Warn().Err(x.c.cred.redact(err)).Str("uri", u).Msg("subscribe again after reconnect")
		}
		cancel()
	}
}

// SetLogLevel forwards logging/setLevel when the server offers logging.
func (x *Extras) SetLogLevel(ctx context.Context, level mcp.LoggingLevel) error {
	if x.c.Features().Capabilities.Logging == nil {
		return nil
	}
	_, err := x.c.call(ctx, "logging/setLevel", func(ctx context.Context, cn *conn) (any, error) {
		req := mcp.SetLevelRequest{}
		req.Params.Level = level
		if err := cn.mc.SetLevel(ctx, req); err != nil {
			return nil, err
		}
		cn.level.Store(&level)
		return nil, nil
	})
	return err
}

package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/upstream/calltoken"
	"github.com/purko-io/mcp-hub/internal/upstream/credentials"
)

// Everything of MCP besides tools: resources, prompts, completions, logging,
// and what an upstream sends back while it serves one caller (progress, log
// messages, sampling, elicitation, roots), which package relay carries to
// that caller. Resource subscriptions are shared: the server package
// counts the sessions per URI and subscribes upstream once.

// Features is what an upstream offers besides tools, as last listed.
type Features struct {
	Capabilities mcp.ServerCapabilities
	Resources    []mcp.Resource
	Templates    []mcp.ResourceTemplate
	Prompts      []mcp.Prompt
	// Instructions are what the server said at initialize of how to use
	// it. The hub answers its callers' initialize with its own, and never
	// passes these on; its screening reads them (a server that writes a
	// prompt injection there is not to be trusted with the rest).
	Instructions string
}

// Events connects upstreams to what the hub shares among them: resource
// updates go out through it (called from the upstream's reader, it must not
// block), and it tells a newly connected server the log level to use.
type Events interface {
	ResourceUpdated(server string, params map[string]any)
	// TaskStatus hears of a task's new status (the upstream's own task id).
	TaskStatus(server string, params map[string]any)
	LogLevel() mcp.LoggingLevel
}

// notification handles what the upstream's session delivers outside of a
// response: list changes, resource updates, progress, log messages and the
// end of a URL-mode elicitation.
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
	case mcp.MethodNotificationTasksStatus:
		if c.opts.Events != nil {
			c.opts.Events.TaskStatus(c.spec.Name, c.cred.Fields(n.Params.AdditionalFields))
		}
	case mcp.MethodNotificationProgress:
		token := fmt.Sprint(n.Params.AdditionalFields["progressToken"])
		r, callerToken, ok := c.relays.Progress(token)
		if !ok {
			return
		}
		params := make(map[string]any, len(n.Params.AdditionalFields))
		for k, v := range n.Params.AdditionalFields {
			params[k] = v
		}
		params = c.cred.Fields(params)
		params["progressToken"] = callerToken
		r.Notify(n.Method, params)
	case mcp.MethodNotificationElicitationComplete:
		// The caller the elicitation went to, else the one caller in
		// flight; never a caller it may not belong to.
		id, _ := n.Params.AdditionalFields["elicitationId"].(string)
		r, ok := c.relays.Completed(id)
		if !ok {
			r = c.relays.Only()
		}
		if r == nil {
			c.log.Debug().Msg("upstream notifications/elicitation/complete for an elicitation no caller is known for")
			return
		}
		r.Notify(n.Method, c.cred.Fields(n.Params.AdditionalFields))
	case mcp.MethodNotificationMessage:
		if r := c.relays.Only(); r != nil {
			r.Notify(n.Method, c.cred.Fields(n.Params.AdditionalFields))
			return
		}
		c.log.Debug().RawJSON("message", c.cred.JSON(n.Params.AdditionalFields)).Msg("upstream log message with no single caller to deliver it to")
	}
}

// Features returns what the server offers besides tools, as last listed
// (kept while it is down, like its tools).
func (c *Client) Features() Features {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.features
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
	ctx, b, err := calltoken.On(ctx, x.c.perCall, x.c.spec.Name)
	if err != nil {
		return nil, err
	}
	res, err := x.c.call(ctx, "resources/read "+uri, func(ctx context.Context, cn *conn) (any, error) {
		fwd := mcp.ReadResourceRequest{}
		fwd.Params.URI = uri
		fwd.Params.Arguments = req.Params.Arguments
		res, err := cn.mc.ReadResource(ctx, fwd)
		return res, b.Failed(err)
	})
	if err != nil {
		return nil, b.Err(err)
	}
	return credentials.Parsed(x.c.cred, res.(*mcp.ReadResourceResult), mcp.ParseReadResourceResult)
}

// GetPrompt gets the upstream's prompt called name for a caller.
func (x *Extras) GetPrompt(ctx context.Context, name string, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	ctx, b, err := calltoken.On(ctx, x.c.perCall, x.c.spec.Name)
	if err != nil {
		return nil, err
	}
	res, err := x.c.call(ctx, "prompts/get "+name, func(ctx context.Context, cn *conn) (any, error) {
		fwd := mcp.GetPromptRequest{}
		fwd.Params.Name = name
		fwd.Params.Arguments = req.Params.Arguments
		res, err := cn.mc.GetPrompt(ctx, fwd)
		return res, b.Failed(err)
	})
	if err != nil {
		return nil, b.Err(err)
	}
	return credentials.Parsed(x.c.cred, res.(*mcp.GetPromptResult), mcp.ParseGetPromptResult)
}

// Complete asks the upstream for completions; ref already names the
// upstream's own prompt or URI template.
func (x *Extras) Complete(ctx context.Context, ref any, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	ctx, b, err := calltoken.On(ctx, x.c.perCall, x.c.spec.Name)
	if err != nil {
		return nil, err
	}
	res, err := x.c.call(ctx, "completion/complete", func(ctx context.Context, cn *conn) (any, error) {
		req := mcp.CompleteRequest{}
		req.Params.Ref = ref
		req.Params.Argument = arg
		req.Params.Context = cctx
		res, err := cn.mc.Complete(ctx, req)
		return res, b.Failed(err)
	})
	if err != nil {
		return nil, b.Err(err)
	}
	red, err := credentials.Parsed(x.c.cred, res.(*mcp.CompleteResult), credentials.DecodeAs[mcp.CompleteResult])
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
			x.c.log.Warn().Err(x.c.cred.Redact(err)).Str("uri", u).Msg("subscribe again after reconnect")
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

// Request sends one request the hub routes by its own reading of params
// (tasks/get, tasks/result, tasks/cancel, tasks/list: params already name
// the upstream's own task) and returns the result's bytes, redacted of the
// server's credentials like a tool's result.
func (x *Extras) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	ctx, b, err := calltoken.On(ctx, x.c.perCall, x.c.spec.Name)
	if err != nil {
		return nil, err
	}
	res, err := x.c.call(ctx, method, func(ctx context.Context, cn *conn) (any, error) {
		o := cn.out.Load()
		params, header := o.taskRequest(method, params)
		res, err := o.wire(false).Request(ctx, mcp.MCPMethod(method), params, header)
		return res, b.Failed(err)
	})
	if err != nil {
		return nil, b.Err(err)
	}
	out, err := x.c.cred.Result(res.(json.RawMessage))
	return b.Result(out), err
}

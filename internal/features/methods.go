package features

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/dispatch"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/pipeline"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/registry/naming"
)

// The methods of MCP beyond tools, served by the hub's dispatcher
// (internal/dispatch): every list from the catalog, filtered by the
// decision of use; every read, prompt, completion and subscription through
// the pipeline. A result is the pipeline's bytes; an error is the
// pipeline's JSON-RPC error as it is.

// Register makes d serve the methods of MCP beyond tools. relayFor brings
// what an upstream sends during a read or a prompt to the caller's
// session (the faces' relay).
func (f *Features) Register(d *dispatch.Dispatcher, relayFor func(context.Context) registry.Relay) {
	f.relayFor = relayFor
	d.Handle(string(mcp.MethodResourcesList), f.listResources)
	d.Handle(string(mcp.MethodResourcesTemplatesList), f.listTemplates)
	d.Handle(string(mcp.MethodPromptsList), f.listPrompts)
	// The pipeline makes the span of what it serves.
	d.HandleTraced(string(mcp.MethodResourcesRead), f.readResource)
	d.HandleTraced(string(mcp.MethodPromptsGet), f.getPromptMethod)
	d.HandleTraced(string(mcp.MethodCompletionComplete), f.complete)
	d.HandleTraced(string(mcp.MethodResourcesSubscribe), f.subs.subscribeMethod)
	d.Handle(string(mcp.MethodResourcesUnsubscribe), f.subs.unsubscribeMethod)
}

// params reads a request's params into p; absent params leave p zero.
func params(req *dispatch.Request, p any) error {
	if len(req.Msg.Params) == 0 || string(req.Msg.Params) == "null" {
		return nil
	}
	if err := json.Unmarshal(req.Msg.Params, p); err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid params of %s: %v", req.Msg.Method, err)}
	}
	return nil
}

// result encodes a list or an acknowledgement.
func result(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode the result: %w", err)
	}
	return b, nil
}

// outcome is the pipeline's answer as a handler returns it.
func outcome(out pipeline.Result) (json.RawMessage, error) {
	if out.Error != nil {
		return nil, out.Error
	}
	return out.Result, nil
}

// withSession is ctx with the id of the session req came on, for the
// pipeline's record and the subscriptions.
type sessionKey struct{}

func withSession(ctx context.Context, req *dispatch.Request) context.Context {
	return context.WithValue(ctx, sessionKey{}, req.Session)
}

// list serves a list through the pipeline (a List): limited, its result
// screened by the caller's content filters, recorded; build makes it of
// the items the caller may use.
func (f *Features) list(ctx context.Context, req *dispatch.Request, build func() (json.RawMessage, error)) (json.RawMessage, error) {
	out := f.pipe.Serve(ctx, callers.From(ctx), req.Session, pipeline.Request{Method: req.Msg.Method, List: true},
		func(context.Context, json.RawMessage) (json.RawMessage, error) { return build() })
	return outcome(out)
}

func (f *Features) listResources(ctx context.Context, req *dispatch.Request) (json.RawMessage, error) {
	return f.list(ctx, req, func() (json.RawMessage, error) {
		cat := &f.reg.Catalog().Features
		items := make([]mcp.Resource, len(cat.Resources))
		for i, r := range cat.Resources {
			items[i] = r.Def
		}
		items = keepAllowed(ctx, items, func(r mcp.Resource) (string, string, string) {
			x, _ := cat.Resource(r.URI)
			return x.Server, r.URI, x.Original
		})
		return json.Marshal(mcp.ListResourcesResult{Resources: items})
	})
}

func (f *Features) listTemplates(ctx context.Context, req *dispatch.Request) (json.RawMessage, error) {
	return f.list(ctx, req, func() (json.RawMessage, error) {
		cat := &f.reg.Catalog().Features
		items := make([]mcp.ResourceTemplate, len(cat.Templates))
		for i, t := range cat.Templates {
			items[i] = t.Def
		}
		items = keepAllowed(ctx, items, func(t mcp.ResourceTemplate) (string, string, string) {
			if t.URITemplate == nil {
				return "", "", ""
			}
			x, _ := cat.Template(t.URITemplate.Raw())
			return x.Server, t.URITemplate.Raw(), x.Original
		})
		return json.Marshal(mcp.ListResourceTemplatesResult{ResourceTemplates: items})
	})
}

func (f *Features) listPrompts(ctx context.Context, req *dispatch.Request) (json.RawMessage, error) {
	return f.list(ctx, req, func() (json.RawMessage, error) {
		cat := &f.reg.Catalog().Features
		items := make([]mcp.Prompt, len(cat.Prompts))
		for i, p := range cat.Prompts {
			items[i] = p.Def
		}
		items = keepAllowed(ctx, items, func(p mcp.Prompt) (string, string, string) {
			x, _ := cat.Prompt(p.Name)
			return x.Server, p.Name, x.Original
		})
		return json.Marshal(mcp.ListPromptsResult{Prompts: items})
	})
}

// readResource serves resources/read: a listed resource by its URI, else
// the first template that matches it.
func (f *Features) readResource(ctx context.Context, req *dispatch.Request) (json.RawMessage, error) {
	var rr mcp.ReadResourceRequest
	if err := params(req, &rr.Params); err != nil {
		return nil, err
	}
	ctx = withSession(ctx, req)
	cat := &f.reg.Catalog().Features
	if r, ok := cat.Resource(rr.Params.URI); ok {
		return outcome(f.read(ctx, r.Server, r.Prefix, r.Original, r.Client, rr))
	}
	for _, t := range cat.Templates {
		if t.Def.URITemplate != nil && t.Def.URITemplate.Regexp().MatchString(rr.Params.URI) {
			if uri, ok := naming.UpstreamURI(t.Prefix, rr.Params.URI); ok {
				return outcome(f.read(ctx, t.Server, t.Prefix, uri, t.Client, rr))
			}
		}
	}
	if !featuresAllowed(callers.From(ctx)) {
		return nil, &jsonrpc.Error{Code: pipeline.CodeDenied, Message: pipeline.DecideRequest(callers.From(ctx), "", rr.Params.URI, rr.Params.URI)}
	}
	return nil, &jsonrpc.Error{Code: notFoundCode(ctx, req),
		Message: fmt.Sprintf("resource %q not found: no server in the catalog offers it", rr.Params.URI)}
}

// notFoundCode is the code of an unknown resource: -32002 before
// 2026-07-28, invalid params from it on (as mcp-go answers).
func notFoundCode(ctx context.Context, req *dispatch.Request) int {
	v := server.RequestProtocolVersion(ctx)
	if req.Header != nil && v == "" {
		v = req.Header.Get(mcp.HeaderProtocolVersion)
	}
	if mcp.IsModernProtocol(v) {
		return jsonrpc.CodeInvalidParams
	}
	return mcp.RESOURCE_NOT_FOUND
}

func (f *Features) getPromptMethod(ctx context.Context, req *dispatch.Request) (json.RawMessage, error) {
	var gp mcp.GetPromptRequest
	if err := params(req, &gp.Params); err != nil {
		return nil, err
	}
	p, ok := f.reg.Catalog().Features.Prompt(gp.Params.Name)
	if !ok {
		if !featuresAllowed(callers.From(ctx)) {
			return nil, &jsonrpc.Error{Code: pipeline.CodeDenied, Message: pipeline.DecideRequest(callers.From(ctx), "", gp.Params.Name, gp.Params.Name)}
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("prompt %q not found: no server in the catalog offers it", gp.Params.Name)}
	}
	return outcome(f.getPrompt(withSession(ctx, req), p, gp))
}

// complete serves completion/complete: the reference is a prompt or a
// resource (a template's URI or a listed resource's).
func (f *Features) complete(ctx context.Context, req *dispatch.Request) (json.RawMessage, error) {
	var p struct {
		Ref struct {
			Type string `json:"type"`
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"ref"`
		Argument mcp.CompleteArgument `json:"argument"`
		Context  mcp.CompleteContext  `json:"context"`
	}
	if err := params(req, &p); err != nil {
		return nil, err
	}
	ctx = withSession(ctx, req)
	c := completer{f}
	var out pipeline.Result
	switch p.Ref.Type {
	case "ref/prompt":
		out = c.prompt(ctx, p.Ref.Name, p.Argument, p.Context)
	case "ref/resource":
		out = c.resource(ctx, p.Ref.URI, p.Argument, p.Context)
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("completion/complete: unknown reference type %q (ref/prompt or ref/resource)", p.Ref.Type)}
	}
	if out.Error != nil {
		return nil, out.Error
	}
	// The result is the completion wrapped, values never null.
	var comp mcp.Completion
	if err := json.Unmarshal(out.Result, &comp); err != nil {
		return nil, fmt.Errorf("read the completion: %w", err)
	}
	if comp.Values == nil {
		comp.Values = []string{}
	}
	return result(mcp.CompleteResult{Completion: comp})
}

func (s *subscriptions) subscribeMethod(ctx context.Context, req *dispatch.Request) (json.RawMessage, error) {
	var p struct {
		URI string `json:"uri"`
	}
	if err := params(req, &p); err != nil {
		return nil, err
	}
	return outcome(s.subscribeSession(withSession(ctx, req), p.URI))
}

func (s *subscriptions) unsubscribeMethod(ctx context.Context, req *dispatch.Request) (json.RawMessage, error) {
	var p struct {
		URI string `json:"uri"`
	}
	if err := params(req, &p); err != nil {
		return nil, err
	}
	_ = s.set(ctx, req.Session, p.URI, nil)
	return json.RawMessage(`{}`), nil
}

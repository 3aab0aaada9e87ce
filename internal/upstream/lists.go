package upstream

import (
	"context"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/upstream/credentials"
	"github.com/purko-io/mcp-hub/internal/upstream/listbound"
)

// What an upstream lists is bounded (package listbound): pages of each
// list, tools, and bytes of all lists of one listing. Over a bound the
// listing fails with a *listbound.Error; the server is in error and
// publishes nothing (setFailed).

// lists lists the server's tools, and its resources, resource templates
// and prompts as its capabilities announce them, within the bounds. Only a
// failed tools/list or a bound fails it: a server that fails another list
// keeps the rest.
func (cn *conn) lists(ctx context.Context) ([]mcp.Tool, Features, error) {
	c := cn.c
	l := listbound.New(c.spec.Name, listbound.Bounds{Pages: c.opts.MaxListPages, Tools: c.opts.MaxTools, Bytes: c.opts.MaxListBytes},
		c.spec.Transport == config.TransportStreamableHTTP)
	tools, err := cn.listTools(ctx, l)
	if err != nil {
		return nil, Features{}, err
	}
	f, err := cn.listFeatures(ctx, l)
	if err != nil {
		return tools, f, err
	}
	// A credential the upstream writes into its lists (the hub's token, or
	// the caller's grant its own requests carried) reaches nobody.
	red, err := credentials.Parsed(c.cred, &listed{tools, f.Resources, f.Templates, f.Prompts}, credentials.DecodeAs[listed])
	if err != nil {
		return nil, Features{}, err
	}
	f.Resources, f.Templates, f.Prompts = red.Resources, red.Templates, red.Prompts
	return red.Tools, f, nil
}

// listed is what a listing publishes.
type listed struct {
	Tools     []mcp.Tool
	Resources []mcp.Resource
	Templates []mcp.ResourceTemplate
	Prompts   []mcp.Prompt
}

// listFeatures lists resources, templates and prompts as the server's
// capabilities announce them, on l's bounds.
func (cn *conn) listFeatures(ctx context.Context, l *listbound.Listing) (Features, error) {
	f := Features{Capabilities: cn.mc.GetServerCapabilities(), Instructions: cn.instructions}
	if f.Capabilities.Resources != nil {
		res, err := listbound.Collect(ctx, l, string(mcp.MethodResourcesList), listbound.ByPage(
			func(ctx context.Context, p mcp.PaginatedRequest) (*mcp.ListResourcesResult, error) {
				return cn.mc.ListResourcesByPage(ctx, mcp.ListResourcesRequest{PaginatedRequest: p})
			},
			func(r *mcp.ListResourcesResult) ([]mcp.Resource, mcp.Cursor) { return r.Resources, r.NextCursor }))
		if err != nil && !cn.goOn(err, "list resources", zerolog.WarnLevel) {
			return Features{}, err
		}
		tmpl, err := listbound.Collect(ctx, l, string(mcp.MethodResourcesTemplatesList), listbound.ByPage(
			func(ctx context.Context, p mcp.PaginatedRequest) (*mcp.ListResourceTemplatesResult, error) {
				return cn.mc.ListResourceTemplatesByPage(ctx, mcp.ListResourceTemplatesRequest{PaginatedRequest: p})
			},
			func(r *mcp.ListResourceTemplatesResult) ([]mcp.ResourceTemplate, mcp.Cursor) {
				return r.ResourceTemplates, r.NextCursor
			}))
		if err != nil && !cn.goOn(err, "list resource templates", zerolog.DebugLevel) {
			return Features{}, err
		}
		f.Resources, f.Templates = res, tmpl
	}
	if f.Capabilities.Prompts != nil {
		prompts, err := listbound.Collect(ctx, l, string(mcp.MethodPromptsList), listbound.ByPage(
			func(ctx context.Context, p mcp.PaginatedRequest) (*mcp.ListPromptsResult, error) {
				return cn.mc.ListPromptsByPage(ctx, mcp.ListPromptsRequest{PaginatedRequest: p})
			},
			func(r *mcp.ListPromptsResult) ([]mcp.Prompt, mcp.Cursor) { return r.Prompts, r.NextCursor }))
		if err != nil && !cn.goOn(err, "list prompts", zerolog.WarnLevel) {
			return Features{}, err
		}
		f.Prompts = prompts
	}
	return f, nil
}

// goOn logs a list that failed short of a bound at level and reports that
// the listing goes on without it; a bound ends the listing.
func (cn *conn) goOn(err error, what string, level zerolog.Level) bool {
	c := cn.c
	var over *listbound.Error
	if errors.As(err, &over) {
		return false
	}
	c.log.WithLevel(level).Err(c.cred.Redact(err)).Msg(what)
	return true
}

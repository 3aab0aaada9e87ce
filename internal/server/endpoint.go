package server

import (
	"context"
	"net/http"
	"strconv"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// endpointBase is where each server's and virtual server's own faces are
// mounted: /servers/NAME/mcp, /sse, /messages, /ws. The catalog's view
// under it is narrowed to the endpoint's tools (autonomy.Scope); every
// other rule applies as on /mcp, so an endpoint can only narrow.
const endpointBase = "/servers/{name}"

// endpointPath is the base of the faces of the endpoint called name.
func endpointPath(name string) string { return "/servers/" + name }

// scoped serves next narrowed to the endpoint the path names, resolved on
// every request against the current catalog: a virtual server redefined or
// removed takes effect on the next request of a session already open.
// Call behind requireCaller.
func scoped(reg *registry.Registry, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		ep, ok := reg.Catalog().Endpoint(name)
		if !ok {
			jsonrpc.Refuse(w, http.StatusNotFound, jsonrpc.CodeInvalidRequest, nil,
				"no server or virtual server named "+quoteName(name)+" (GET /api/mcp/servers lists them)")
			return
		}
		c := callers.From(r.Context())
		c.Scope = ep.Scope
		next.ServeHTTP(w, r.WithContext(callers.With(r.Context(), c)))
	})
}

// stdioScope is the scope of the stdio face serving the endpoint called
// name ("" the whole hub), resolved on every message like scoped. An
// endpoint that is gone publishes nothing until it is back.
func stdioScope(ctx context.Context, reg *registry.Registry, name string) context.Context {
	if name == "" {
		return ctx
	}
	c := callers.From(ctx)
	if ep, ok := reg.Catalog().Endpoint(name); ok {
		c.Scope = ep.Scope
	} else {
		c.Scope = autonomy.VirtualScope(toolspec.VirtualServer{Name: name})
	}
	return callers.With(ctx, c)
}

// sseBase is the base path of the message endpoint an SSE stream names in
// its endpoint event: the endpoint's own, so its messages stay narrowed.
func sseBase(r *http.Request) string {
	if name := r.PathValue("name"); name != "" {
		return endpointPath(name)
	}
	return ""
}

// quoteName quotes a name from a path for a message (strconv.Quote,
// so whatever the caller sent prints as one Go string), cut short.
func quoteName(name string) string {
	if len(name) > 64 {
		name = name[:64] + "..."
	}
	return strconv.Quote(name)
}

// Package adminapi is the hub's REST API for operators and Purko's
// dashboard, with its OpenAPI document: the catalog's listing (GET
// /api/mcp/tools), the servers in Purko's shape and their registration
// (GET /api/mcp/servers, POST /api/mcp/server, DELETE
// /api/mcp/server/{name}), tool pins and their approval (GET
// /api/mcp/pins, POST /api/mcp/pins/approve), /api/openapi.json, and the
// catalog as an MCP Registry (GET /v0.1/servers..., mcpregistry.go).
// Listings are open to everyone; every write needs an admin caller, behind
// the same guards as the MCP faces (Mount's guard). It reads the
// registry's catalog and writes only through the registry (pins) and the
// registrations store, whose changes reach the catalog the way discovery's
// do.
package adminapi

import (
	"net/http"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/registrations"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// Options are what the API reads and writes through.
type Options struct {
	// Registry is the catalog listed, and where pins are approved.
	Registry *registry.Registry
	// Auth tells admins apart on the open listings: what an upstream
	// answered (a status's detail) is shown to admins only.
	Auth *callers.Auth
	// Visible is the decision of the faces' tools/list, for the listing's
	// ?autonomy=<level>: what a caller at that level sees.
	Visible func(callers.Caller, registry.Tool) bool
	// Registrations stores the servers registered through POST
	// /api/mcp/server; nil, the write endpoints answer 501.
	Registrations registrations.Writer
	// Log gets the audit lines of writes and refusals.
	Log zerolog.Logger
	// RegistryAPI shapes the MCP Registry API's documents (/v0.1/servers).
	RegistryAPI RegistryOptions
}

// API serves the REST API's routes.
type API struct {
	reg        *registry.Registry
	auth       *callers.Auth
	visible    func(callers.Caller, registry.Tool) bool
	registered registrations.Writer // nil: no registrations
	log        zerolog.Logger
	mcpReg     *mcpRegistry
}

// New returns the API over o.
func New(o Options) *API {
	return &API{reg: o.Registry, auth: o.Auth, visible: o.Visible, registered: o.Registrations, log: o.Log,
		mcpReg: newMCPRegistry(o.Registry, o.Auth, o.RegistryAPI)}
}

// Mount registers the API's routes on mux. guard wraps every write ahead
// of the admin check: the MCP faces' Origin and Content-Type checks and
// the caller's authentication (callers.With), so a write is refused as a
// face would refuse it.
func (a *API) Mount(mux *http.ServeMux, guard func(http.Handler) http.Handler) {
	mux.HandleFunc("GET /api/mcp/tools", a.handleTools)
	mux.HandleFunc("GET /api/mcp/pins", a.handlePins)
	mux.HandleFunc("GET /api/mcp/servers", a.handleServers)
	mux.HandleFunc("GET /api/openapi.json", handleOpenAPI)
	// The MCP Registry API (mcpregistry.go), open like the listings.
	a.mcpReg.mount(mux)
	// Writes: the caller's token (a header, never a cookie), the Origin
	// and Content-Type checks of the MCP faces, and an admin caller.
	mux.Handle("POST /api/mcp/pins/approve", guard(a.adminWrite("approving tool definitions", a.handleApprove)))
	mux.Handle("POST /api/mcp/server", guard(a.adminWrite("registering servers", a.handleRegister)))
	mux.Handle("DELETE /api/mcp/server/{name}", guard(a.adminWrite("removing servers", a.handleUnregister)))
}

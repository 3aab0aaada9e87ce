package adminapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/httpjson"
	"github.com/purko-io/mcp-hub/internal/registrations"
)

// Purko's dashboard API for servers, wire-compatible with its dashboard:
// GET /api/mcp/servers lists, POST /api/mcp/server registers (a running
// server by url, or an image to deploy as an MCPServer), DELETE
// /api/mcp/server/{name} removes a registration. Writes go to the source
// of truth discovery reads (registrations.Writer), so the catalog follows
// through the normal reload path and every replica sees the same.

// registerTimeout bounds one write to the registrations store.
const registerTimeout = 30 * time.Second

// serversListing is the body of GET /api/mcp/servers: Purko's
// {"servers":[{"metadata","spec","status"}]}, with the hub's view of each
// server of its catalog.
type serversListing struct {
	Servers []serverItem `json:"servers"`
	// VirtualServers are the hub's named endpoints that publish a chosen
	// set of servers and tools (config virtualServers, annotated Agents).
	VirtualServers []virtualItem `json:"virtualServers"`
}

// virtualItem is one virtual server: its definition, where it is served,
// and how many tools it publishes.
type virtualItem struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Servers     []string `json:"servers,omitempty"`
	Tools       []string `json:"tools,omitempty"`
	Source      string   `json:"source"`
	// Endpoint is its Streamable HTTP path; /sse and /ws sit beside it.
	Endpoint  string `json:"endpoint"`
	ToolCount int    `json:"toolCount"`
}

type serverItem struct {
	Metadata itemMeta   `json:"metadata"`
	Spec     itemSpec   `json:"spec"`
	Status   itemStatus `json:"status"`
	// Source is the discovery source (file, env, kubernetes, registered).
	Source string `json:"source"`
	// Registered says the server came through this API, so DELETE may
	// remove it; others are edited where they are declared.
	Registered bool `json:"registered"`
	// Endpoint is the path of the server's own Streamable HTTP endpoint,
	// which publishes only its tools.
	Endpoint string `json:"endpoint"`
}

type itemMeta struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Kind      string `json:"kind,omitempty"` // MCPServer or ConfigMap, when from Kubernetes
}

type itemSpec struct {
	URL       string `json:"url"`
	Transport string `json:"transport"`
	// Auth is how the hub reaches the server: none, bearer, oauth (the
	// hub's own token from an authorization server) or tokenExchange (each
	// caller's own identity); "" for the hub's own tools.
	Auth string `json:"auth,omitempty"`
}

type itemStatus struct {
	Phase         string     `json:"phase"`
	ToolCount     int        `json:"toolCount"`
	LastDiscovery *time.Time `json:"lastDiscovery,omitempty"`
	Message       string     `json:"message,omitempty"`
	// Detail is what the upstream answered that message does not show:
	// for admin callers only (see isAdmin).
	Detail string `json:"detail,omitempty"`
}

// handleServers lists every server of the catalog in Purko's shape.
func (a *API) handleServers(w http.ResponseWriter, r *http.Request) {
	admin := a.isAdmin(r)
	cat := a.reg.Catalog()
	out := serversListing{Servers: []serverItem{}, VirtualServers: []virtualItem{}}
	for _, sv := range cat.Servers {
		it := serverItem{
			Endpoint: "/servers/" + sv.Name + "/mcp",
			Metadata: itemMeta{Name: sv.Name},
			Spec:     itemSpec{URL: sv.URL, Transport: string(sv.Transport), Auth: sv.Auth},
			Status:   itemStatus{Phase: string(sv.Status.State), ToolCount: len(sv.Tools), Message: sv.Status.Error},
			Source:   sv.Source,
		}
		if admin {
			it.Status.Detail = sv.Status.Detail
		}
		if o := sv.Origin; o != nil {
			it.Metadata.Namespace, it.Metadata.Kind = o.Namespace, o.Kind
		}
		if t := sv.Status.ListedAt; !t.IsZero() {
			it.Status.LastDiscovery = &t
		}
		if a.registered != nil {
			it.Registered = a.registered.Owns(sv.Source, sv.Origin)
		}
		out.Servers = append(out.Servers, it)
	}
	for _, v := range cat.Virtual {
		// What it publishes to a caller that may see everything, as the
		// servers' toolCount counts.
		ep, _ := cat.Endpoint(v.Name)
		scoped := callers.Caller{Level: autonomy.Full, Scope: ep.Scope}
		n := 0
		for _, t := range cat.Tools {
			if a.visible(scoped, t) {
				n++
			}
		}
		out.VirtualServers = append(out.VirtualServers, virtualItem{
			Name: v.Name, Description: v.Description, Servers: v.Servers, Tools: v.Tools, Source: v.Source,
			Endpoint: "/servers/" + v.Name + "/mcp", ToolCount: n,
		})
	}
	httpjson.Write(w, http.StatusOK, out)
}

// handleRegister is POST /api/mcp/server: upsert by name.
func (a *API) handleRegister(w http.ResponseWriter, r *http.Request) {
	caller := callers.From(r.Context())
	if a.registered == nil {
		httpjson.Write(w, http.StatusNotImplemented, map[string]string{"error": "this hub has no store for registrations"})
		return
	}
	var e registrations.Entry
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		httpjson.Write(w, http.StatusBadRequest, map[string]string{"error": "body: not a server entry {name,url,auth,secretRef,category,icon} or {name,image,port,...}: " + err.Error()})
		return
	}
	if err := e.Validate(); err != nil {
		httpjson.Write(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), registerTimeout)
	defer cancel()
	if msg, err := a.declaredElsewhere(ctx, e.Name); err != nil || msg != "" {
		writeDeclared(w, msg, err)
		return
	}
	if err := a.registered.Upsert(ctx, e); err != nil {
		switch {
		case errors.Is(err, registrations.ErrOtherKind), errors.Is(err, registrations.ErrReadOnly):
			httpjson.Write(w, http.StatusConflict, map[string]string{"error": err.Error()})
		case errors.Is(err, registrations.ErrRefused):
			// Naming a credential the operator did not set aside is what
			// an attempt to exfiltrate one looks like: audited.
			a.log.Warn().Str("audit", "servers").Str("caller", caller.Name).Str("server", e.Name).Str("decision", "refused").
				Str("reason", err.Error()).Msg("server registration refused")
			httpjson.Write(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		case errors.Is(err, registrations.ErrNeedsCluster):
			httpjson.Write(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		default:
			httpjson.Write(w, http.StatusInternalServerError, map[string]string{"error": "register " + e.Name + ": " + err.Error()})
		}
		return
	}
	status := "connected"
	if e.IsImage() {
		status = "created"
	}
	a.log.Warn().Str("audit", "servers").Str("caller", caller.Name).Str("server", e.Name).Str("decision", status).
		Str("store", a.registered.Where()).Msg("server registered")
	httpjson.Write(w, http.StatusOK, map[string]string{"status": status, "name": e.Name})
}

// handleUnregister is DELETE /api/mcp/server/{name}.
func (a *API) handleUnregister(w http.ResponseWriter, r *http.Request) {
	caller := callers.From(r.Context())
	name := r.PathValue("name")
	if a.registered == nil {
		httpjson.Write(w, http.StatusNotImplemented, map[string]string{"error": "this hub has no store for registrations"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), registerTimeout)
	defer cancel()
	err := a.registered.Delete(ctx, name)
	switch {
	case errors.Is(err, registrations.ErrNotFound):
		if msg, err := a.declaredElsewhere(ctx, name); err != nil || msg != "" {
			writeDeclared(w, msg, err)
			return
		}
		httpjson.Write(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("server %q not found", name)})
		return
	case errors.Is(err, registrations.ErrReadOnly):
		httpjson.Write(w, http.StatusConflict, map[string]string{"error": err.Error()})
		return
	case err != nil:
		httpjson.Write(w, http.StatusInternalServerError, map[string]string{"error": "unregister " + name + ": " + err.Error()})
		return
	}
	a.log.Warn().Str("audit", "servers").Str("caller", caller.Name).Str("server", name).Str("decision", "deleted").
		Str("store", a.registered.Where()).Msg("server unregistered")
	httpjson.Write(w, http.StatusOK, map[string]string{"status": "deleted", "name": name})
}

// declaredElsewhere says why name cannot be written through the API: a
// server of that name is declared by the user's config file or MCP_SERVERS,
// which the hub never rewrites. Empty when the name is free or registered.
//
// The catalog holds the file's servers once every source has sent its
// first snapshot: a write in the hub's first moments waits for start-up
// (Registry.WaitTried, bounded by upstream.connectTimeout), or a name the
// file declares would look free and the registration would be stored.
func (a *API) declaredElsewhere(ctx context.Context, name string) (string, error) {
	if err := a.reg.WaitTried(ctx); err != nil {
		return "", err
	}
	for _, sv := range a.reg.Catalog().Servers {
		if sv.Name != name {
			continue
		}
		switch sv.Source {
		case "file":
			return fmt.Sprintf("server %q is declared in the hub's config file; edit the file to change or remove it", name), nil
		case "env":
			return fmt.Sprintf("server %q is declared in MCP_SERVERS; change the hub's environment to change or remove it", name), nil
		}
	}
	return "", nil
}

// writeDeclared answers a write declaredElsewhere refused: 409 for a name
// declared elsewhere, 503 while start-up did not end in time.
func writeDeclared(w http.ResponseWriter, msg string, err error) {
	if err != nil {
		httpjson.Write(w, http.StatusServiceUnavailable, map[string]string{"error": "the hub is still starting, its configured servers not yet read: " + err.Error()})
		return
	}
	httpjson.Write(w, http.StatusConflict, map[string]string{"error": msg})
}

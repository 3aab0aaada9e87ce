package adminapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/httpjson"
	"github.com/purko-io/mcp-hub/internal/pinning"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/registry/quarantine"
	"github.com/purko-io/mcp-hub/internal/toolscreen"
)

// The operator's endpoints of tool pinning: GET /api/mcp/pins lists the
// pins, POST /api/mcp/pins/approve re-pins what a server offers now (and
// approves a definition the screening held back).

// approveTimeout bounds an approval: the store's write and the rebuild.
const approveTimeout = 30 * time.Second

// pinListing is one pin in GET /api/mcp/pins.
type pinListing struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Kind is set for the approval of a prompt, resource, template or a
	// server's instructions the screening held (Tool is its name).
	Kind        string    `json:"kind,omitempty"`
	SHA256      string    `json:"sha256"`
	FirstSeen   time.Time `json:"firstSeen"`
	Approved    string    `json:"approved,omitempty"`
	Description string    `json:"description,omitempty"`
	// Quarantined and the rest say the server now offers another
	// definition.
	Quarantined   bool   `json:"quarantined,omitempty"`
	Changed       bool   `json:"changed,omitempty"`
	CurrentSHA256 string `json:"currentSha256,omitempty"`
	Diff          string `json:"diff,omitempty"`
	// Screened are the screening's hits of the offered definition, which
	// hold the tool until its pin is approved; Reason says in words why
	// the tool is held (the diff, the hits or both).
	Screened []toolscreen.Hit `json:"screened,omitempty"`
	Reason   string           `json:"reason,omitempty"`
}

// handlePins lists every pin, with what changed for the tools whose
// definition is not the pinned one.
func (a *API) handlePins(w http.ResponseWriter, _ *http.Request) {
	p := a.reg.Pinning()
	out := struct {
		Mode string       `json:"mode"`
		Pins []pinListing `json:"pins"`
	}{Mode: string(p.Mode()), Pins: []pinListing{}}
	if p.Store() != nil {
		changed := map[pinning.Key]*quarantine.Quarantine{}
		cat := a.reg.Catalog()
		for _, sv := range cat.Servers {
			for _, list := range [][]registry.Tool{sv.Tools, sv.Quarantined} {
				for _, t := range list {
					if t.Quarantine != nil {
						changed[pinning.Key{Server: sv.Name, Tool: t.Original}] = t.Quarantine
					}
				}
			}
		}
		for _, f := range cat.Features.Screened {
			changed[pinning.Key{Server: f.Server, Tool: f.Original, Kind: f.Kind}] = &f.Quarantine
		}
		for _, pin := range p.Store().List() {
			pl := pinListing{Server: pin.Server, Tool: pin.Tool, Kind: pin.Kind, SHA256: pin.SHA256, FirstSeen: pin.FirstSeen,
				Approved: pin.Approved, Description: pin.Definition.Description}
			if q := changed[pin.Key]; q != nil {
				pl.Quarantined, pl.Changed, pl.CurrentSHA256, pl.Diff = q.Enforced, q.Changed(), q.CurrentSHA256, q.Diff
				pl.Screened, pl.Reason = q.Screened, q.Reason()
			}
			out.Pins = append(out.Pins, pl)
		}
	}
	httpjson.Write(w, http.StatusOK, out)
}

// approveRequest is the body of POST /api/mcp/pins/approve.
type approveRequest struct {
	Server string `json:"server"`
	// Tool is the original or published name; empty approves every tool
	// of the server (after an upgrade).
	Tool string `json:"tool,omitempty"`
}

// handleApprove re-pins the current definitions an admin approves.
func (a *API) handleApprove(w http.ResponseWriter, r *http.Request) {
	caller := callers.From(r.Context())
	var req approveRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.Server == "" {
		msg := `the body must be {"server":"NAME","tool":"NAME"} (tool optional: every tool of the server)`
		if err != nil {
			msg += ": " + err.Error()
		}
		httpjson.Write(w, http.StatusBadRequest, map[string]string{"error": msg})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), approveTimeout)
	defer cancel()
	pins, err := a.reg.ApprovePins(ctx, req.Server, req.Tool, "api:"+caller.Name)
	if err != nil {
		status := http.StatusInternalServerError
		switch {
		case errors.Is(err, registry.ErrNotFound):
			status = http.StatusNotFound
		case errors.Is(err, pinning.ErrOff):
			status = http.StatusConflict
		}
		httpjson.Write(w, status, map[string]string{"error": "approve: " + err.Error()})
		return
	}
	approved := make([]pinListing, len(pins))
	for i, p := range pins {
		approved[i] = pinListing{Server: p.Server, Tool: p.Tool, Kind: p.Kind, SHA256: p.SHA256, FirstSeen: p.FirstSeen, Approved: p.Approved,
			Description: p.Definition.Description}
	}
	a.log.Warn().Str("audit", "pinning").Str("caller", caller.Name).Str("server", req.Server).Str("tool", req.Tool).
		Int("approved", len(pins)).Str("decision", "approved").Msg("tool definitions approved")
	httpjson.Write(w, http.StatusOK, map[string]any{"approved": approved})
}

// adminWrite serves an endpoint that changes the hub's state to an admin
// caller only (403 otherwise), behind Mount's guard: the Origin and
// Content-Type checks of the MCP faces (a browser page of another origin
// cannot post, a form cannot either) and the caller's token from the
// Authorization header (never a cookie; 401 without one). what names the
// action in the refusal.
func (a *API) adminWrite(what string, next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller := callers.From(r.Context())
		if !caller.Admin {
			a.log.Warn().Str("audit", "admin").Str("caller", caller.Name).Str("path", r.URL.Path).Str("decision", "denied").
				Msg(what + " refused: not an admin")
			httpjson.Write(w, http.StatusForbidden, map[string]string{"error": fmt.Sprintf(
				"%s needs an admin caller: %s is not one (give its entry in auth.tokens admin: true)", what, caller.Name)})
			return
		}
		next(w, r)
	})
}

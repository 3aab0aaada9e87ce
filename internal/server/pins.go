package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/callfeed"
	"github.com/purko-io/mcp-hub/internal/httpjson"
	"github.com/purko-io/mcp-hub/internal/pinning"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// Tool pinning on the hub's face: the refusal of a quarantined tool's call
// (runCall asks Lookup, which refuses it), the signals of a change (a
// metric, an audit line), and the operator's endpoints: GET /api/mcp/pins
// lists the pins, POST /api/mcp/pins/approve re-pins what a server offers
// now.

// approveTimeout bounds an approval: the store's write and the rebuild.
const approveTimeout = 30 * time.Second

// quarantinedTools counts a server's tools whose definition changed.
func quarantinedTools(sv registry.ServerView) int {
	n := len(sv.Quarantined)
	for _, t := range sv.Tools {
		if t.Quarantine != nil {
			n++
		}
	}
	return n
}

// quarantined hears of a newly changed tool definition: a counter and a
// warn audit line (the diff and both digests; definitions hold no
// secrets of the hub).
func (s *Server) quarantined(ev registry.QuarantineEvent) {
	s.metrics.pinChanges.WithLabelValues(ev.Server).Inc()
	action := "quarantined: not listed, calls refused"
	if !ev.Quarantine.Enforced {
		action = "changed (pinning mode warn: still listed and callable)"
	}
	s.log.Warn().Str("audit", "pinning").Str("server", ev.Server).Str("tool", ev.Tool).Str("published", ev.Published).
		Str("diff", ev.Quarantine.Diff).Str("pinnedSha256", ev.Quarantine.PinnedSHA256).
		Str("currentSha256", ev.Quarantine.CurrentSHA256).Bool("enforced", ev.Quarantine.Enforced).
		Msg("tool definition changed since it was pinned; " + action)
}

// recordQuarantined writes the audit line and metric of a refused call of
// a quarantined tool.
func (s *Server) recordQuarantined(span trace.Span, session string, caller callers.Caller, e *registry.QuarantinedError) {
	s.metrics.observeCall(e.Server, e.Name, outcomeQuarantined, 0)
	s.feed.Add(callfeed.Call{Time: time.Now(), Caller: caller.Name, Address: caller.Address(), Level: caller.Level.String(), Tool: e.Name, Server: e.Server,
		Decision: "denied", Outcome: outcomeQuarantined})
	traced(s.log.Warn(), span, e.Server, "denied", outcomeQuarantined, nil).Str("audit", "tools/call").Str("session", session).Str("caller", caller.Name).Str("autonomy", caller.Level.String()).
		Str("tool", e.Name).Str("server", e.Server).Str("decision", "denied").Str("reason", "quarantined").
		Str("diff", e.Quarantine.Diff).Str("outcome", outcomeQuarantined).Func(caller.AuditFace).Msg("tool call denied")
}

// pinListing is one pin in GET /api/mcp/pins.
type pinListing struct {
	Server      string    `json:"server"`
	Tool        string    `json:"tool"`
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
}

// handlePins lists every pin, with what changed for the tools whose
// definition is not the pinned one.
func (s *Server) handlePins(w http.ResponseWriter, _ *http.Request) {
	p := s.reg.Pinning()
	out := struct {
		Mode string       `json:"mode"`
		Pins []pinListing `json:"pins"`
	}{Mode: string(p.Mode()), Pins: []pinListing{}}
	if p.Store() != nil {
		changed := map[[2]string]*registry.Quarantine{}
		for _, sv := range s.reg.Catalog().Servers {
			for _, list := range [][]registry.Tool{sv.Tools, sv.Quarantined} {
				for _, t := range list {
					if t.Quarantine != nil {
						changed[[2]string{sv.Name, t.Original}] = t.Quarantine
					}
				}
			}
		}
		for _, pin := range p.Store().List() {
			pl := pinListing{Server: pin.Server, Tool: pin.Tool, SHA256: pin.SHA256, FirstSeen: pin.FirstSeen,
				Approved: pin.Approved, Description: pin.Definition.Description}
			if q := changed[[2]string{pin.Server, pin.Tool}]; q != nil {
				pl.Quarantined, pl.Changed, pl.CurrentSHA256, pl.Diff = q.Enforced, true, q.CurrentSHA256, q.Diff
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
func (s *Server) handleApprove(w http.ResponseWriter, r *http.Request) {
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
	pins, err := s.reg.ApprovePins(ctx, req.Server, req.Tool, "api:"+caller.Name)
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
		approved[i] = pinListing{Server: p.Server, Tool: p.Tool, SHA256: p.SHA256, FirstSeen: p.FirstSeen, Approved: p.Approved,
			Description: p.Definition.Description}
	}
	s.log.Warn().Str("audit", "pinning").Str("caller", caller.Name).Str("server", req.Server).Str("tool", req.Tool).
		Int("approved", len(pins)).Str("decision", "approved").Msg("tool definitions approved")
	httpjson.Write(w, http.StatusOK, map[string]any{"approved": approved})
}

// adminWrite guards every endpoint that changes the hub's state: the
// Origin and Content-Type checks of the MCP faces (a browser page of
// another origin cannot post, a form cannot either), the caller's token
// from the Authorization header (never a cookie; 401 without one), and an
// admin caller (403 otherwise). what names the action in the refusal.
func (s *Server) adminWrite(what string, next http.HandlerFunc) http.Handler {
	admin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller := callers.From(r.Context())
		if !caller.Admin {
			s.log.Warn().Str("audit", "admin").Str("caller", caller.Name).Str("path", r.URL.Path).Str("decision", "denied").
				Msg(what + " refused: not an admin")
			httpjson.Write(w, http.StatusForbidden, map[string]string{"error": fmt.Sprintf(
				"%s needs an admin caller: %s is not one (give its entry in auth.tokens admin: true)", what, caller.Name)})
			return
		}
		next(w, r)
	})
	return s.edge.guard.mcpFace(s.requireCaller(admin), false)
}

package approvals

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/httpjson"
	"github.com/purko-io/mcp-hub/internal/peers"
)

// The REST face of approvals, under the caller the hub's auth put in the
// request's context (callers.From):
//
//	GET  /api/mcp/approvals        the held calls of every replica the caller may see
//	POST /api/mcp/approvals/{id}   {"decision":"approve"} or {"decision":"deny","reason":"..."}
//
// A replica that does not hold the call passes the decision on to its
// peers with the approver's own credentials; the replica holding it
// checks the approver itself. A list gathers every replica's part.

// maxDecisionBody bounds a decision's body: a verdict, a reason, a digest.
const maxDecisionBody = 16 << 10

// maxReason bounds the reason a caller reads in its BLOCKED text, in
// characters (as a browser's maxlength counts).
const maxReason = 1000

// listing is the body of GET /api/mcp/approvals.
type listing struct {
	Approvals []Pending `json:"approvals"`
	// Approver says whether the caller may decide (the console shows the
	// buttons), TimeoutSeconds how long a call waits.
	Approver       bool    `json:"approver"`
	TimeoutSeconds float64 `json:"timeoutSeconds"`
}

// HandleList serves GET /api/mcp/approvals.
func (g *Gate) HandleList(w http.ResponseWriter, r *http.Request) {
	caller := callers.From(r.Context())
	out := listing{Approvals: g.List(caller), Approver: g.MayApprove(caller), TimeoutSeconds: g.timeout.Seconds()}
	for _, part := range g.peers.ForwardAll(r, nil) {
		var l listing
		if json.Unmarshal(part, &l) == nil {
			out.Approvals = append(out.Approvals, l.Approvals...)
		}
	}
	sortPending(out.Approvals)
	httpjson.Write(w, http.StatusOK, out)
}

// decisionBody is the body of POST /api/mcp/approvals/{id}.
type decisionBody struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
	// ArgumentsSHA256, when set, must be the digest of the held call's
	// arguments: the approver approves only what it was shown.
	ArgumentsSHA256 string `json:"argumentsSha256,omitempty"`
}

// readDecision reads a decision's body strictly: one object, known
// members, a known verdict.
func readDecision(body []byte) (approve bool, d decisionBody, err error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return false, d, fmt.Errorf(`the body must be {"decision":"approve"} or {"decision":"deny","reason":"..."}: %w`, err)
	}
	if dec.More() {
		return false, d, errors.New("the body holds more than one JSON value")
	}
	switch d.Decision {
	case "approve":
		approve = true
	case "deny":
	default:
		return false, d, fmt.Errorf(`decision: %q is not approve or deny`, d.Decision)
	}
	d.Reason = strings.TrimSpace(d.Reason)
	if n := utf8.RuneCountInString(d.Reason); n > maxReason {
		return false, d, fmt.Errorf("reason: %d characters, at most %d", n, maxReason)
	}
	return approve, d, nil
}

// HandleDecide serves POST /api/mcp/approvals/{id}.
func (g *Gate) HandleDecide(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if caller := callers.From(r.Context()); !g.MayApprove(caller) {
		// First: a caller that decides nothing is told so whatever it sent.
		httpjson.Write(w, http.StatusForbidden, map[string]string{"error": g.notApprover(caller, id).Error()})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxDecisionBody))
	if err != nil {
		httpjson.Write(w, http.StatusRequestEntityTooLarge, map[string]string{"error": "read the decision: " + err.Error()})
		return
	}
	approve, d, err := readDecision(body)
	if err != nil {
		httpjson.Write(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	decided, err := g.Decide(callers.From(r.Context()), id, approve, d.Reason, d.ArgumentsSHA256)
	if errors.Is(err, ErrUnknown) && g.peers.Answer(w, r, body, peers.HolderOf(id)) {
		return // the replica whose call it is (its id names it) answers
	}
	if err != nil {
		httpjson.Write(w, statusOf(err), map[string]string{"error": err.Error()})
		return
	}
	httpjson.Write(w, http.StatusOK, decided)
}

// statusOf is the HTTP status of a refused decision.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrUnknown):
		return http.StatusNotFound
	case errors.Is(err, ErrOwnCall), errors.Is(err, ErrNotApprover):
		return http.StatusForbidden
	case errors.Is(err, ErrExpired):
		return http.StatusGone
	case errors.Is(err, ErrDecided), errors.Is(err, ErrChanged):
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

// Package restrun is the REST face: POST /api/mcp/tools/{name}/run runs
// one tool for callers that speak HTTP and JSON but not MCP (scripts,
// curl, the CLI). It is a face like /mcp: the same guards (Origin,
// application/json, body limit), the same caller (X-Autonomy-Level
// honoured), the same strict reading of the arguments, and the same
// pipeline (internal/pipeline), so the decision, limits and audit line
// are those of an MCP call. Only the answer differs: how the call ended is
// the HTTP status, so a script can tell a denial from a tool's failure
// without reading the text. Its error body, {"error", "code"}, is the one
// of the hub's whole REST API (WriteError).
package restrun

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/edge"
	"github.com/purko-io/mcp-hub/internal/httpjson"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/pipeline"
)

// Path is the route of a REST tool run.
const Path = "/api/mcp/tools/{name}/run"

// faceREST marks a REST call's audit line.
const faceREST = "rest"

// Handler serves Path by pipe, the body read within the edge's limit;
// the caller is in the request's context (callers.With), put there by the
// guards the face is mounted behind. Other methods than POST are refused
// here rather than by the mux, so that the edge can answer an allowed
// origin's CORS preflight first.
func Handler(pipe *pipeline.Pipeline, e *edge.Edge) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { run(w, r, pipe, e) })
}

func run(w http.ResponseWriter, r *http.Request, pipe *pipeline.Pipeline, e *edge.Edge) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		WriteError(w, http.StatusMethodNotAllowed, &jsonrpc.Error{Message: "run a tool with POST " + r.URL.Path})
		return
	}
	body, ok := e.ReadBody(w, r)
	if !ok {
		return
	}
	call, err := restToolCall(r.PathValue("name"), body)
	if err != nil {
		WriteError(w, http.StatusBadRequest, &jsonrpc.Error{Message: err.Error()})
		return
	}
	caller := callers.From(r.Context())
	caller.Face = faceREST
	runReply(w, pipe.Run(r.Context(), caller, "", call, nil))
}

// runReply is the REST face's answer to a call, fed by the pipeline's
// outcome: how the call ended is the HTTP status (runStatus); the body is
// the result, or the JSON-RPC error the call ended in (WriteError).
func runReply(w http.ResponseWriter, out pipeline.Result) {
	if out.Error != nil {
		WriteError(w, runStatus(out.Outcome), out.Error)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(runStatus(out.Outcome))
	_, _ = w.Write(out.Result)
}

// runStatus is the HTTP status of a call that ended with outcome. A
// tool's own failure (isError) is a result like any other: 200.
func runStatus(outcome pipeline.Outcome) int {
	switch outcome {
	case pipeline.OK, pipeline.ToolError:
		return http.StatusOK
	case pipeline.Denied, pipeline.Quarantined:
		return http.StatusForbidden
	case pipeline.Unavailable, pipeline.Canceled:
		return http.StatusServiceUnavailable
	case pipeline.Unknown:
		return http.StatusNotFound
	case pipeline.RateLimited:
		return http.StatusTooManyRequests
	}
	return http.StatusBadGateway // the backend failed in another way (an upstream's own error included)
}

// WriteError writes the body of every REST error of the hub:
// {"error": text}, and for a JSON-RPC error its code and data; a refusal over a rate limit
// (429) also says when to retry, in retryAfterMs and Retry-After.
func WriteError(w http.ResponseWriter, status int, e *jsonrpc.Error) {
	out := map[string]any{"error": e.Message}
	if e.Code != 0 {
		out["code"] = e.Code
	}
	if len(e.Data) > 0 {
		out["data"] = e.Data
	}
	if status == http.StatusTooManyRequests {
		var d struct {
			RetryAfterMs int64 `json:"retryAfterMs"`
		}
		if json.Unmarshal(e.Data, &d) == nil {
			out["retryAfterMs"] = d.RetryAfterMs
			w.Header().Set("Retry-After", strconv.FormatInt(max(1, (d.RetryAfterMs+999)/1000), 10))
		}
	}
	httpjson.Write(w, status, out)
}

// restToolCall reads a REST run's body as the arguments of a tools/call
// of name, with the reader of the MCP faces (jsonrpc.ParseToolCall): what
// /mcp refuses in arguments (a member named twice, at any depth) is
// refused here too, and what it accepts is accepted. An empty body is no
// arguments ({}).
func restToolCall(name string, body []byte) (jsonrpc.ToolCall, error) {
	args := bytes.TrimSpace(body)
	if len(args) == 0 {
		args = []byte("{}")
	}
	// One JSON object and nothing else, checked before it is put into
	// params: a body such as {}, "_meta": {...} must not add members.
	if args[0] != '{' || !json.Valid(args) {
		if _, err := jsonrpc.Object(args); err != nil && args[0] == '{' {
			return jsonrpc.ToolCall{}, &runBodyError{err.Error()}
		}
		return jsonrpc.ToolCall{}, &runBodyError{"not one JSON object"}
	}
	n, _ := json.Marshal(name)
	params := make([]byte, 0, len(args)+len(n)+24)
	params = append(append(append(append(append(params, `{"name":`...), n...), `,"arguments":`...), args...), '}')
	call, err := jsonrpc.ParseToolCall(params)
	if err != nil {
		return call, &runBodyError{strings.TrimPrefix(jsonrpc.AsError(err).Message, "invalid params: params: ")}
	}
	return call, nil
}

// runBodyError is a REST run's body that is not an arguments object.
type runBodyError struct{ reason string }

func (e *runBodyError) Error() string {
	return "the body must be the tool's arguments as one JSON object (or empty): " + e.reason
}

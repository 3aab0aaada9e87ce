package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/upstream"
)

// The tools/call fast path. Most traffic through the hub is tools/call over
// Streamable HTTP, answered with one JSON reply. For that request the hub
// needs only the method, the id and the tool name; decoding the whole
// message into mcp-go's types, and the result back, costs more than the
// rest of the hop together. So /mcp answers such a call itself: it routes
// by name and passes arguments and result through as bytes. Everything else,
// and any call this path is not sure about, goes to mcp-go's handler
// unchanged.

// maxRequestBytes bounds a request body read by the fast path.
const maxRequestBytes = 16 << 20

// envelope is the part of a JSON-RPC request the fast path reads.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// callHead is the part of tools/call params the fast path reads.
type callHead struct {
	Name string `json:"name"`
	Meta *struct {
		ProgressToken json.RawMessage `json:"progressToken"`
		// LogLevel is a 2026-07-28 caller asking for log messages.
		LogLevel json.RawMessage `json:"io.modelcontextprotocol/logLevel"`
	} `json:"_meta"`
	Task json.RawMessage `json:"task"`
}

// serveMCP is the /mcp handler: the fast path, else mcp-go.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		if id := r.Header.Get("Mcp-Session-Id"); r.Method == http.MethodGet && id != "" {
			defer s.streams.hold(id)()
		}
		s.streamable.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes+1))
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err == nil && len(body) <= maxRequestBytes && s.fastCall(w, r, body) {
		return
	}
	if err == nil && isResponse(body) {
		s.deliverAnswer(w, r, body)
		return
	}
	if f, ok := initializeFlags(body); ok {
		r = r.WithContext(withInitFlags(r.Context(), f))
	}
	// A request without a progress token from a plain session gets its
	// answer as plain JSON: mcp-go would otherwise turn the reply into an
	// SSE stream as soon as any notification (a catalog's list_changed, say)
	// lands on the session, and Purko's executor reads only the first data:
	// line of a stream. Sessions that take server requests or asked for log
	// messages (a 2026-07-28 caller asks per request) get their stream, and
	// so does a 2026-07-28 subscriptions/listen, which is nothing but one.
	if !bytes.Contains(body, []byte(`"progressToken"`)) && !bytes.Contains(body, []byte(mcp.MetaKeyLogLevel)) &&
		!s.needsRelay(r.Header.Get("Mcp-Session-Id")) && !isListen(body) {
		w = jsonOnly{w}
	}
	s.streamable.ServeHTTP(w, r)
}

// isListen reports whether body is a subscriptions/listen request.
func isListen(body []byte) bool {
	if !bytes.Contains(body, []byte(mcp.MethodSubscriptionsListen)) {
		return false
	}
	var m struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &m) == nil && m.Method == string(mcp.MethodSubscriptionsListen)
}

// initializeFlags reads the session flags of an initialize request.
func initializeFlags(body []byte) (sessionFlags, bool) {
	if !bytes.Contains(body, []byte(`"initialize"`)) {
		return sessionFlags{}, false
	}
	var req struct {
		Method string `json:"method"`
		Params struct {
			Capabilities mcp.ClientCapabilities `json:"capabilities"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &req) != nil || req.Method != string(mcp.MethodInitialize) {
		return sessionFlags{}, false
	}
	return sessionFlags{relayed: takesServerRequests(req.Params.Capabilities)}, true
}

// jsonOnly hides http.Flusher, which is how mcp-go decides that a reply may
// become a stream; without it the reply is one JSON message.
type jsonOnly struct{ http.ResponseWriter }

// fastCall answers r (whose body is body) if it is a plain tools/call of a
// tool in the catalog and reports whether it did. When it declines, r is
// left as it came.
func (s *Server) fastCall(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" ||
		!acceptsJSON(r.Header.Get("Accept")) || !hostAllowed(r) {
		return false
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil || env.JSONRPC != "2.0" {
		return false
	}
	if env.Method == string(mcp.MethodToolsList) {
		return s.fastList(w, r, env)
	}
	if env.Method != string(mcp.MethodToolsCall) || len(env.ID) == 0 || string(env.ID) == "null" {
		return false
	}
	var head callHead
	if err := json.Unmarshal(env.Params, &head); err != nil || head.Name == "" ||
		(head.Meta != nil && (len(head.Meta.ProgressToken) > 0 || len(head.Meta.LogLevel) > 0)) || len(head.Task) > 0 {
		return false // progress, log messages and tasks need the session machinery
	}
	// 2026-07-28 mirrors method and name into headers; a mismatch is
	// mcp-go's to reject.
	if m := r.Header.Get(mcp.HeaderMethod); m != "" && m != env.Method {
		return false
	}
	if n := r.Header.Get(mcp.HeaderName); n != "" && n != head.Name {
		return false
	}
	rt, err := s.reg.Lookup(head.Name)
	if err != nil {
		return false // unknown or down: mcp-go answers as for any other call
	}
	if s.needsRelay(r.Header.Get("Mcp-Session-Id")) {
		return false // the upstream may send requests or log messages for this caller
	}

	s.calls.start()
	defer s.calls.done()
	start := time.Now()
	ctx := r.Context()
	caller := callerFrom(ctx)
	session := r.Header.Get("Mcp-Session-Id")
	var result json.RawMessage
	out := make([]byte, 0, 512)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, env.ID...)
	if denial := decide(caller, head.Name, rt); denial != "" {
		s.recordDenial(session, caller, head.Name, rt, denial)
		res, _ := json.Marshal(mcp.NewToolResultError(denial))
		out = append(append(append(out, `,"result":`...), res...), '}')
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
		return true
	}
	if rt.Local != nil {
		result, err = runLocal(ctx, rt, env.Params, caller)
	} else {
		result, err = rt.Client.CallRaw(ctx, rt.Original, env.Params)
	}
	toolError := err == nil && isErrorResult(result)
	s.record(ctx, session, caller, head.Name, rt.Server(), start, toolError, err)

	var rpcErr *upstream.RPCError
	switch {
	case err == nil:
		out = append(out, `,"result":`...)
		out = append(out, result...)
	case errors.As(err, &rpcErr):
		e, _ := json.Marshal(rpcErr)
		out = append(out, `,"error":`...)
		out = append(out, e...)
	default:
		res, _ := json.Marshal(mcp.NewToolResultError("ERROR: " + err.Error()))
		out = append(out, `,"result":`...)
		out = append(out, res...)
	}
	out = append(out, '}')
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
	return true
}

// runLocal runs one of the hub's own tools on raw params.
func runLocal(ctx context.Context, rt registry.Route, params json.RawMessage, caller Caller) (json.RawMessage, error) {
	var p struct {
		Arguments map[string]any `json:"arguments"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &upstream.RPCError{Code: mcp.INVALID_PARAMS, Message: "arguments: " + err.Error()}
	}
	return json.Marshal(rt.Local.Run(ctx, p.Arguments, caller.bindings()))
}

// isErrorResult reads only the isError member of a raw result.
func isErrorResult(raw json.RawMessage) bool {
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(raw, &r) == nil && r.IsError
}

func acceptsJSON(accept string) bool {
	return accept == "" || strings.Contains(accept, "application/json") || strings.Contains(accept, "*/*")
}

// hostAllowed mirrors mcp-go's DNS rebinding protection: a request that
// arrived on a loopback address must name a loopback host. Requests that
// fail it are left to mcp-go, which refuses them.
func hostAllowed(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !isLoopback(local.String()) {
		return true
	}
	return isLoopback(r.Host)
}

func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

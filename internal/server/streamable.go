package server

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/edge"
	"github.com/purko-io/mcp-hub/internal/features"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// /mcp, the Streamable HTTP face. Every POST is read once by the gate.
// Most traffic through the hub is a plain tools/call answered with one
// JSON reply; for it the hub needs no session machinery, so it answers
// such a call itself (the fast path): the decided call goes to the pipeline and
// the result passes through as bytes. A plain tools/list is answered from
// the list cache. A session's GET stream is the hub's too
// (internal/mcpsession keeps the sessions). Everything else (initialize,
// calls that take progress, log messages or server requests, resources,
// prompts, DELETE) goes to mcp-go, whose tool handler ends in the same
// pipeline.Run.

// serveMCP is the /mcp handler.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	if r.Method != http.MethodPost {
		if sid != "" && !edge.OwnsSession(callers.From(r.Context()), sid) {
			sessionNotFound(w, nil)
			return
		}
		if r.Method == http.MethodGet && sid != "" {
			release := s.streams.hold(sid)
			if ownStream(r) && s.sessions.ServeStream(w, r, sid, release) {
				return
			}
			defer release()
		}
		s.streamable.ServeHTTP(s.marks.writer(w), r) // a stream resumed may replay an answer
		return
	}
	body, ok := s.edge.ReadBody(w, r)
	if !ok {
		return
	}
	msg, call, err := admitWith(&s.reader, body)
	if err != nil {
		// 400 for a body that is no message, 200 for a request refused.
		status := http.StatusOK
		if c := jsonrpc.AsError(err).Code; c == jsonrpc.CodeParseError || c == jsonrpc.CodeInvalidRequest {
			status = http.StatusBadRequest
		}
		jsonrpc.WriteReply(w, status, jsonrpc.ErrorReplyTo(body, err))
		return
	}
	// Whose session it is, before anything acts on it. An initialize makes
	// a new session whatever id it carries (a client that got 404 may send
	// the stale one again).
	if sid != "" && msg.Method != string(mcp.MethodInitialize) && !edge.OwnsSession(callers.From(r.Context()), sid) {
		sessionNotFound(w, msg.ID)
		return
	}
	if sid != "" {
		s.sessions.Touch(sid) // not idle (mcpsession's sweep)
	}
	switch {
	case msg.Kind() == jsonrpc.KindResponse && msg.HasID():
		s.deliverAnswer(w, r, msg, body)
		return
	case call != nil && call.Task != nil && s.plainHTTP(r):
		s.tasks.taskCall(w, r, msg, call)
		return
	case isTaskMethod(msg.Method) && s.plainHTTP(r):
		s.tasks.serveTask(w, r, msg, body)
		return
	case call != nil && s.fastCall(w, r, msg, call):
		return
	case msg.Method == string(mcp.MethodToolsList) && s.plainHTTP(r) && s.fastList(w, r, msg):
		return
	case msg.Method == string(mcp.MethodInitialize):
		// An initialize may register a session: it takes a slot under the
		// caller's and the hub's session caps first.
		reserved, release, ok := s.edge.ReserveSession(w, r, msg.ID)
		if !ok {
			return
		}
		defer release()
		r = reserved.WithContext(edge.WithInitFlags(reserved.Context(), initializeFlags(msg)))
		r.Header.Del("Mcp-Session-Id") // a stale one is nobody's business here
	}
	// A request without a progress token from a plain session gets its
	// answer as plain JSON: mcp-go would otherwise turn the reply into an
	// SSE stream as soon as any notification (a catalog's list_changed, say)
	// lands on the session, and Purko's executor reads only the first data:
	// line of a stream. Sessions that take server requests or asked for log
	// messages (a 2026-07-28 caller asks per request) get their stream, and
	// so does a 2026-07-28 subscriptions/listen, which is nothing but one.
	meta := msg.Meta()
	_, progress := meta[jsonrpc.MetaProgressToken]
	_, logs := meta[jsonrpc.MetaLogLevel]
	if !progress && !logs && !s.feat.NeedsRelay(r.Header.Get("Mcp-Session-Id")) && msg.Method != string(mcp.MethodSubscriptionsListen) {
		w = jsonOnly{w}
	}
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
		s.sessions.Track(sid) // mcp-go may keep state for it until forgotten
	}
	s.streamable.ServeHTTP(s.marks.writer(w), r)
}

// sessionNotFound answers a request whose Mcp-Session-Id is not a session
// of its caller's, whether the hub never issued it or issued it to another
// caller: the two are told apart by nobody (id is the request's JSON-RPC
// id, nil for none).
func sessionNotFound(w http.ResponseWriter, id json.RawMessage) {
	jsonrpc.Refuse(w, http.StatusNotFound, codeSessionNotFound, id, "session not found")
}

// codeSessionNotFound is the JSON-RPC code of an unknown session, as the
// MCP TypeScript SDK answers it.
const codeSessionNotFound = -32001

// initializeFlags reads the session flags of an initialize request.
func initializeFlags(msg *jsonrpc.Message) edge.SessionFlags {
	var p struct {
		Capabilities mcp.ClientCapabilities `json:"capabilities"`
	}
	_ = json.Unmarshal(msg.Params, &p)
	return edge.SessionFlags{Relayed: features.TakesServerRequests(p.Capabilities)}
}

// jsonOnly hides http.Flusher, which is how mcp-go decides that a reply may
// become a stream; without it the reply is one JSON message.
type jsonOnly struct{ http.ResponseWriter }

// plainHTTP reports whether r is a request the fast path may answer as
// mcp-go would: JSON in, JSON accepted, a host mcp-go's DNS rebinding
// protection admits. Others go to mcp-go, which refuses or streams them.
func (s *Server) plainHTTP(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct != "application/json" { // the usual value; parsing allocates
		ct, _, _ = mime.ParseMediaType(ct)
	}
	return ct == "application/json" && acceptsJSON(r.Header.Get("Accept")) && edge.HostAllowed(r)
}

// fastCall answers a plain tools/call and reports whether it did. A call
// that needs the session machinery (progress, log messages, a task, a
// session that takes server requests) is left to mcp-go, and so is one
// whose 2026-07-28 headers disagree with its body (mcp-go refuses it).
func (s *Server) fastCall(w http.ResponseWriter, r *http.Request, msg *jsonrpc.Message, call *jsonrpc.ToolCall) bool {
	if !s.plainHTTP(r) || call.ProgressToken() != nil || call.Task != nil || s.feat.NeedsRelay(r.Header.Get("Mcp-Session-Id")) {
		return false
	}
	if _, ok := call.Meta[jsonrpc.MetaLogLevel]; ok {
		return false
	}
	if m := r.Header.Get(mcp.HeaderMethod); m != "" {
		// A 2026-07-28 request (no other sends Mcp-Method): its
		// Mcp-Param-* headers must agree with its arguments, which the
		// router checks (checkParamHeaders) and mcp-go answers.
		if m != msg.Method || s.checkParamHeaders(r.Header, *call) != nil {
			return false
		}
	}
	if n := r.Header.Get(mcp.HeaderName); n != "" && n != call.Name {
		return false
	}
	out := s.pipe.Run(s.pipe.WithRequestID(r.Context(), msg.ID), callers.From(r.Context()), r.Header.Get("Mcp-Session-Id"), *call, nil)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(callReply(msg.ID, out))
	return true
}

func acceptsJSON(accept string) bool {
	return accept == "" || strings.Contains(accept, "application/json") || strings.Contains(accept, "*/*")
}

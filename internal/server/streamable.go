package server

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/dispatch"
	"github.com/purko-io/mcp-hub/internal/edge"
	"github.com/purko-io/mcp-hub/internal/features"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/rounds"
	"github.com/purko-io/mcp-hub/internal/tasks"
)

// /mcp, the Streamable HTTP face. Every POST is read once by the gate.
// Every request of a method the hub serves (tools, resources, prompts,
// completions, subscriptions) goes to the dispatcher (internal/dispatch),
// whose answer the hub writes: one JSON reply, or, for a request that
// takes progress, log messages or server requests, a reply stream the hub
// writes itself (replystream.go). A plain tools/list is answered from the
// list cache. A session's GET stream is the hub's too
// (internal/mcpsession keeps the sessions). mcp-go's Streamable HTTP
// server is the session layer: initialize, ping, logging/setLevel,
// notifications, DELETE, the 2026-07-28 subscriptions/listen stream, and
// the refusals of requests whose session or headers are wrong.

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
		defer s.peers.Close(r) // a session's DELETE: every replica it reached forgets it now
		s.streamable.ServeHTTP(w, r)
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
		s.tasks.Call(w, r, msg, call)
		return
	case call != nil && s.plainHTTP(r) && s.tasks.RequiresTask(call) && modernHeadersAgree(r, msg, call):
		s.tasks.ExtensionCall(w, r, msg, call) // the Tasks extension
		return
	case tasks.IsMethod(msg.Method) && s.plainHTTP(r):
		s.tasks.Serve(w, r, msg, body)
		return
	case msg.Method == string(mcp.MethodToolsList) && s.plainHTTP(r) && s.lists.Serve(w, r, msg):
		return
	case call != nil && call.RequestState != nil && s.tools.rounds.Elsewhere(call) && s.peers.Answer(w, r, body, rounds.Maker(call)):
		return // a round of a call another replica keeps (package rounds); one none keeps is answered here
	case msg.Kind() == jsonrpc.KindRequest && s.calls.Owns(msg.Method) && s.serveOwned(w, r, msg, call):
		return
	case msg.Method == string(mcp.MethodSubscriptionsListen):
		if refusal := tasks.ListenRefusal(msg); refusal != nil {
			jsonrpc.WriteReply(w, http.StatusOK, jsonrpc.ErrorReply(msg.ID, refusal))
			return
		}
	case msg.Kind() == jsonrpc.KindNotification:
		s.calls.Read(body, sid) // a cancellation of a request the dispatcher serves
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
	s.streamable.ServeHTTP(w, r)
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
	e := p.Capabilities.Elicitation
	return edge.SessionFlags{Relayed: features.TakesServerRequests(p.Capabilities), URLElicitation: e != nil && e.URL != nil}
}

// jsonOnly hides http.Flusher, which is how mcp-go decides that a reply may
// become a stream; without it the reply is one JSON message.
type jsonOnly struct{ http.ResponseWriter }

// plainHTTP reports whether r is a request the fast path may answer as
// mcp-go would: JSON in, JSON accepted, a host mcp-go's DNS rebinding
// protection admits. Others go to mcp-go, which refuses or streams them.
func (s *Server) plainHTTP(r *http.Request) bool {
	return jsonBody(r) && acceptsJSON(r.Header.Get("Accept")) && edge.HostAllowed(r)
}

// modernHeadersAgree reports whether a 2026-07-28 request's headers say
// what its body says (method, revision, tool name); any other request's
// do.
func modernHeadersAgree(r *http.Request, msg *jsonrpc.Message, call *jsonrpc.ToolCall) bool {
	v := r.Header.Get(mcp.HeaderProtocolVersion)
	if !mcp.IsModernProtocol(v) {
		return true
	}
	if r.Header.Get(mcp.HeaderMethod) != msg.Method || !metaAgrees(msg, call, v) {
		return false
	}
	n := r.Header.Get(mcp.HeaderName)
	return n == "" || call == nil || n == call.Name
}

// jsonBody reports whether r's body is declared JSON.
func jsonBody(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct != "application/json" { // the usual value; parsing allocates
		ct, _, _ = mime.ParseMediaType(ct)
	}
	return ct == "application/json"
}

// serveOwned serves a request of a hub method through the dispatcher and
// reports whether it did. A request mcp-go refuses before any method runs
// (a 2026-07-28 request whose headers disagree with its body, a legacy one
// without a valid session id; tools/call alone has always been served
// without one) is left to mcp-go, which answers it as before.
func (s *Server) serveOwned(w http.ResponseWriter, r *http.Request, msg *jsonrpc.Message, call *jsonrpc.ToolCall) bool {
	accept := r.Header.Get("Accept")
	takesJSON := acceptsJSON(accept)
	if !jsonBody(r) || !edge.HostAllowed(r) || !takesJSON && !acceptsStream(accept) {
		return false // mcp-go refuses it
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if !modernHeadersAgree(r, msg, call) {
		return false
	}
	if mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
		sid = "" // a 2026-07-28 request belongs to no session
	} else if call == nil {
		if _, ok := edge.ParseSessionID(sid); !ok {
			return false
		}
	}
	// The request lives as long as Serve (no handler keeps it), so it is
	// reused: it is one of the fewer than 120 allocations of a call.
	req, _ := s.requests.Get().(*dispatch.Request)
	if req == nil {
		req = new(dispatch.Request)
	}
	*req = dispatch.Request{Msg: msg, Call: call, Session: sid, Header: r.Header}
	defer func() { *req = dispatch.Request{}; s.requests.Put(req) }()
	if !takesJSON || s.streamsReply(req) {
		req.Cancellable = true
		s.replyStream(w, r, req)
		return true
	}
	ctx := r.Context()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(s.calls.Serve(ctx, req))
	return true
}

// streamsReply reports whether the answer to req is a reply stream: the
// request takes progress or log messages, or its session takes server
// requests or asked for log messages. Everything else is one JSON reply
// (when the client takes one), which Purko's executor (it reads only the
// first data: line of a stream) needs.
func (s *Server) streamsReply(req *dispatch.Request) bool {
	meta := req.Meta()
	if _, ok := meta[jsonrpc.MetaProgressToken]; ok && string(meta[jsonrpc.MetaProgressToken]) != "null" {
		return true
	}
	if _, ok := meta[jsonrpc.MetaLogLevel]; ok {
		return true
	}
	return req.Session != "" && s.feat.NeedsRelay(req.Session)
}

// metaAgrees reports whether a 2026-07-28 request's _meta names the
// revision its header does (mcp-go refuses one that does not).
func metaAgrees(msg *jsonrpc.Message, call *jsonrpc.ToolCall, version string) bool {
	meta := (&dispatch.Request{Msg: msg, Call: call}).Meta()
	return string(meta[mcp.MetaKeyProtocolVersion]) == `"`+version+`"`
}

func acceptsStream(accept string) bool {
	return strings.Contains(accept, "text/event-stream")
}

func acceptsJSON(accept string) bool {
	return accept == "" || strings.Contains(accept, "application/json") || strings.Contains(accept, "*/*")
}

package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/edge"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/upstream/tokenexchange"
)

// tools/list of a large catalog (100 upstreams x 100 tools) is a reply of
// megabytes that mcp-go rebuilds on every request: it copies and sorts the
// tools, encodes each through maps, and the session filter runs after. The
// hub instead encodes every tool once per catalog generation and keeps the
// finished result of each view (autonomy level, tool allowlist, agent), so a
// list is one lookup, and the kept bytes written as they are around the
// request's envelope (listwire.go), gzipped for clients that take it.
// Requests it is not sure about (a cursor, a 2026-07-28 request with _meta
// of its own, no session) go to mcp-go as before.

// maxViews bounds the views kept per catalog generation.
const maxViews = 256

// viewKey says what a caller sees: the same key, the same list.
type viewKey struct {
	level autonomy.Level
	allow string // the allow-list's content (Allowlist.Key), not its pointer
	scope string // the endpoint's (Scope.Key)
	agent string
	// subject and issuer are what a server with token exchange asks of
	// the caller's own token (tokenexchange.Exchanger.Accepts).
	subject tokenexchange.Kind
	issuer  string
}

// listCache holds the encoded tools and views of one catalog generation.
type listCache struct {
	mu    sync.Mutex
	gen   uint64
	tools [][]byte // encoded cat.Tools[i].Def, nil until first needed
	views *lru.Cache[viewKey, *listView]
}

// listView is one view's encoded tools/list result and how many tools it
// holds (what decides whether the caller gets find_tools instead), with
// its gzip variant, compressed on the first request that accepts gzip so
// that no view nobody asks gzip for is compressed.
type listView struct {
	res []byte
	// suffix is what every answer with res sends after its head: res after
	// its opening brace, and jsonrpc.AnswerEnd, in res's array, so that the
	// megabytes and the answer's end go in one write.
	suffix []byte
	tools  int
	gzOnce sync.Once
	gz     *gzipSuffix // nil until compressed, and when compressing failed
}

// newListView keeps res, whose array has room for jsonrpc.AnswerEnd after
// it or gets it, copied, when not.
func newListView(res []byte, tools int) *listView {
	full := append(res, jsonrpc.AnswerEnd...)
	return &listView{res: full[:len(res):len(res)], suffix: full[1:], tools: tools}
}

// gzipped is the view's gzip variant: suffix compressed on the first call
// (listwire.go).
func (v *listView) gzipped() *gzipSuffix {
	v.gzOnce.Do(func() { v.gz, _ = compressSuffix(v.suffix) })
	return v.gz
}

// toolsView returns caller's view of cat.
func (s *Server) toolsView(cat *registry.Catalog, caller callers.Caller) (*listView, error) {
	lc := &s.lists
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.views == nil || lc.gen != cat.Gen {
		views, _ := lru.New[viewKey, *listView](maxViews)
		lc.gen, lc.tools, lc.views = cat.Gen, make([][]byte, len(cat.Tools)), views
	}
	key := viewKey{level: caller.Level, allow: caller.Allow.Key(), scope: caller.Scope.Key(), agent: caller.VerifiedAgent(),
		subject: caller.Subject.Kind(), issuer: caller.Subject.Issuer()}
	if v, ok := lc.views.Get(key); ok {
		return v, nil
	}
	out := make([]byte, 0, 64*1024)
	out = append(out, `{"tools":[`...)
	n := 0
	for i, def := range s.view(cat, caller) {
		if lc.tools[i] == nil {
			b, err := json.Marshal(def)
			if err != nil {
				return nil, fmt.Errorf("encode tool %s for tools/list: %w", def.Name, err)
			}
			lc.tools[i] = b
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, lc.tools[i]...)
		n++
	}
	out = append(out, `]}`...)
	v := newListView(out, n)
	lc.views.Add(key, v)
	return v, nil
}

// modernListHead is what a 2026-07-28 tools/list result carries before its
// tools, as mcp-go writes it: the server's identity and the caching hints.
func modernListHead(name, version string) []byte {
	info, _ := json.Marshal(mcp.Implementation{Name: name, Version: version})
	head := []byte(`{"_meta":{"` + mcp.MetaKeyServerInfo + `":`)
	head = append(head, info...)
	return append(head, `},"resultType":"complete","ttlMs":0,"cacheScope":"private",`...)
}

// fastList answers a plain tools/list from the cache and reports whether it
// did: a 2025-11-25 or older session's (with a valid session id), or a
// 2026-07-28 request whose only _meta is the protocol's own.
func (s *Server) fastList(w http.ResponseWriter, r *http.Request, env *jsonrpc.Message) bool {
	if !env.HasID() {
		return false
	}
	modern := mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))
	if modern {
		if r.Header.Get(mcp.HeaderMethod) != env.Method {
			return false // mcp-go answers the mismatch
		}
	} else if _, ok := edge.ParseSessionID(r.Header.Get("Mcp-Session-Id")); !ok {
		return false // mcp-go answers a missing or bad session id
	}
	if len(env.Params) > 0 && string(env.Params) != "null" {
		var p struct {
			Cursor string                     `json:"cursor"`
			Meta   map[string]json.RawMessage `json:"_meta"`
		}
		if json.Unmarshal(env.Params, &p) != nil || p.Cursor != "" {
			return false
		}
		for k := range p.Meta {
			if !modern || !isProtocolMetaKey(k) {
				return false
			}
		}
		if modern && string(p.Meta[mcp.MetaKeyProtocolVersion]) != `"`+r.Header.Get(mcp.HeaderProtocolVersion)+`"` {
			return false // mcp-go answers a missing or mismatched revision
		}
	} else if modern {
		return false
	}
	cat, caller := s.reg.Catalog(), callers.From(r.Context())
	v, err := s.toolsView(cat, caller)
	if err != nil {
		return false
	}
	res, suffix, kept := v.res, v.suffix, v
	if s.find.Applies(caller, v.tools) {
		// A short list made for this session, with no variant kept.
		if res, err = s.find.ListResult(cat, caller, r.Header.Get("Mcp-Session-Id")); err != nil {
			return false
		}
		suffix, kept = append(res[1:len(res):len(res)], jsonrpc.AnswerEnd...), nil
	}
	if s.spans.tracer != nil {
		defer s.spans.startList(r.Context(), env.ID, r.Header.Get("Mcp-Session-Id")).End()
	}
	// The envelope is all this request adds: its head (with the id, and
	// in 2026-07-28 the result's own members) and tail, around the result
	// after its opening brace.
	open := s.modernList
	if !modern {
		open = res[:1]
	}
	head, _ := jsonrpc.ResultParts(env.ID, open)
	writeList(w, r, head, suffix, kept)
	return true
}

// isProtocolMetaKey reports whether a _meta key is one with which a
// 2026-07-28 client describes itself on every request.
func isProtocolMetaKey(k string) bool {
	switch k {
	case mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities, mcp.MetaKeyLogLevel:
		return true
	}
	return false
}

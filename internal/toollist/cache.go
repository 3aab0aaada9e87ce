// Package toollist is the encoded tools/list of a catalog and the fast
// path that answers a plain tools/list from it.
//
// tools/list of a large catalog (100 upstreams x 100 tools) is a reply of
// megabytes that mcp-go rebuilds on every request: it copies and sorts the
// tools, encodes each through maps, and the session filter runs after. The
// hub instead encodes every tool once per catalog generation and keeps the
// finished result of each view (autonomy level, tool allowlist, agent), so a
// list is one lookup, and the kept bytes written as they are around the
// request's envelope (wire.go), gzipped for clients that take it.
// Requests it is not sure about (a cursor, a 2026-07-28 request with _meta
// of its own, no session) go to mcp-go as before.
//
// What a generation keeps is bounded by what its lists hold, not by the
// callers or the lists served (issue 34): the tools are encoded into one
// buffer of exactly the full list's size, which is itself the result of
// every view that shows them all, and views that show the same tools (two
// agents, two allowlists of the same reach) share one result, built at its
// exact size. A 5 MB catalog listed by one view keeps 5 MB, where each tool
// kept apart and a result grown by doubling kept 12-17 MB; and building it
// leaves 4 MB of garbage, not 43 (encode.go), which matters under the
// hub's GOGC=400: garbage is collected only once the heap is five times
// what is live, and until then it takes pages the runtime had given back
// to the OS (the hub's RSS grew by 9x the list's size over its first
// lists, benchmark 3; 1.3x now).
package toollist

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/edge"
	"github.com/purko-io/mcp-hub/internal/identity"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/pipeline"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// maxViews bounds the views kept per catalog generation, and so the
// distinct results (sets of tools) they share.
const maxViews = 256

// viewKey says what a caller sees: the same key, the same list.
type viewKey struct {
	level autonomy.Level
	allow string // the allow-list's content (Allowlist.Key), not its pointer
	scope string // the endpoint's (Scope.Key)
	agent string
	// subject and issuer are what a server with token exchange asks of
	// the caller's own token (tokenexchange.Exchanger.Accepts).
	subject identity.Kind
	issuer  string
}

// Options are what a Cache needs of the server it answers for.
type Options struct {
	// Name and Version are the server's, which a 2026-07-28 result
	// carries in its _meta as mcp-go writes it.
	Name, Version string
	// Catalog is the current catalog (registry.Registry.Catalog).
	Catalog func() *registry.Catalog
	// Visible reports whether caller's tools/list shows t: the decision
	// the server's own tools/list and its calls go by
	// (pipeline.Visible), so that the cache never lists what they
	// would not. A plain func, called for each tool of the catalog as a
	// view is built, so that building one allocates nothing of it.
	Visible func(caller callers.Caller, t registry.Tool) bool
	// Def is the definition a list shows for a tool.
	Def func(registry.Tool) mcp.Tool
	// Short, when not nil, is tool search (findtools.Finder): a caller
	// whose view it applies to gets its short list instead.
	Short Shortlist
	// StartSpan, when not nil, starts the span of a list Serve answers;
	// nil, tracing is off and costs nothing.
	StartSpan func(ctx context.Context, id json.RawMessage, session string) trace.Span
	// Through, when not nil, takes each list Serve answers through the
	// pipeline's steps (the caller's limits, the record), as the face's
	// own tools/list is: write writes the list, and a refusal is the
	// error Through returns, which Serve answers instead. A caller whose
	// content filters screen what it receives is never answered from the
	// cache (pipeline.Filters).
	Through func(ctx context.Context, id json.RawMessage, session string, write func() error) *jsonrpc.Error
}

// Shortlist is the short tools/list of tool search, which replaces a view
// of more tools than a caller takes (findtools.Finder). It is built for
// its session, so the cache keeps none.
type Shortlist interface {
	// Applies reports whether caller, whose view shows viewSize tools,
	// gets the short list.
	Applies(caller callers.Caller, viewSize int) bool
	// ListResult is caller's short list in session, encoded as a
	// tools/list result.
	ListResult(cat *registry.Catalog, caller callers.Caller, session string) ([]byte, error)
}

// Cache holds the encoded tools and views of one catalog generation, and
// answers tools/list from them.
type Cache struct {
	opts Options
	// modern opens a 2026-07-28 result: the server's identity and the
	// caching hints, the same for every list.
	modern []byte

	mu    sync.Mutex
	gen   uint64
	tools *encodedTools // every tool of the generation, nil until first needed
	views *lru.Cache[viewKey, *listView]
	// byTools are the results by the tools they show (a bitmap of
	// indices in the catalog, as a string): callers of different keys
	// that see the same tools share one.
	byTools *lru.Cache[string, *listView]
}

// New returns an empty cache; it encodes a generation on its first list.
func New(opts Options) *Cache {
	return &Cache{opts: opts, modern: modernListHead(opts.Name, opts.Version)}
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

// gzipped is the view's gzip variant: suffix compressed on the first call
// (wire.go).
func (v *listView) gzipped() *gzipSuffix {
	v.gzOnce.Do(func() { v.gz, _ = compressSuffix(v.suffix) })
	return v.gz
}

// The result of a view: `{"tools":[` the tools, comma-separated, `]}`.
const (
	listOpen  = `{"tools":[`
	listClose = `]}`
)

// encodedTools is every tool of one catalog generation encoded once, in
// the catalog's order, laid out as the result of a view that shows them
// all (with jsonrpc.AnswerEnd after it): that view's result is list
// itself, and any other view copies its tools' bytes from it.
type encodedTools struct {
	list []byte
	at   []int // where tool i's encoding starts in list
	size []int // its length, -1 when it could not be encoded
	// failed are the tools that could not be encoded: a view that shows
	// one answers with the error (and mcp-go with its own).
	failed map[int]error
}

// encodeTools encodes the definitions def gives of cat's tools, as
// mcp-go does (encode.go): a first pass counts, so that list is
// allocated once, at its size, and the second writes into it.
func encodeTools(cat *registry.Catalog, def func(registry.Tool) mcp.Tool) *encodedTools {
	e := &encodedTools{at: make([]int, len(cat.Tools)), size: make([]int, len(cat.Tools))}
	fail := func(i int, err error) {
		if e.failed == nil {
			e.failed = map[int]error{}
		}
		e.failed[i] = fmt.Errorf("encode tool %s for tools/list: %w", cat.Tools[i].Name, err)
		e.size[i] = -1
	}
	const frame = len(listOpen) + len(listClose) + len(jsonrpc.AnswerEnd)
	n := frame - 1 // one comma fewer than tools
	count := newToolEncoder(nil, true)
	for i, t := range cat.Tools {
		d := def(t)
		count.n = 0
		if err := count.tool(&d); err != nil {
			fail(i, err)
			continue
		}
		n += count.n + 1 // and its comma
	}
	w := newToolEncoder(make([]byte, 0, max(n, frame)), false)
	w.rawString(listOpen)
	for i, t := range cat.Tools {
		if e.size[i] < 0 {
			continue
		}
		mark := len(w.buf)
		if mark > len(listOpen) {
			w.rawString(",")
		}
		d := def(t)
		at := len(w.buf)
		if err := w.tool(&d); err != nil {
			// Not seen counting: a catalog is never changed, so never.
			w.buf = w.buf[:mark]
			fail(i, err)
			continue
		}
		e.at[i], e.size[i] = at, len(w.buf)-at
	}
	w.rawString(listClose)
	w.rawString(jsonrpc.AnswerEnd)
	e.list = w.buf
	return e
}

// view returns the result that shows the tools of shown (indices into the
// catalog), n of them: list itself when that is every tool, else a copy
// of their bytes at its exact size.
func (e *encodedTools) view(shown []byte, n int) (*listView, error) {
	size := len(listOpen) + len(listClose) + len(jsonrpc.AnswerEnd) + max(n-1, 0)
	for i := range e.at {
		if shown[i/8]&(1<<(i%8)) == 0 {
			continue
		}
		if err := e.failed[i]; err != nil {
			return nil, err
		}
		size += e.size[i]
	}
	full := e.list
	if n != len(e.at) || len(e.failed) > 0 {
		full = append(make([]byte, 0, size), listOpen...)
		for i := range e.at {
			if shown[i/8]&(1<<(i%8)) == 0 {
				continue
			}
			if len(full) > len(listOpen) {
				full = append(full, ',')
			}
			full = append(full, e.list[e.at[i]:e.at[i]+e.size[i]]...)
		}
		full = append(append(full, listClose...), jsonrpc.AnswerEnd...)
	}
	res := len(full) - len(jsonrpc.AnswerEnd)
	return &listView{res: full[:res:res], suffix: full[1:], tools: n}, nil
}

// view returns caller's view of cat.
func (c *Cache) view(cat *registry.Catalog, caller callers.Caller) (*listView, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.views == nil || c.gen != cat.Gen {
		views, _ := lru.New[viewKey, *listView](maxViews)
		byTools, _ := lru.New[string, *listView](maxViews)
		c.gen, c.tools, c.views, c.byTools = cat.Gen, nil, views, byTools
	}
	key := viewKey{level: caller.Level, allow: caller.Allow.Key(), scope: caller.Scope.Key(), agent: caller.VerifiedAgent(),
		subject: caller.Subject.Kind(), issuer: caller.Subject.Issuer()}
	if v, ok := c.views.Get(key); ok {
		return v, nil
	}
	shown := make([]byte, (len(cat.Tools)+7)/8)
	n := 0
	for i, t := range cat.Tools {
		if c.opts.Visible(caller, t) {
			shown[i/8] |= 1 << (i % 8)
			n++
		}
	}
	v, ok := c.byTools.Get(string(shown))
	if !ok {
		if c.tools == nil {
			c.tools = encodeTools(cat, c.opts.Def)
		}
		var err error
		if v, err = c.tools.view(shown, n); err != nil {
			return nil, err
		}
		c.byTools.Add(string(shown), v)
	}
	c.views.Add(key, v)
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

// Serve answers a plain tools/list from the cache and reports whether it
// did: a 2025-11-25 or older session's (with a valid session id), or a
// 2026-07-28 request whose only _meta is the protocol's own. env is the
// request as the face read it. When it reports false it has written
// nothing: the face serves the request its other way, which answers what
// Serve leaves (a cursor, other _meta) and refuses what it will not
// (a bad session id, a revision that disagrees with its header).
func (c *Cache) Serve(w http.ResponseWriter, r *http.Request, env *jsonrpc.Message) bool {
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
	cat, caller := c.opts.Catalog(), callers.From(r.Context())
	if pipeline.Filters(caller) {
		return false // the face's own list is screened
	}
	v, err := c.view(cat, caller)
	if err != nil {
		return false
	}
	session := r.Header.Get("Mcp-Session-Id")
	res, suffix, kept := v.res, v.suffix, v
	if c.opts.Short != nil && c.opts.Short.Applies(caller, v.tools) {
		// A short list made for this session, with no variant kept.
		if res, err = c.opts.Short.ListResult(cat, caller, session); err != nil {
			return false
		}
		suffix, kept = append(res[1:len(res):len(res)], jsonrpc.AnswerEnd...), nil
	}
	if c.opts.StartSpan != nil {
		defer c.opts.StartSpan(r.Context(), env.ID, session).End()
	}
	// The envelope is all this request adds: its head (with the id, and
	// in 2026-07-28 the result's own members) and tail, around the result
	// after its opening brace.
	open := c.modern
	if !modern {
		open = res[:1]
	}
	head, _ := jsonrpc.ResultParts(env.ID, open)
	if c.opts.Through == nil {
		writeList(w, r, head, suffix, kept)
		return true
	}
	if e := c.opts.Through(r.Context(), env.ID, session, func() error { writeList(w, r, head, suffix, kept); return nil }); e != nil {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(jsonrpc.ErrorReply(env.ID, e))
	}
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

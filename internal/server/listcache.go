package server

import (
	"encoding/json"
	"net/http"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// tools/list of a large catalog (100 upstreams x 100 tools) is a reply of
// megabytes that mcp-go rebuilds on every request: it copies and sorts the
// tools, encodes each through maps, and the session filter runs after. The
// hub instead encodes every tool once per catalog generation and keeps the
// finished result of each view (autonomy level, tool allowlist, agent), so a
// list is one lookup and one write. Requests it is not sure about (a
// cursor, 2026-07-28, no session) go to mcp-go as before.

// maxViews bounds the views kept per catalog generation.
const maxViews = 256

// viewKey says what a caller sees: the same key, the same list.
type viewKey struct {
	level autonomy.Level
	allow *autonomy.Allowlist
	agent string
}

// listCache holds the encoded tools and views of one catalog generation.
type listCache struct {
	mu    sync.Mutex
	gen   uint64
	tools [][]byte // encoded cat.Tools[i].Def, nil until first needed
	views *lru.Cache[viewKey, []byte]
}

// toolsResult returns the encoded tools/list result for caller.
func (s *Server) toolsResult(cat *registry.Catalog, caller Caller) ([]byte, error) {
	lc := &s.lists
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.views == nil || lc.gen != cat.Gen {
		views, _ := lru.New[viewKey, []byte](maxViews)
		lc.gen, lc.tools, lc.views = cat.Gen, make([][]byte, len(cat.Tools)), views
	}
	key := viewKey{level: caller.Level, allow: caller.Allow, agent: caller.verifiedAgent}
	if res, ok := lc.views.Get(key); ok {
		return res, nil
	}
	out := make([]byte, 0, 64*1024)
	out = append(out, `{"tools":[`...)
	n := 0
	for i, t := range cat.Tools {
		if !visible(caller, t) {
			continue
		}
		if lc.tools[i] == nil {
			b, err := json.Marshal(t.Def)
			if err != nil {
				return nil, err
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
	lc.views.Add(key, out)
	return out, nil
}

// fastList answers a plain tools/list of a 2025-11-25 or older session from
// the cache and reports whether it did.
func (s *Server) fastList(w http.ResponseWriter, r *http.Request, env envelope) bool {
	if mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) || r.Header.Get("Mcp-Session-Id") == "" ||
		len(env.ID) == 0 || string(env.ID) == "null" {
		return false
	}
	if _, err := (idManager{}).Validate(r.Header.Get("Mcp-Session-Id")); err != nil {
		return false // mcp-go answers a bad session id
	}
	if len(env.Params) > 0 && string(env.Params) != "null" {
		var p struct {
			Cursor string          `json:"cursor"`
			Meta   json.RawMessage `json:"_meta"`
		}
		if json.Unmarshal(env.Params, &p) != nil || p.Cursor != "" || len(p.Meta) > 0 {
			return false
		}
	}
	res, err := s.toolsResult(s.reg.Catalog(), callerFrom(r.Context()))
	if err != nil {
		return false
	}
	out := make([]byte, 0, len(res)+len(env.ID)+40)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, env.ID...)
	out = append(out, `,"result":`...)
	out = append(out, res...)
	out = append(out, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
	return true
}

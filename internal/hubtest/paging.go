package hubtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
)

// ListFunc answers one list request of a PagingUpstream: method is
// tools/list, resources/list, resources/templates/list or prompts/list,
// cursor the one the hub sent ("" for the first page). It returns the
// page's items as a JSON array and the next cursor ("": the last page).
type ListFunc func(method, cursor string) (items []byte, next string)

// PagingUpstream is an MCP server (Streamable HTTP, legacy handshake, JSON
// answers) on 127.0.0.1 whose lists are whatever a ListFunc says: pages
// that never end, one page far too large, a cursor that repeats. It is
// written by hand rather than with mcp-go's server, which serves only
// well-formed lists.
type PagingUpstream struct {
	// URL is its endpoint: http://127.0.0.1:PORT/mcp.
	URL string
	// Pages counts the list requests it answered.
	Pages atomic.Int64
	// Events makes it answer as an event stream (one message event)
	// instead of a JSON body.
	Events atomic.Bool
}

// listKeys are the result fields of each list method.
var listKeys = map[string]string{
	"tools/list":               "tools",
	"resources/list":           "resources",
	"resources/templates/list": "resourceTemplates",
	"prompts/list":             "prompts",
}

// StartPagingUpstream serves list as the MCP server name until t's
// cleanup. It announces tools, resources and prompts; a list answers
// whatever list returns for it.
func StartPagingUpstream(t testing.TB, name string, list ListFunc) *PagingUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("hubtest: %v", err)
	}
	u := &PagingUpstream{URL: "http://" + ln.Addr().String() + "/mcp"}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed) // no GET stream
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Cursor string `json:"cursor"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if len(req.ID) == 0 {
			w.WriteHeader(http.StatusAccepted) // a notification
			return
		}
		var result []byte
		switch key, isList := listKeys[req.Method]; {
		case isList:
			u.Pages.Add(1)
			items, next := list(req.Method, req.Params.Cursor)
			var b bytes.Buffer
			fmt.Fprintf(&b, `{%q:`, key)
			b.Write(items)
			if next != "" {
				fmt.Fprintf(&b, `,"nextCursor":%q`, next)
			}
			b.WriteByte('}')
			result = b.Bytes()
		case req.Method == "initialize":
			result = fmt.Appendf(nil, `{"protocolVersion":"2025-06-18","serverInfo":{"name":%q,"version":"1"},`+
				`"capabilities":{"tools":{"listChanged":true},"resources":{},"prompts":{}}}`, name)
		case req.Method == "ping":
			result = []byte(`{}`)
		default: // server/discover among them: a legacy server
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, req.ID)
			return
		}
		if u.Events.Load() {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte("event: message\ndata: "))
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":`, req.ID)
		_, _ = w.Write(result)
		_, _ = w.Write([]byte("}"))
		if u.Events.Load() {
			_, _ = w.Write([]byte("\n\n"))
		}
	})}
	serveUntilCleanup(t, hs, ln)
	return u
}

// ToolsJSON is a JSON array of n tools named prefix0, prefix1, ..., each
// with an input schema of properties string properties: about 100 bytes a
// tool and 25 a property, as a server with many tools, or large schemas,
// lists them.
func ToolsJSON(prefix string, n, properties int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"%s%d","description":"Tool %d of a server that lists much.","inputSchema":{"type":"object","properties":{`, prefix, i, i)
		for j := range properties {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"p%d":{"type":"string"}`, j)
		}
		b.WriteString(`}}}`)
	}
	b.WriteByte(']')
	return b.Bytes()
}

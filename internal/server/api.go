package server

import (
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/registry"
)

// listing is the body of GET /api/mcp/tools, in the shape Purko's dashboard
// and `jq '.servers[].tools[].name'` expect.
type listing struct {
	Servers    []serverListing `json:"servers"`
	TotalTools int             `json:"totalTools"`
}

type serverListing struct {
	Name      string            `json:"name"`
	URL       string            `json:"url"`
	Transport string            `json:"transport"`
	Source    string            `json:"source,omitempty"`
	Status    string            `json:"status"`
	Error     string            `json:"error,omitempty"`
	Protocol  string            `json:"protocolVersion,omitempty"`
	ToolCount int               `json:"toolCount"`
	Tools     any               `json:"tools"`
	Hidden    map[string]string `json:"hiddenTools,omitempty"`
}

type toolListing struct {
	Name         string              `json:"name"`
	Description  string              `json:"description,omitempty"`
	InputSchema  any                 `json:"inputSchema"`
	Annotations  *mcp.ToolAnnotation `json:"annotations,omitempty"`
	Server       string              `json:"server"`
	OriginalName string              `json:"originalName,omitempty"`
}

// handleTools lists every server with its status and tools. With
// ?format=names, tools is a list of names (Purko's dashboard shape).
// Only servers' tools that can be called count in totalTools.
func (s *Server) handleTools(w http.ResponseWriter, r *http.Request) {
	cat := s.reg.Catalog()
	namesOnly := r.URL.Query().Get("format") == "names"
	out := listing{Servers: make([]serverListing, 0, len(cat.Servers)), TotalTools: len(cat.Tools)}
	for _, sv := range cat.Servers {
		sl := serverListing{
			Name: sv.Name, URL: sv.URL, Transport: string(sv.Transport), Source: sv.Source,
			Status: string(sv.Status.State), Error: sv.Status.Error, Protocol: sv.Status.Protocol,
			ToolCount: len(sv.Tools), Hidden: sv.Hidden,
		}
		if namesOnly {
			names := make([]string, len(sv.Tools))
			for i, t := range sv.Tools {
				names[i] = t.Name
			}
			sl.Tools = names
		} else {
			sl.Tools = toolListings(sv.Tools)
		}
		out.Servers = append(out.Servers, sl)
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
}

func toolListings(tools []registry.Tool) []toolListing {
	out := make([]toolListing, len(tools))
	for i, t := range tools {
		tl := toolListing{Name: t.Name, Description: t.Def.Description, InputSchema: t.Def.InputSchema, Server: t.Server}
		if t.Def.RawInputSchema != nil {
			tl.InputSchema = t.Def.RawInputSchema
		}
		if t.Original != t.Name {
			tl.OriginalName = t.Original
		}
		a := t.Def.Annotations
		if a != (mcp.ToolAnnotation{}) {
			tl.Annotations = &a
		}
		out[i] = tl
	}
	return out
}

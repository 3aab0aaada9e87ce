package server

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/mcpws"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// notesServer is an upstream with two tools, a resource and a prompt, all
// named after it.
func notesServer(name string) *mcpserver.MCPServer {
	s := mcpserver.NewMCPServer(name, "1", mcpserver.WithToolCapabilities(true),
		mcpserver.WithResourceCapabilities(false, true), mcpserver.WithPromptCapabilities(true))
	for _, tool := range []string{"read_" + name, "write_" + name} {
		s.AddTool(mcp.NewTool(tool), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(tool + " ran"), nil
		})
	}
	s.AddResource(mcp.NewResource("notes://"+name, name+" notes"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: "notes://" + name, Text: name}}, nil
	})
	s.AddPrompt(mcp.NewPrompt("prompt_"+name), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult(name, nil), nil
	})
	return s
}

// TestEndpointsOnEveryFace: /servers/NAME/ publishes one server's or one
// virtual server's part of the catalog, the same on every face (Streamable
// HTTP, SSE, WebSocket, stdio): its tools listed and callable, the others
// neither, resources and prompts only of servers it publishes whole.
func TestEndpointsOnEveryFace(t *testing.T) {
	var specs []config.ServerSpec
	for _, name := range []string{"alpha", "beta", "gamma"} {
		u := serveOn(t, mcpserver.NewStreamableHTTPServer(notesServer(name))) + "/mcp"
		specs = append(specs, config.ServerSpec{Name: name, URL: u, Transport: config.TransportStreamableHTTP})
	}
	h := newTestHub(t, specs)
	h.waitConnected("alpha", "beta", "gamma")
	h.setVirtual(toolspec.VirtualServer{Name: "pair", Servers: []string{"alpha"}, Tools: []string{"READ-*", "nothing_*"}, Source: "test"})
	waitFor(t, "virtual server published", func() bool { _, ok := h.reg.Catalog().Endpoint("pair"); return ok })
	h.waitPublished()

	var listing struct {
		Servers []struct {
			Metadata struct{ Name string }
			Endpoint string
		}
		VirtualServers []struct {
			Name, Source, Endpoint string
			ToolCount              int
		}
	}
	getJSON(t, h.url("/api/mcp/servers"), &listing)
	mustf(t, len(listing.VirtualServers) == 1 && listing.VirtualServers[0].Name == "pair" && listing.VirtualServers[0].Source == "test" &&
		listing.VirtualServers[0].Endpoint == "/servers/pair/mcp" && listing.VirtualServers[0].ToolCount == 4, "virtual servers listed: %+v", listing.VirtualServers)
	for _, sv := range listing.Servers {
		mustf(t, sv.Endpoint == "/servers/"+sv.Metadata.Name+"/mcp", "server %s listed with endpoint %q", sv.Metadata.Name, sv.Endpoint)
	}

	faces := []struct {
		name string
		dial func(t *testing.T, endpoint string) transport.Interface
	}{
		{"streamable-http", func(t *testing.T, ep string) transport.Interface {
			tr, err := transport.NewStreamableHTTP(h.url("/servers/" + ep + "/mcp"))
			if err != nil {
				t.Fatal(err)
			}
			return tr
		}},
		{"sse", func(t *testing.T, ep string) transport.Interface {
			tr, err := transport.NewSSE(h.url("/servers/" + ep + "/sse"))
			if err != nil {
				t.Fatal(err)
			}
			return tr
		}},
		{"websocket", func(t *testing.T, ep string) transport.Interface {
			return mcpws.NewClientTransport(strings.Replace(h.url("/servers/"+ep+"/ws"), "http://", "ws://", 1), nil)
		}},
		{"stdio", func(t *testing.T, ep string) transport.Interface {
			tr, end := h.stdioTransport(autonomy.Full, ep)
			t.Cleanup(end)
			return tr
		}},
	}
	endpoints := []struct {
		name      string
		tools     []string // listed, sorted
		other     string   // a tool of the hub not listed here: refused
		resources []string
		prompts   []string
	}{
		{"pair", []string{"read_alpha", "read_beta", "read_gamma", "write_alpha"}, "write_beta", []string{"notes://alpha"}, []string{"prompt_alpha"}},
		{"beta", []string{"read_beta", "write_beta"}, "read_alpha", []string{"notes://beta"}, []string{"prompt_beta"}},
	}
	for _, face := range faces {
		for _, ep := range endpoints {
			t.Run(face.name+"/"+ep.name, func(t *testing.T) {
				c, _ := dialFace(t, face.dial(t, ep.name))
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				names := toolNames(t, c)
				slices.Sort(names)
				mustf(t, slices.Equal(names, ep.tools), "tools = %v, want %v", names, ep.tools)
				for _, tool := range ep.tools {
					got, isErr := call(t, c, tool, nil)
					mustf(t, !isErr && got == tool+" ran", "%s = %q (error %v)", tool, got, isErr)
				}
				got, isErr := call(t, c, ep.other, nil)
				mustf(t, isErr && strings.Contains(got, "not published by the endpoint /servers/"+ep.name), "%s = %q", ep.other, got)

				res, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
				mustf(t, err == nil, "resources/list: %v", err)
				var uris []string
				for _, r := range res.Resources {
					uris = append(uris, r.URI)
				}
				mustf(t, slices.Equal(uris, ep.resources), "resources = %v, want %v", uris, ep.resources)
				prompts, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
				mustf(t, err == nil, "prompts/list: %v", err)
				var pnames []string
				for _, p := range prompts.Prompts {
					pnames = append(pnames, p.Name)
				}
				mustf(t, slices.Equal(pnames, ep.prompts), "prompts = %v, want %v", pnames, ep.prompts)
				other := "notes://gamma"
				_, err = c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: other}})
				mustf(t, err != nil && strings.Contains(err.Error(), "does not publish"), "read %s: %v", other, err)
			})
		}
	}
}

// TestEndpointUnknown: a name that is neither a server nor a virtual
// server is a 404 that says where the names are; one that goes away stops
// being served on the next request.
func TestEndpointUnknown(t *testing.T) {
	h := newTestHub(t, nil)
	h.setVirtual(toolspec.VirtualServer{Name: "v", Tools: []string{"static_analysis"}})
	waitFor(t, "virtual server published", func() bool { _, ok := h.reg.Catalog().Endpoint("v"); return ok })
	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/servers/nope/mcp", http.StatusNotFound, `no server or virtual server named \"nope\" (GET /api/mcp/servers lists them)`},
		{"/servers/v/mcp", http.StatusOK, `"serverInfo"`},
	} {
		resp, body := h.send(t, http.MethodPost, tc.path, strings.NewReader(initBody),
			"Content-Type", "application/json", "Accept", "application/json, text/event-stream")
		mustf(t, resp.StatusCode == tc.status && strings.Contains(body, tc.want), "%s: %s %s", tc.path, resp.Status, body)
	}
	h.setVirtual()
	waitFor(t, "virtual server gone", func() bool { _, ok := h.reg.Catalog().Endpoint("v"); return !ok })
	resp, _ := h.send(t, http.MethodPost, "/servers/v/mcp", strings.NewReader(initBody),
		"Content-Type", "application/json", "Accept", "application/json, text/event-stream")
	mustf(t, resp.StatusCode == http.StatusNotFound, "removed virtual server: %s", resp.Status)
}

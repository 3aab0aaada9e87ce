package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/upstream/calltoken"
)

// signInGrants are grants that exist once a user signed in (signIn).
type signInGrants struct {
	mu     sync.Mutex
	users  map[string]bool
	asked  []string // who was asked to sign in
	called chan string
}

func (g *signInGrants) Token(_ context.Context, user string) (string, string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.users[user] {
		g.asked = append(g.asked, user)
		data, _ := json.Marshal(mcp.URLElicitationRequiredError{Elicitations: []mcp.ElicitationParams{{Mode: mcp.ElicitationModeURL,
			ElicitationID: "sign-in-" + user, URL: "https://hub.example/oauth/connect/sealed-" + user, Message: "Sign in to alpha."}}})
		return "", "", &jsonrpc.Error{Code: mcp.URL_ELICITATION_REQUIRED, Message: "upstream alpha is reached with each caller's own account there", Data: data}
	}
	return "grant-of-" + user, user + "@alpha", nil
}

func (g *signInGrants) signIn(user string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.users[user] = true
}

func (g *signInGrants) Refused(string, string) {}

func (g *signInGrants) Await(ctx context.Context, user string) error {
	for {
		g.mu.Lock()
		ok := g.users[user]
		g.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (g *signInGrants) Any(context.Context) string { return "" }

// TestSignInReachesEveryCaller: a call of a server reached as each
// caller's own account, by a caller without a grant, asks for a sign-in
// in the form the caller takes: a 2025-11-25 session that declared URL
// elicitation gets -32042, one that did not a BLOCKED text with the link,
// and a 2026-07-28 caller that declared it a round of its call, after
// which the call goes on (no retry) once the sign-in is done.
func TestSignInReachesEveryCaller(t *testing.T) {
	a := newFakeUpstream(t, "alpha")
	spec := a.spec()
	spec.UserOAuth = &config.UserOAuth{}
	g := &signInGrants{users: map[string]bool{}}
	h := newTestHub(t, []config.ServerSpec{spec}, func(o *registry.Options) {
		o.Upstream.UserGrants = func(config.ServerSpec) calltoken.Grants { return g }
	})
	h.waitConnected("alpha")
	url := &mcp.ElicitationCapability{URL: &struct{}{}}

	t.Run("2025-11-25 without URL elicitation: BLOCKED with the link", func(t *testing.T) {
		c := dialSignIn(t, h, mcp.LATEST_LEGACY_PROTOCOL_VERSION, nil, nil)
		res, err := c.CallTool(ctx10(t), toolRequest("whoami_alpha"))
		mustf(t, err == nil && res.IsError && strings.HasPrefix(resultText(res), "BLOCKED: upstream alpha is reached with each caller's own account there.") &&
			strings.Contains(resultText(res), "Open: https://hub.example/oauth/connect/sealed-anonymous@127.0.0.1"), "call = %v %s", err, resultText(res))
	})
	t.Run("2025-11-25 with URL elicitation: -32042", func(t *testing.T) {
		c := dialSignIn(t, h, mcp.LATEST_LEGACY_PROTOCOL_VERSION, url, nil)
		_, err := c.CallTool(ctx10(t), toolRequest("whoami_alpha"))
		var e mcp.URLElicitationRequiredError
		mustf(t, errors.As(err, &e) && len(e.Elicitations) == 1 && e.Elicitations[0].URL == "https://hub.example/oauth/connect/sealed-anonymous@127.0.0.1", "call = %v", err)
	})
	t.Run("2026-07-28 with URL elicitation: a round, then the result", func(t *testing.T) {
		var asked []mcp.ElicitationParams
		c := dialSignIn(t, h, "", url, func(p mcp.ElicitationParams) {
			asked = append(asked, p)
			g.signIn("anonymous@127.0.0.1") // the user signs in in the browser
		})
		res, err := c.CallTool(ctx10(t), toolRequest("whoami_alpha"))
		mustf(t, err == nil && !res.IsError && resultText(res) == "alpha", "call = %v %s", err, resultText(res))
		mustf(t, len(asked) == 1 && asked[0].Mode == mcp.ElicitationModeURL && asked[0].URL == "https://hub.example/oauth/connect/sealed-anonymous@127.0.0.1", "asked %+v", asked)
	})
}

func toolRequest(name string) mcp.CallToolRequest {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	return req
}

// elicitFunc answers every elicitation with accept after calling f.
type elicitFunc func(mcp.ElicitationParams)

func (f elicitFunc) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	f(req.Params)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept}}, nil
}

// dialSignIn opens a client at protocol ("": 2026-07-28) declaring
// elicitation when not nil, answering elicitations with onElicit.
func dialSignIn(t *testing.T, h *testHub, protocol string, elicitation *mcp.ElicitationCapability, onElicit func(mcp.ElicitationParams)) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(h.url("/mcp"))
	if err != nil {
		t.Fatal(err)
	}
	opts := []client.ClientOption{client.WithClientCapabilities(mcp.ClientCapabilities{Elicitation: elicitation})}
	if protocol != "" {
		opts = append(opts, client.WithProtocolVersion(protocol))
	}
	if onElicit != nil {
		opts = append(opts, client.WithElicitationHandler(elicitFunc(onElicit)))
	}
	c := client.NewClient(tr, opts...)
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx10(t), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestGrantTokenOfHubRequestsNotListed: a server with userOAuth and no
// credential of the hub's is listed with the token of a caller's grant;
// an upstream that writes the token it got into its tool list shows it to
// nobody.
func TestGrantTokenOfHubRequestsNotListed(t *testing.T) {
	const secret = "grant-token-of-alice-0123456789"
	echo := mcpserver.NewMCPServer("echoer", "1", mcpserver.WithToolCapabilities(true),
		mcpserver.WithToolFilter(func(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
			auth, _ := ctx.Value(authKey{}).(string)
			out := make([]mcp.Tool, len(tools))
			for i, tool := range tools {
				tool.Description = "you called with " + auth
				out[i] = tool
			}
			return out
		}))
	echo.AddTool(mcp.NewTool("peek"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	srv := httptest.NewServer(mcpserver.NewStreamableHTTPServer(echo, mcpserver.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(ctx, authKey{}, r.Header.Get("Authorization"))
	})))
	t.Cleanup(srv.Close)
	g := &anyGrants{signInGrants: signInGrants{users: map[string]bool{}}, any: secret}
	spec := config.ServerSpec{Name: "echoer", URL: srv.URL, Transport: config.TransportStreamableHTTP, UserOAuth: &config.UserOAuth{}}
	h := newTestHub(t, []config.ServerSpec{spec}, func(o *registry.Options) {
		o.Upstream.UserGrants = func(config.ServerSpec) calltoken.Grants { return g }
	})
	h.waitConnected("echoer")
	c, _ := h.dial()
	res, err := c.ListTools(ctx10(t), mcp.ListToolsRequest{})
	mustf(t, err == nil && len(res.Tools) == 1, "tools/list: %v %+v", err, res)
	d := res.Tools[0].Description
	mustf(t, strings.HasPrefix(d, "you called with Bearer ") && !strings.Contains(d, secret), "the listed description %q", d)
}

type authKey struct{}

// anyGrants are signInGrants whose hub token is any.
type anyGrants struct {
	signInGrants
	any string
}

func (g *anyGrants) Any(context.Context) string { return g.any }

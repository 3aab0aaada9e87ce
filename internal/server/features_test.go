package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
)

// richUpstream is a real mcp-go server with everything besides tools:
// resources (docs://<name>/readme, template docs://<name>/pages/{id}), a
// prompt greet_<name> with completions, logging, and tools that send
// progress, log messages, resource updates, and ask the client for a
// sampling (written once in the multi round-trip style, which mcp-go turns
// into a server request for a legacy session).
type richUpstream struct {
	name     string
	url      string
	canceled chan struct{}
	asked    atomic.Int64
	level    atomic.Value // the last logging/setLevel it got
}

func newRichUpstream(t *testing.T, name string) *richUpstream {
	t.Helper()
	u, s := newRichServer(name)
	serveRich(t, u, s)
	return u
}

// serveRich serves s, the server of u, on a free port of 127.0.0.1 until
// the test ends.
func serveRich(t *testing.T, u *richUpstream, s *mcpserver.MCPServer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: mcpserver.NewStreamableHTTPServer(s)}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	u.url = "http://" + ln.Addr().String() + "/mcp"
}

// newRichServer is the server of a richUpstream, for a test that serves it
// its own way (the revision matrix).
func newRichServer(name string) (*richUpstream, *mcpserver.MCPServer) {
	u := &richUpstream{name: name, canceled: make(chan struct{})}
	readme := "docs://" + name + "/readme"
	// mcp-go leaves the fan-out of resources/updated to the server: record
	// who subscribed, a legacy session by id or a 2026-07-28 listen stream
	// by its context.
	var subMu sync.Mutex
	legacySubs := map[string]bool{}
	var listenSubs []context.Context
	hooks := &mcpserver.Hooks{}
	hooks.AddBeforeSubscribe(func(ctx context.Context, _ any, r *mcp.SubscribeRequest) {
		subMu.Lock()
		defer subMu.Unlock()
		if cs := mcpserver.ClientSessionFromContext(ctx); cs != nil && r.Params.URI == readme {
			legacySubs[cs.SessionID()] = true
		}
	})
	hooks.AddBeforeUnsubscribe(func(ctx context.Context, _ any, r *mcp.UnsubscribeRequest) {
		subMu.Lock()
		defer subMu.Unlock()
		if cs := mcpserver.ClientSessionFromContext(ctx); cs != nil {
			delete(legacySubs, cs.SessionID())
		}
	})
	hooks.AddAfterSetLevel(func(_ context.Context, _ any, r *mcp.SetLevelRequest, _ *mcp.EmptyResult) {
		u.level.Store(r.Params.Level)
	})
	hooks.AddBeforeSubscriptionsListen(func(ctx context.Context, _ any, r *mcp.SubscriptionsListenRequest) {
		subMu.Lock()
		defer subMu.Unlock()
		for _, uri := range r.Params.Notifications.ResourceSubscriptions {
			if uri == readme {
				listenSubs = append(listenSubs, ctx)
			}
		}
	})
	s := mcpserver.NewMCPServer(name, "1.0.0",
		mcpserver.WithHooks(hooks),
		mcpserver.WithToolCapabilities(true),
		mcpserver.WithResourceCapabilities(true, true),
		mcpserver.WithPromptCapabilities(true),
		mcpserver.WithLogging(),
		mcpserver.WithCompletions(),
		mcpserver.WithPromptCompletionProvider(prefixCompleter{"alice", "alina", "bob"}),
	)
	s.AddResource(mcp.NewResource(readme, "readme", mcp.WithMIMEType("text/plain")),
		func(ctx context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, MIMEType: "text/plain", Text: "readme of " + name}}, nil
		})
	// Every rich upstream offers shared://info and the prompt common: the
	// hub must tell them apart.
	s.AddResource(mcp.NewResource("shared://info", "info"),
		func(ctx context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, Text: "info of " + name}}, nil
		})
	s.AddPrompt(mcp.NewPrompt("common"), func(ctx context.Context, r mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("common", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("common of "+name))}), nil
	})
	s.AddTool(mcp.NewTool("grow_"+name), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.AddResource(mcp.NewResource("docs://"+name+"/new", "new"), func(ctx context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, Text: "new"}}, nil
		})
		return mcp.NewToolResultText("grown"), nil
	})
	s.AddResourceTemplate(mcp.NewResourceTemplate("docs://"+name+"/pages/{id}", "page"),
		func(ctx context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			id := strings.TrimPrefix(r.Params.URI, "docs://"+name+"/pages/")
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, Text: "page " + id + " of " + name}}, nil
		})
	s.AddPrompt(mcp.NewPrompt("greet_"+name, mcp.WithArgument("who", mcp.RequiredArgument())),
		func(ctx context.Context, r mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("greeting", []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Hello "+r.Params.Arguments["who"]+" from "+name)),
			}), nil
		})
	s.AddTool(mcp.NewTool("touch_"+name), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		subMu.Lock()
		defer subMu.Unlock()
		params := map[string]any{"uri": readme}
		for id := range legacySubs {
			_ = s.SendNotificationToSpecificClient(id, string(mcp.MethodNotificationResourceUpdated), params)
		}
		for _, lctx := range listenSubs {
			if lctx.Err() == nil {
				_ = s.SendNotificationToClient(lctx, string(mcp.MethodNotificationResourceUpdated), params)
			}
		}
		return mcp.NewToolResultText("touched"), nil
	})
	s.AddTool(mcp.NewTool("progress_"+name), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r.Params.Meta == nil || r.Params.Meta.ProgressToken == nil {
			return mcp.NewToolResultError("no progress token reached the upstream"), nil
		}
		for i := 1; i <= 3; i++ {
			_ = s.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
				"progressToken": r.Params.Meta.ProgressToken, "progress": i, "total": 3,
			})
		}
		// mcp-go can drop a notification sent just before the result
		// (its reply stream's forwarder races the response); a real tool
		// works between its last progress report and its result.
		time.Sleep(5 * time.Millisecond)
		return mcp.NewToolResultText(fmt.Sprint("token seen upstream: ", r.Params.Meta.ProgressToken)), nil
	})
	s.AddTool(mcp.NewTool("chatty_"+name), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for _, lvl := range []mcp.LoggingLevel{mcp.LoggingLevelDebug, mcp.LoggingLevelInfo, mcp.LoggingLevelError} {
			_ = s.SendNotificationToClient(ctx, string(mcp.MethodNotificationMessage), map[string]any{
				"level": lvl, "logger": name, "data": string(lvl) + " from " + name,
			})
		}
		time.Sleep(5 * time.Millisecond) // see progress_
		return mcp.NewToolResultText("chatted"), nil
	})
	s.AddTool(mcp.NewTool("ask_"+name), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if answer := mcpserver.SamplingResponse(r.Params.InputResponses, "llm"); answer != nil {
			// The answer's content arrives decoded as a map on one path and
			// as TextContent on the other.
			raw, _ := json.Marshal(answer.Content)
			var text mcp.TextContent
			_ = json.Unmarshal(raw, &text)
			return mcp.NewToolResultText("the model said: " + text.Text), nil
		}
		u.asked.Add(1)
		return mcpserver.NewInputRequestBuilder("asked").Sample("llm", mcp.CreateMessageParams{
			Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("question from " + name)}},
			MaxTokens: 10,
		}).ToolResult(), nil
	})
	s.AddTool(mcp.NewTool("confirm_"+name), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if answer := mcpserver.ElicitationResponse(r.Params.InputResponses, "ok"); answer != nil {
			raw, _ := json.Marshal(answer.Content)
			return mcp.NewToolResultText(fmt.Sprintf("%s %s", answer.Action, raw)), nil
		}
		return mcpserver.NewInputRequestBuilder("confirm").Elicit("ok", mcp.ElicitationParams{
			Mode: mcp.ElicitationModeForm, Message: "proceed on " + name + "?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
				"color": map[string]any{"type": "string", "enum": []string{"red", "blue"}, "default": "red"},
			}},
		}).ToolResult(), nil
	})
	s.AddTool(mcp.NewTool("consenturl_"+name), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// Two rounds: a URL-mode consent, then a form (the state says
		// the first was answered).
		if answer := mcpserver.ElicitationResponse(r.Params.InputResponses, "sure"); answer != nil && r.Params.RequestState == "consented" {
			return mcp.NewToolResultText("consent: accept, sure: " + string(answer.Action)), nil
		}
		if answer := mcpserver.ElicitationResponse(r.Params.InputResponses, "consent"); answer != nil && answer.Action == mcp.ElicitationResponseActionAccept {
			return mcpserver.NewInputRequestBuilder("consented").Elicit("sure", mcp.ElicitationParams{
				Mode: mcp.ElicitationModeForm, Message: "sure?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
					"color": map[string]any{"type": "string", "enum": []string{"red"}, "default": "red"}}},
			}).ToolResult(), nil
		}
		return mcpserver.NewInputRequestBuilder("asked").Elicit("consent", mcp.ElicitationParams{
			Mode: mcp.ElicitationModeURL, Message: "consent on " + name, URL: "https://example.com/consent/" + name,
		}).ToolResult(), nil
	})
	s.AddTool(mcp.NewTool("roots_"+name), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if answer := mcpserver.RootsResponse(r.Params.InputResponses, "roots"); answer != nil {
			var uris []string
			for _, root := range answer.Roots {
				uris = append(uris, root.URI)
			}
			return mcp.NewToolResultText(strings.Join(uris, ",")), nil
		}
		return mcpserver.NewInputRequestBuilder("roots").Roots("roots").ToolResult(), nil
	})
	s.AddTool(mcp.NewToolWithRawSchema("schema_"+name, "", json.RawMessage(
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","description":"either","oneOf":[{"required":["a"]},{"required":["b"]}],"properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`)),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
	var once sync.Once
	s.AddTool(mcp.NewTool("slow_"+name), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-time.After(20 * time.Second):
			return mcp.NewToolResultText("done"), nil
		case <-ctx.Done():
			once.Do(func() { close(u.canceled) })
			return nil, ctx.Err()
		}
	})
	return u, s
}

func (u *richUpstream) spec(protocol string) config.ServerSpec {
	return config.ServerSpec{Name: u.name, URL: u.url, Transport: config.TransportStreamableHTTP, Source: "test", ProtocolVersion: protocol}
}

type prefixCompleter []string

func (p prefixCompleter) CompletePromptArgument(_ context.Context, _ string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	var out []string
	for _, v := range p {
		if strings.HasPrefix(v, arg.Value) {
			out = append(out, v)
		}
	}
	return &mcp.Completion{Values: out}, nil
}

// session is a downstream client of the hub that records what reaches it.
type session struct {
	name     string
	c        *client.Client
	mu       sync.Mutex
	notes    []mcp.JSONRPCNotification
	elicited []mcp.ElicitationParams
	sampled  atomic.Int64
	noteSeen chan struct{}
}

type sampler struct{ s *session }

// Elicit accepts with the schema's enum default echoed back; ListRoots
// names the session's one root.
func (sp sampler) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	sp.s.sampled.Add(1)
	sp.s.mu.Lock()
	sp.s.elicited = append(sp.s.elicited, req.Params)
	sp.s.mu.Unlock()
	raw, _ := json.Marshal(req.Params.RequestedSchema)
	var schema struct {
		Properties map[string]struct {
			Default string `json:"default"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(raw, &schema)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"color": schema.Properties["color"].Default},
	}}, nil
}

func (sp sampler) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	sp.s.sampled.Add(1)
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///work/" + sp.s.name, Name: "work"}}}, nil
}

func (sp sampler) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	sp.s.sampled.Add(1)
	q := ""
	if len(req.Messages) > 0 {
		raw, _ := json.Marshal(req.Messages[0].Content)
		var tc mcp.TextContent
		_ = json.Unmarshal(raw, &tc)
		q = tc.Text
	}
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("answer to " + q)},
		Model:           "test-model",
		StopReason:      "endTurn",
	}, nil
}

// dialSession connects to the hub's /mcp at protocol (""= newest), with a
// sampling handler when canSample.
func (h *testHub) dialSession(protocol string, canSample bool) *session {
	h.t.Helper()
	s := &session{noteSeen: make(chan struct{}, 64)}
	opts := []transport.StreamableHTTPCOption{}
	if protocol != "" && !mcp.IsModernProtocol(protocol) {
		opts = append(opts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(h.url("/mcp"), opts...)
	if err != nil {
		h.t.Fatal(err)
	}
	var copts []client.ClientOption
	if protocol != "" {
		copts = append(copts, client.WithProtocolVersion(protocol))
	}
	if canSample {
		copts = append(copts, client.WithSamplingHandler(sampler{s}), client.WithElicitationHandler(sampler{s}), client.WithRootsHandler(sampler{s}))
	}
	s.c = client.NewClient(tr, copts...)
	s.c.OnNotification(func(n mcp.JSONRPCNotification) {
		s.mu.Lock()
		s.notes = append(s.notes, n)
		s.mu.Unlock()
		select {
		case s.noteSeen <- struct{}{}:
		default:
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.c.Start(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	if _, err := s.c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		h.t.Fatalf("initialize through hub: %v", err)
	}
	h.t.Cleanup(func() { _ = s.c.Close() })
	return s
}

// notifications returns what reached the session with that method.
func (s *session) notifications(method string) []mcp.JSONRPCNotification {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []mcp.JSONRPCNotification
	for _, n := range s.notes {
		if n.Method == method {
			out = append(out, n)
		}
	}
	return out
}

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestResourcesPromptsCompletions: both upstreams' resources, templates and
// prompts are listed under their own names, and reads, prompts/get and
// completion/complete reach the upstream that owns them.
func TestResourcesPromptsCompletions(t *testing.T) {
	a, b := newRichUpstream(t, "alpha"), newRichUpstream(t, "beta")
	h := newTestHub(t, []config.ServerSpec{a.spec(""), b.spec("")})
	h.waitConnected("alpha", "beta")
	s := h.dialSession(mcp.LATEST_LEGACY_PROTOCOL_VERSION, false)
	ctx := ctx10(t)

	res, err := s.c.ListResources(ctx, mcp.ListResourcesRequest{})
	mustf(t, err == nil, "resources/list: %v", err)
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	mustf(t, len(uris) == 4 && contains(uris, "docs://alpha/readme") && contains(uris, "docs://beta/readme") &&
		contains(uris, "alpha+shared://info") && contains(uris, "beta+shared://info"), "resources: %v", uris)

	for _, tc := range []struct{ uri, want string }{
		{"docs://alpha/readme", "readme of alpha"},
		{"docs://beta/readme", "readme of beta"},
		{"docs://beta/pages/42", "page 42 of beta"},
		// The same URI on two upstreams: each is published with its server
		// in front of the scheme and mapped back exactly.
		{"alpha+shared://info", "info of alpha"},
		{"beta+shared://info", "info of beta"},
	} {
		req := mcp.ReadResourceRequest{}
		req.Params.URI = tc.uri
		rr, err := s.c.ReadResource(ctx, req)
		mustf(t, err == nil && len(rr.Contents) == 1, "read %s: %v %+v", tc.uri, err, rr)
		tc2, _ := rr.Contents[0].(mcp.TextResourceContents)
		mustf(t, tc2.Text == tc.want && tc2.URI == tc.uri, "read %s = %+v, want %q", tc.uri, rr.Contents[0], tc.want)
	}

	tpl, err := s.c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	mustf(t, err == nil && len(tpl.ResourceTemplates) == 2, "templates: %v %+v", err, tpl)

	pr, err := s.c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	var prompts []string
	for _, p := range pr.Prompts {
		prompts = append(prompts, p.Name)
	}
	mustf(t, err == nil && strings.Join(prompts, ",") == "alpha__common,beta__common,greet_alpha,greet_beta", "prompts: %v %v", err, prompts)
	gc := mcp.GetPromptRequest{}
	gc.Params.Name = "beta__common"
	gotc, err := s.c.GetPrompt(ctx, gc)
	mustf(t, err == nil && len(gotc.Messages) == 1, "prompts/get beta__common: %v", err)
	ctext, _ := gotc.Messages[0].Content.(mcp.TextContent)
	mustf(t, ctext.Text == "common of beta", "beta__common text %q", ctext.Text)
	gp := mcp.GetPromptRequest{}
	gp.Params.Name = "greet_beta"
	gp.Params.Arguments = map[string]string{"who": "bob"}
	got, err := s.c.GetPrompt(ctx, gp)
	mustf(t, err == nil && len(got.Messages) == 1, "prompts/get: %v", err)
	text, _ := got.Messages[0].Content.(mcp.TextContent)
	mustf(t, text.Text == "Hello bob from beta", "prompt text %q", text.Text)

	cr := mcp.CompleteRequest{}
	cr.Params.Ref = mcp.PromptReference{Type: "ref/prompt", Name: "greet_alpha"}
	cr.Params.Argument = mcp.CompleteArgument{Name: "who", Value: "al"}
	comp, err := s.c.Complete(ctx, cr)
	mustf(t, err == nil && strings.Join(comp.Completion.Values, ",") == "alice,alina", "completion: %v %+v", err, comp)

	req := mcp.ReadResourceRequest{}
	req.Params.URI = "docs://gamma/readme"
	_, err = s.c.ReadResource(ctx, req)
	mustf(t, err != nil, "reading a resource no upstream lists succeeded")

	// A resource added upstream reaches the session as list_changed.
	grown, _ := call(t, s.c, "grow_alpha", nil)
	mustf(t, grown == "grown", "grow_alpha = %q", grown)
	waitFor(t, "resources/list_changed", func() bool {
		return len(s.notifications(string(mcp.MethodNotificationResourcesListChanged))) > 0
	})
	res, err = s.c.ListResources(ctx, mcp.ListResourcesRequest{})
	mustf(t, err == nil && len(res.Resources) == 5, "resources after grow: %v %d", err, len(res.Resources))

	var l struct {
		Servers []struct {
			Name      string `json:"name"`
			Resources int    `json:"resourceCount"`
			Templates int    `json:"resourceTemplateCount"`
			Prompts   int    `json:"promptCount"`
		} `json:"servers"`
	}
	getJSON(t, h.url("/api/mcp/tools"), &l)
	for _, sv := range l.Servers {
		want := map[string][3]int{"alpha": {3, 1, 2}, "beta": {2, 1, 2}}[sv.Name]
		mustf(t, [3]int{sv.Resources, sv.Templates, sv.Prompts} == want, "listing of %s: %+v, want %v", sv.Name, sv, want)
	}
}

// TestSubscriptionAndSamplingReachTheRightSessions is the scenario:
// one session is subscribed to a resource of alpha while another session's
// call to beta asks for a sampling. The update reaches only the subscriber,
// the sampling request only the caller, on a 2026-07-28 upstream connection
// (multi round-trip) and on a 2025-11-25 one (server request on the call's
// stream).
func TestSubscriptionAndSamplingReachTheRightSessions(t *testing.T) {
	for _, protocol := range []string{"", mcp.LATEST_LEGACY_PROTOCOL_VERSION} {
		t.Run("upstream="+cmpOr(protocol, "2026-07-28"), func(t *testing.T) {
			a, b := newRichUpstream(t, "alpha"), newRichUpstream(t, "beta")
			h := newTestHub(t, []config.ServerSpec{a.spec(protocol), b.spec(protocol)})
			h.waitConnected("alpha", "beta")
			watcher := h.dialSession(mcp.LATEST_LEGACY_PROTOCOL_VERSION, false)
			asker := h.dialSession(mcp.LATEST_LEGACY_PROTOCOL_VERSION, true)
			ctx := ctx10(t)

			sub := mcp.SubscribeRequest{}
			sub.Params.URI = "docs://alpha/readme"
			mustf(t, watcher.c.Subscribe(ctx, sub) == nil, "subscribe")

			var wg sync.WaitGroup
			var askText string
			var askErr error
			wg.Go(func() {
				req := mcp.CallToolRequest{}
				req.Params.Name = "ask_beta"
				res, err := asker.c.CallTool(ctx, req)
				askErr = err
				if err == nil {
					askText = resultText(res)
				}
			})
			text, isErr := call(t, watcher.c, "touch_alpha", nil)
			mustf(t, !isErr && text == "touched", "touch: %q", text)
			wg.Wait()

			mustf(t, askErr == nil && askText == "the model said: answer to question from beta", "ask_beta = %q, %v", askText, askErr)
			mustf(t, asker.sampled.Load() == 1 && watcher.sampled.Load() == 0, "sampling reached asker %d times, watcher %d times", asker.sampled.Load(), watcher.sampled.Load())
			waitFor(t, "resources/updated at the watcher", func() bool {
				return len(watcher.notifications(string(mcp.MethodNotificationResourceUpdated))) == 1
			})
			n := watcher.notifications(string(mcp.MethodNotificationResourceUpdated))[0]
			mustf(t, n.Params.AdditionalFields["uri"] == "docs://alpha/readme", "updated %+v", n.Params.AdditionalFields)
			mustf(t, len(asker.notifications(string(mcp.MethodNotificationResourceUpdated))) == 0, "the update reached the session that did not subscribe")

			// After unsubscribing, an update reaches no one.
			unsub := mcp.UnsubscribeRequest{}
			unsub.Params.URI = "docs://alpha/readme"
			mustf(t, watcher.c.Unsubscribe(ctx, unsub) == nil, "unsubscribe")
			call(t, watcher.c, "touch_alpha", nil)
			call(t, watcher.c, "touch_alpha", nil) // a round trip after the update was sent
			mustf(t, len(watcher.notifications(string(mcp.MethodNotificationResourceUpdated))) == 1, "update after unsubscribe")
		})
	}
}

// TestProgressAndLogsReachTheCaller: progress notifications carry the
// caller's own token (the upstream sees the hub's), and log messages reach
// the calling session filtered by its own logging/setLevel.
func TestProgressAndLogsReachTheCaller(t *testing.T) {
	a := newRichUpstream(t, "alpha")
	h := newTestHub(t, []config.ServerSpec{a.spec("")})
	h.waitConnected("alpha")
	s := h.dialSession(mcp.LATEST_LEGACY_PROTOCOL_VERSION, false)
	other := h.dialSession(mcp.LATEST_LEGACY_PROTOCOL_VERSION, false)
	ctx := ctx10(t)

	req := mcp.CallToolRequest{}
	req.Params.Name = "progress_alpha"
	req.Params.Meta = &mcp.Meta{ProgressToken: "my-token"}
	res, err := s.c.CallTool(ctx, req)
	mustf(t, err == nil && !res.IsError, "progress call: %v %+v", err, res)
	upstreamToken := strings.TrimPrefix(resultText(res), "token seen upstream: ")
	mustf(t, upstreamToken != "my-token" && upstreamToken != "", "the upstream saw the caller's own token %q", upstreamToken)
	waitFor(t, "3 progress notifications", func() bool {
		return len(s.notifications(string(mcp.MethodNotificationProgress))) == 3
	})
	for i, n := range s.notifications(string(mcp.MethodNotificationProgress)) {
		mustf(t, n.Params.AdditionalFields["progressToken"] == "my-token", "progress %d token %v", i, n.Params.AdditionalFields["progressToken"])
	}

	lv := mcp.SetLevelRequest{}
	lv.Params.Level = mcp.LoggingLevelInfo
	mustf(t, s.c.SetLevel(ctx, lv) == nil, "setLevel")
	text, isErr := call(t, s.c, "chatty_alpha", nil)
	mustf(t, !isErr && text == "chatted", "chatty: %q", text)
	waitFor(t, "2 log messages at info and above", func() bool {
		return len(s.notifications(string(mcp.MethodNotificationMessage))) == 2
	})
	for _, n := range s.notifications(string(mcp.MethodNotificationMessage)) {
		mustf(t, n.Params.AdditionalFields["level"] != string(mcp.LoggingLevelDebug), "a debug message passed the session's info level")
	}
	mustf(t, len(other.notifications(string(mcp.MethodNotificationMessage))) == 0 &&
		len(other.notifications(string(mcp.MethodNotificationProgress))) == 0, "another session got the caller's notifications")
}

// TestCancellationStopsUpstreamWork: a caller that cancels a slow call
// (notifications/cancelled) stops the upstream's handler, on a plain
// session and on one that goes through the relay.
func TestCancellationStopsUpstreamWork(t *testing.T) {
	for _, canSample := range []bool{false, true} {
		t.Run(fmt.Sprint("relayed=", canSample), func(t *testing.T) {
			a := newRichUpstream(t, "alpha")
			h := newTestHub(t, []config.ServerSpec{a.spec("")})
			h.waitConnected("alpha")
			s := h.dialSession(mcp.LATEST_LEGACY_PROTOCOL_VERSION, canSample)
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			req := mcp.CallToolRequest{}
			req.Params.Name = "slow_alpha"
			_, err := s.c.CallTool(ctx, req)
			mustf(t, err != nil, "the slow call returned")
			select {
			case <-a.canceled:
			case <-time.After(5 * time.Second):
				t.Fatal("the upstream never saw the cancellation")
			}
		})
	}
}

// TestModernCallerSampling: a 2026-07-28 caller gets the upstream's input
// request as a multi round-trip result and answers it itself; without the
// sampling capability it gets a clear error, never a hang.
func TestModernCallerSampling(t *testing.T) {
	a := newRichUpstream(t, "alpha")
	h := newTestHub(t, []config.ServerSpec{a.spec("")})
	h.waitConnected("alpha")

	s := h.dialSession("", true)
	text, isErr := call(t, s.c, "ask_alpha", nil)
	mustf(t, !isErr && text == "the model said: answer to question from alpha", "ask_alpha = %q", text)
	mustf(t, s.sampled.Load() == 1, "sampled %d times", s.sampled.Load())

	plain := h.dialSession("", false)
	ctx := ctx10(t)
	req := mcp.CallToolRequest{}
	req.Params.Name = "ask_alpha"
	res, err := plain.c.CallTool(ctx, req)
	mustf(t, err != nil || res.IsError, "a caller without sampling got %+v", res)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestAcrossRevisions: a 2024-11-05 SSE client, a 2025-11-25 session client
// and a 2026-07-28 stateless client each read resources, get prompts, get
// their progress, and answer a sampling request through the hub, from an
// upstream the hub speaks 2026-07-28 to and from one it speaks 2025-11-25 to.
func TestAcrossRevisions(t *testing.T) {
	a, b := newRichUpstream(t, "alpha"), newRichUpstream(t, "beta")
	h := newTestHub(t, []config.ServerSpec{a.spec(""), b.spec(mcp.LATEST_LEGACY_PROTOCOL_VERSION)})
	h.waitConnected("alpha", "beta")
	for _, tc := range []struct {
		name string
		dial func() *session
		// sampling lists the upstreams whose sampling requests can reach
		// this caller; the others must fail with the reason.
		sampling map[string]bool
	}{
		// mcp-go's HTTP+SSE server sessions take no server requests.
		{"sse-2024-11-05", func() *session { return h.dialSSE(true) }, map[string]bool{}},
		{"streamable-2025-11-25", func() *session { return h.dialSession(mcp.LATEST_LEGACY_PROTOCOL_VERSION, true) },
			map[string]bool{"alpha": true, "beta": true}},
		// A 2026-07-28 caller takes input requests: a 2026-07-28 upstream's
		// as they are, a legacy upstream's server request as a round of its
		// call (package rounds).
		{"stateless-2026-07-28", func() *session { return h.dialSession("", true) }, map[string]bool{"alpha": true, "beta": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.dial()
			ctx := ctx10(t)
			for _, up := range []string{"alpha", "beta"} {
				req := mcp.ReadResourceRequest{}
				req.Params.URI = "docs://" + up + "/pages/7"
				rr, err := s.c.ReadResource(ctx, req)
				mustf(t, err == nil && len(rr.Contents) == 1, "read from %s: %v", up, err)

				gp := mcp.GetPromptRequest{}
				gp.Params.Name = "greet_" + up
				gp.Params.Arguments = map[string]string{"who": "eve"}
				_, err = s.c.GetPrompt(ctx, gp)
				mustf(t, err == nil, "prompts/get from %s: %v", up, err)

				areq := mcp.CallToolRequest{}
				areq.Params.Name = "ask_" + up
				ares, err := s.c.CallTool(ctx, areq)
				if tc.sampling[up] {
					mustf(t, err == nil && !ares.IsError && resultText(ares) == "the model said: answer to question from "+up, "ask_%s = %+v, %v", up, ares, err)
				} else {
					why := fmt.Sprint(err)
					if err == nil {
						why = resultText(ares)
					}
					mustf(t, (err != nil || ares.IsError) && strings.Contains(why, "pass sampling/createMessage"), "ask_%s without a way to sample = %q", up, why)
				}

				before := len(s.notifications(string(mcp.MethodNotificationProgress)))
				preq := mcp.CallToolRequest{}
				preq.Params.Name = "progress_" + up
				preq.Params.Meta = &mcp.Meta{ProgressToken: "p-" + up}
				res, err := s.c.CallTool(ctx, preq)
				mustf(t, err == nil && !res.IsError, "progress call on %s: %v %+v", up, err, res)
				waitFor(t, "progress from "+up, func() bool {
					return len(s.notifications(string(mcp.MethodNotificationProgress))) == before+3
				})
			}
			mustf(t, s.sampled.Load() == int64(len(tc.sampling)), "sampled %d times, want %d", s.sampled.Load(), len(tc.sampling))
		})
	}
}

// dialSSE connects to the hub's legacy HTTP+SSE face (2024-11-05).
func (h *testHub) dialSSE(canSample bool) *session {
	h.t.Helper()
	s := &session{noteSeen: make(chan struct{}, 64)}
	tr, err := transport.NewSSE(h.url("/sse"))
	if err != nil {
		h.t.Fatal(err)
	}
	copts := []client.ClientOption{client.WithProtocolVersion("2024-11-05")}
	if canSample {
		copts = append(copts, client.WithSamplingHandler(sampler{s}))
	}
	s.c = client.NewClient(tr, copts...)
	s.c.OnNotification(func(n mcp.JSONRPCNotification) {
		s.mu.Lock()
		s.notes = append(s.notes, n)
		s.mu.Unlock()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.c.Start(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	if _, err := s.c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		h.t.Fatalf("initialize over SSE: %v", err)
	}
	h.t.Cleanup(func() { _ = s.c.Close() })
	return s
}

// TestCapabilitiesAndLevels: the hub advertises the requests its upstreams
// offer (no subscribe, completions or logging for a tools-only upstream),
// always declares resources and prompts with listChanged (it sends their
// list_changed whenever an upstream with them comes or goes), manual
// callers get empty lists and no reads, and logging/setLevel reaches a
// legacy upstream.
func TestCapabilitiesAndLevels(t *testing.T) {
	plain := newFakeUpstream(t, "plain")
	h := newTestHub(t, []config.ServerSpec{plain.spec()})
	h.waitConnected("plain")
	caps := h.initializeCaps(t, nil)
	mustf(t, caps.Tools != nil && caps.Tools.ListChanged && caps.Logging == nil && caps.Completions == nil,
		"tools-only upstream, advertised %+v", caps)
	mustf(t, caps.Resources != nil && caps.Resources.ListChanged && !caps.Resources.Subscribe && caps.Prompts != nil && caps.Prompts.ListChanged,
		"tools-only upstream: resources and prompts must be declared with listChanged, advertised %+v %+v", caps.Resources, caps.Prompts)

	a := newRichUpstream(t, "alpha")
	h.set(plain.spec(), a.spec(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	h.waitConnected("plain", "alpha")
	caps = h.initializeCaps(t, nil)
	mustf(t, caps.Resources != nil && caps.Resources.Subscribe && caps.Prompts != nil && caps.Logging != nil && caps.Completions != nil,
		"rich upstream, advertised %+v", caps)

	s := h.dialSession(mcp.LATEST_LEGACY_PROTOCOL_VERSION, false)
	lv := mcp.SetLevelRequest{}
	lv.Params.Level = mcp.LoggingLevelDebug
	mustf(t, s.c.SetLevel(ctx10(t), lv) == nil, "setLevel")
	waitFor(t, "the upstream's log level", func() bool { return a.level.Load() == mcp.LoggingLevelDebug })
	// A server that connects later is set to the same level.
	b := newRichUpstream(t, "beta")
	h.set(plain.spec(), a.spec(mcp.LATEST_LEGACY_PROTOCOL_VERSION), b.spec(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	waitFor(t, "the late upstream's log level", func() bool { return b.level.Load() == mcp.LoggingLevelDebug })

	manual := newTestHubAuth(t, []config.ServerSpec{a.spec("")}, callers.AnonymousOnly(autonomy.Manual))
	manual.waitConnected("alpha")
	caps = manual.initializeCaps(t, nil)
	mustf(t, caps.Resources != nil && caps.Resources.ListChanged && !caps.Resources.Subscribe && caps.Prompts != nil && caps.Completions == nil,
		"manual caller, advertised %+v", caps)
	ms := manual.dialSession(mcp.LATEST_LEGACY_PROTOCOL_VERSION, false)
	res, err := ms.c.ListResources(ctx10(t), mcp.ListResourcesRequest{})
	mustf(t, err == nil && len(res.Resources) == 0, "manual resources/list: %v %+v", err, res)
	req := mcp.ReadResourceRequest{}
	req.Params.URI = "docs://alpha/readme"
	_, err = ms.c.ReadResource(ctx10(t), req)
	mustf(t, err != nil && strings.Contains(err.Error(), "BLOCKED"), "manual read: %v", err)
}

// initializeCaps sends a raw 2025-11-25 initialize and returns the
// capabilities the hub announced.
func (h *testHub) initializeCaps(t *testing.T, header http.Header) mcp.ServerCapabilities {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, h.url("/mcp"), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result mcp.InitializeResult `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return out.Result.Capabilities
}

// TestElicitationAndRootsReachTheCaller: an upstream's elicitation (with a
// schema's enum and default intact) and roots/list reach the session that
// made the call, on both upstream revisions.
func TestElicitationAndRootsReachTheCaller(t *testing.T) {
	for _, protocol := range []string{"", mcp.LATEST_LEGACY_PROTOCOL_VERSION} {
		t.Run("upstream="+cmpOr(protocol, "2026-07-28"), func(t *testing.T) {
			a := newRichUpstream(t, "alpha")
			h := newTestHub(t, []config.ServerSpec{a.spec(protocol)})
			h.waitConnected("alpha")
			s := h.dialSession(mcp.LATEST_LEGACY_PROTOCOL_VERSION, true)
			s.name = "s1"
			text, isErr := call(t, s.c, "confirm_alpha", nil)
			mustf(t, !isErr && text == `accept {"color":"red"}`, "confirm_alpha = %q", text)
			text, isErr = call(t, s.c, "roots_alpha", nil)
			mustf(t, !isErr && text == "file:///work/s1", "roots_alpha = %q", text)
			mustf(t, s.sampled.Load() == 2, "the session answered %d requests, want 2", s.sampled.Load())
		})
	}
}

// TestURLElicitationToAnOlderCaller: a 2026-07-28 upstream's URL-mode
// input request reaches a 2025-11-25 caller as elicitation/create with an
// elicitationId (that revision requires one; the hub makes it), the
// caller's answer goes back as the round's input response, a second
// round's request reaches the caller too, and once the call has its
// result the caller gets notifications/elicitation/complete for that id.
func TestURLElicitationToAnOlderCaller(t *testing.T) {
	a := newRichUpstream(t, "alpha")
	h := newTestHub(t, []config.ServerSpec{a.spec("")})
	h.waitConnected("alpha")
	s := h.dialSession(mcp.LATEST_LEGACY_PROTOCOL_VERSION, true)
	text, isErr := call(t, s.c, "consenturl_alpha", nil)
	mustf(t, !isErr && text == "consent: accept, sure: accept", "consenturl_alpha = %q", text)
	s.mu.Lock()
	elicited := slices.Clone(s.elicited)
	s.mu.Unlock()
	mustf(t, len(elicited) == 2 && elicited[0].Mode == mcp.ElicitationModeURL && elicited[0].URL == "https://example.com/consent/alpha" &&
		strings.HasPrefix(elicited[0].ElicitationID, "mcp-hub-") && elicited[1].Message == "sure?",
		"the caller was asked %+v; want a URL elicitation with an id of the hub's, then the form of the second round", elicited)
	waitFor(t, "notifications/elicitation/complete of the hub's id", func() bool {
		for _, n := range s.notifications(string(mcp.MethodNotificationElicitationComplete)) {
			if n.Params.AdditionalFields["elicitationId"] == elicited[0].ElicitationID {
				return true
			}
		}
		return false
	})
}

// A 2026-07-28 caller's subscriptions/listen stream stays a stream and gets
// the hub's list changes.
func TestModernListenGetsListChanged(t *testing.T) {
	a := newFakeUpstream(t, "alpha")
	h := newTestHub(t, []config.ServerSpec{a.spec()})
	h.waitConnected("alpha")
	s := h.dialSession("", false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop, err := s.c.ListenAsync(ctx, mcp.SubscriptionFilter{ToolsListChanged: true}, nil)
	mustf(t, err == nil, "listen: %v", err)
	defer stop()
	waitFor(t, "subscription acknowledged", func() bool {
		return len(s.notifications(string(mcp.MethodNotificationSubscriptionsAcknowledged))) > 0
	})
	b := newFakeUpstream(t, "beta")
	h.set(a.spec(), b.spec())
	waitFor(t, "tools/list_changed on the listen stream", func() bool {
		return len(s.notifications(string(mcp.MethodNotificationToolsListChanged))) > 0
	})
}

// A 2026-07-28 caller asks for log messages on each request (_meta); the
// messages of its call reach it.
func TestModernCallerGetsLogs(t *testing.T) {
	a := newRichUpstream(t, "alpha")
	h := newTestHub(t, []config.ServerSpec{a.spec(mcp.LATEST_LEGACY_PROTOCOL_VERSION)})
	h.waitConnected("alpha")
	s := h.dialSession("", false)
	lv := mcp.SetLevelRequest{}
	lv.Params.Level = mcp.LoggingLevelDebug
	mustf(t, s.c.SetLevel(ctx10(t), lv) == nil, "setLevel")
	text, isErr := call(t, s.c, "chatty_alpha", nil)
	mustf(t, !isErr && text == "chatted", "chatty: %q", text)
	waitFor(t, "log messages at the 2026-07-28 caller", func() bool {
		return len(s.notifications(string(mcp.MethodNotificationMessage))) >= 2
	})
}

// A tool's input schema reaches the caller as the upstream wrote it: the
// keywords mcp-go's Tool type does not model ($schema, oneOf, description)
// survive, on both upstream revisions.
func TestToolSchemasPassThrough(t *testing.T) {
	for _, protocol := range []string{"", mcp.LATEST_LEGACY_PROTOCOL_VERSION} {
		t.Run("upstream="+cmpOr(protocol, "2026-07-28"), func(t *testing.T) {
			a := newRichUpstream(t, "alpha")
			h := newTestHub(t, []config.ServerSpec{a.spec(protocol)})
			h.waitConnected("alpha")
			sid := h.initializeSession(t)
			for _, tl := range toolNamesRaw(t, h, sid) {
				m := tl.(map[string]any)
				if m["name"] != "schema_alpha" {
					continue
				}
				in, _ := m["inputSchema"].(map[string]any)
				mustf(t, in["$schema"] == "https://json-schema.org/draft/2020-12/schema" && in["oneOf"] != nil && in["description"] == "either",
					"schema through the hub: %v", in)
				return
			}
			t.Fatal("schema_alpha not listed")
		})
	}
}

// A session that started while the hub had only tools hears
// resources/list_changed and prompts/list_changed when an upstream with
// them connects, and its initialize result declared both with
// listChanged: the hub never sends a list_changed for a capability it did
// not declare.
func TestListChangedOnlyForDeclaredCapabilities(t *testing.T) {
	plain := newFakeUpstream(t, "plain")
	h := newTestHub(t, []config.ServerSpec{plain.spec()})
	h.waitConnected("plain")
	s := h.dialSession(mcp.LATEST_LEGACY_PROTOCOL_VERSION, false)
	caps := s.c.GetServerCapabilities()
	mustf(t, caps.Resources != nil && caps.Resources.ListChanged && caps.Prompts != nil && caps.Prompts.ListChanged,
		"initialize with a tools-only upstream declared resources %+v, prompts %+v", caps.Resources, caps.Prompts)

	a := newRichUpstream(t, "alpha")
	h.set(plain.spec(), a.spec(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	h.waitConnected("plain", "alpha")
	waitFor(t, "resources and prompts list_changed at the session", func() bool {
		return len(s.notifications(string(mcp.MethodNotificationResourcesListChanged))) > 0 &&
			len(s.notifications(string(mcp.MethodNotificationPromptsListChanged))) > 0
	})
	declared := map[string]bool{
		string(mcp.MethodNotificationToolsListChanged):     caps.Tools != nil && caps.Tools.ListChanged,
		string(mcp.MethodNotificationResourcesListChanged): caps.Resources.ListChanged,
		string(mcp.MethodNotificationPromptsListChanged):   caps.Prompts.ListChanged,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.notes {
		if strings.HasSuffix(n.Method, "/list_changed") && !declared[n.Method] {
			t.Errorf("the hub sent %s without declaring its capability (%+v)", n.Method, caps)
		}
	}
}

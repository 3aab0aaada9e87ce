package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/discovery"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/server"
	"github.com/purko-io/mcp-hub/internal/upstream"
)

// staticSource sends one snapshot and holds it until the hub stops.
type staticSource []config.ServerSpec

func (s staticSource) Name() string { return "tokens" }
func (s staticSource) Run(ctx context.Context, out chan<- discovery.Snapshot) {
	select {
	case out <- discovery.Snapshot{Source: "tokens", Servers: s}:
	case <-ctx.Done():
		return
	}
	<-ctx.Done()
}

// serveOn serves h on a loopback port until the test ends.
func serveOn(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String()
}

// TestFindToolsTokens measures what a 1,000-tool catalog (10 upstreams x
// 100 tools of the scale benchmark's generator, names as the hub publishes
// them) costs a model in tokens with and without find_tools, counted with
// tiktoken's o200k_base and cl100k_base vocabularies (embedded, offline).
// It fails if find_tools saves less than 90%: that is its reason to be.
func TestFindToolsTokens(t *testing.T) {
	const nUp, nTools, above = 10, 100, 100
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	encs := map[string]*tiktoken.Tiktoken{}
	for _, name := range []string{"o200k_base", "cl100k_base"} {
		enc, err := tiktoken.GetEncoding(name)
		if err != nil {
			t.Fatalf("tokenizer %s: %v", name, err)
		}
		encs[name] = enc
	}

	upURL := serveOn(t, manyHandler(nUp, nTools))
	var specs staticSource
	for i := range nUp {
		specs = append(specs, config.ServerSpec{Name: upstreamName(i), URL: fmt.Sprintf("%s/u%d/mcp", upURL, i),
			Transport: config.TransportStreamableHTTP, TrustAnnotations: true})
	}
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	log := zerolog.Nop()
	reg := registry.New(registry.Options{Naming: cfg.Naming, RouteCacheSize: 4096, NotifyDebounce: 20 * time.Millisecond,
		Upstream: upstream.Options{Timeout: 10 * time.Second, ConnectTimeout: 5 * time.Second, PingInterval: time.Minute,
			BackoffMin: 50 * time.Millisecond, BackoffMax: time.Second, BreakerFailures: 5, BreakerOpenFor: time.Second,
			DiscoverTimeout: 10 * time.Second, ClientInfo: mcp.Implementation{Name: "tokens", Version: "0"}}}, log)
	full := server.New(reg, server.Options{Name: "mcp-hub", Version: "tokens"}, log)
	find := server.New(reg, server.Options{Name: "mcp-hub", Version: "tokens", FindToolsAbove: above}, log)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	regDone := make(chan struct{})
	go func() { defer close(regDone); reg.Run(ctx, specs) }()
	defer func() { cancel(); <-regDone }()
	urls := map[*server.Server]string{}
	for _, s := range []*server.Server{full, find} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { defer close(done); _ = s.Serve(ctx, ln, time.Second) }()
		defer func() { cancel(); <-done }()
		urls[s] = "http://" + ln.Addr().String() + "/mcp"
	}
	for deadline := time.Now().Add(time.Minute); len(reg.Catalog().Tools) < nUp*nTools; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("catalog holds %d tools, want %d", len(reg.Catalog().Tools), nUp*nTools)
		}
	}

	hc := &http.Client{Timeout: 30 * time.Second}
	list := func(s *server.Server) (*rawSession, json.RawMessage) {
		t.Helper()
		sess, err := openRaw(ctx, hc, urls[s])
		if err != nil {
			t.Fatal(err)
		}
		res, _, err := sess.call(ctx, "tools/list", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		return sess, res.Result
	}
	// The list is served a moment after the catalog is published.
	var fullList json.RawMessage
	for deadline := time.Now().Add(time.Minute); strings.Count(string(fullList), `"inputSchema"`) < nUp*nTools; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the full list holds %d tools", strings.Count(string(fullList), `"inputSchema"`))
		}
		_, fullList = list(full)
	}
	sess, shortList := list(find)
	if n := strings.Count(string(shortList), `"inputSchema"`); n != 1 {
		t.Fatalf("the find_tools list holds %d tools, want 1: %.300s", n, shortList)
	}
	found, _, err := sess.call(ctx, "tools/call", map[string]any{"name": "find_tools", "arguments": map[string]any{"query": "create a pull request"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := mcp.ParseCallToolResult(&found.Result)
	if err != nil || res.IsError || len(res.Content) == 0 {
		t.Fatalf("find_tools: %v %s", err, found.Result)
	}
	tc, _ := res.Content[0].(mcp.TextContent)
	text := tc.Text
	if !strings.Contains(strings.SplitN(text, "\n", 2)[0], "create_pull_request") {
		t.Errorf("find_tools ranked first: %q", strings.SplitN(text, "\n", 2)[0])
	}
	after, _, err := sess.call(ctx, "tools/list", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}

	rows := []struct {
		what string
		data string
	}{
		{"full tools/list (1,000 tools)", string(fullList)},
		{"find_tools-only tools/list", string(shortList)},
		{"find_tools result, text part", text},
		{"find_tools result, whole (text + structuredContent)", string(found.Result)},
		{"tools/list after one search (find_tools + 10 found)", string(after.Result)},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| %s | bytes | o200k_base tokens | cl100k_base tokens |\n|---|---:|---:|---:|\n", "what the model reads")
	tokens := map[string]map[string]int{}
	for _, r := range rows {
		tokens[r.what] = map[string]int{}
		for name, enc := range encs {
			tokens[r.what][name] = len(enc.Encode(r.data, nil, nil))
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d |\n", r.what, len(r.data), tokens[r.what]["o200k_base"], tokens[r.what]["cl100k_base"])
	}
	t.Logf("tokens of a 1,000-tool catalog:\n%s\nfind_tools \"create a pull request\" answered:\n%s", b.String(), text)
	if out := os.Getenv("MCPHUB_TOKENS_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o600); err != nil {
			t.Error(err)
		}
	}
	for name := range encs {
		without := tokens[rows[0].what][name]
		with := tokens[rows[1].what][name] + tokens[rows[3].what][name]
		if with*10 > without {
			t.Errorf("%s: with find_tools %d tokens, without %d: less than 90%% saved", name, with, without)
		}
	}
}

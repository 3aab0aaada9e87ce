package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/hub"
)

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
	encs := tokenizers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Two hubs wired as mcp-hub serve wires one, over the same upstreams:
	// one lists every tool, the other only find_tools.
	startHub := tokenHubs(ctx, t, nUp, nTools)
	_, fullURL := startHub("full", "", "")
	_, findURL := startHub("find", fmt.Sprintf(", findTools: {above: %d}", above), "")

	hc := &http.Client{Timeout: 30 * time.Second}
	list := func(url string) (*rawSession, json.RawMessage) {
		t.Helper()
		sess, err := openRaw(ctx, hc, url)
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
		_, fullList = list(fullURL)
	}
	sess, shortList := list(findURL)
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

// tokenizers are tiktoken's o200k_base and cl100k_base vocabularies,
// embedded (offline).
func tokenizers(t *testing.T) map[string]*tiktoken.Tiktoken {
	t.Helper()
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	encs := map[string]*tiktoken.Tiktoken{}
	for _, name := range []string{"o200k_base", "cl100k_base"} {
		enc, err := tiktoken.GetEncoding(name)
		if err != nil {
			t.Fatalf("tokenizer %s: %v", name, err)
		}
		encs[name] = enc
	}
	return encs
}

// tokenHubs serves nUp upstreams of nTools tools each (the scale
// benchmark's generator) and returns a starter of hubs over them, wired as
// mcp-hub serve wires one: name names its files, catalog is added to its
// catalog settings, extra to its config; it returns the hub and its /mcp
// URL, and waits for every upstream tool in its catalog.
func tokenHubs(ctx context.Context, t *testing.T, nUp, nTools int) func(name, catalog, extra string) (*hub.Hub, string) {
	upURL := serveOn(t, manyHandler(nUp, nTools))
	dir := t.TempDir()
	servers := "servers:\n"
	for i := range nUp {
		servers += fmt.Sprintf("- {name: %s, url: \"%s/u%d/mcp\", transport: %s, trustAnnotations: true}\n",
			upstreamName(i), upURL, i, config.TransportStreamableHTTP)
	}
	return func(name, catalog, extra string) (*hub.Hub, string) {
		t.Helper()
		path := filepath.Join(dir, name+".yaml")
		body := servers + extra + "builtins: {staticAnalysis: {enabled: false}}\n" +
			"upstream: {timeout: 10s, connectTimeout: 5s}\n" +
			"catalog: {routeCacheSize: 4096, notifyDebounce: 20ms" + catalog + "}\n" +
			"pinning: {stateFile: " + filepath.Join(dir, name+".pins.json") + "}\nshutdownGrace: 1s\n"
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		h, err := hub.New(ctx, cfg, hub.Options{ConfigPath: path, Listen: "127.0.0.1:0", Version: "tokens"}, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		hctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = h.Serve(hctx, ln) }()
		t.Cleanup(func() { cancel(); <-done; h.Close() })
		for deadline := time.Now().Add(time.Minute); len(h.Catalog().Tools) < nUp*nTools; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("catalog holds %d tools, want %d", len(h.Catalog().Tools), nUp*nTools)
			}
		}
		return h, "http://" + ln.Addr().String() + "/mcp"
	}
}

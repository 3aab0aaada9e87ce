package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestVirtualServerTokens measures what a model reads of tools/list on a
// 300-tool hub (10 upstreams x 30 tools of the scale benchmark's
// generator) through the whole /mcp and through a virtual server of two of
// its servers, counted with tiktoken's o200k_base and cl100k_base
// vocabularies (embedded, offline). The virtual server's list must hold
// exactly its two servers' tools, and cost at most a quarter of the whole.
func TestVirtualServerTokens(t *testing.T) {
	const nUp, nTools = 10, 30
	encs := tokenizers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	startHub := tokenHubs(ctx, t, nUp, nTools)
	pair := []string{upstreamName(0), upstreamName(1)}
	h, mcpURL := startHub("virtual", "", fmt.Sprintf("virtualServers:\n- {name: pair, servers: [%s, %s]}\n", pair[0], pair[1]))
	base := strings.TrimSuffix(mcpURL, "/mcp")

	hc := &http.Client{Timeout: 30 * time.Second}
	// The list is served a moment after the catalog is published.
	list := func(url string, want int) string {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			sess, err := openRaw(ctx, hc, url)
			if err != nil {
				t.Fatal(err)
			}
			res, _, err := sess.call(ctx, "tools/list", map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			n := strings.Count(string(res.Result), `"inputSchema"`)
			if n == want {
				return string(res.Result)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s lists %d tools, want %d", url, n, want)
			}
		}
	}
	whole := list(mcpURL, nUp*nTools)
	virtual := list(base+"/servers/pair/mcp", 2*nTools)
	for _, tool := range h.Catalog().Tools {
		if listed := strings.Contains(virtual, `"name":"`+tool.Name+`"`); listed != (tool.Server == pair[0] || tool.Server == pair[1]) {
			t.Errorf("tool %s of %s listed by the virtual server: %v", tool.Name, tool.Server, listed)
		}
	}

	rows := []struct{ what, data string }{
		{fmt.Sprintf("tools/list of /mcp (%d tools)", nUp*nTools), whole},
		{fmt.Sprintf("tools/list of /servers/pair/mcp (2 servers, %d tools)", 2*nTools), virtual},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| what the model reads | bytes | o200k_base tokens | cl100k_base tokens |\n|---|---:|---:|---:|\n")
	tokens := map[string][]int{}
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d |", r.what, len(r.data))
		for _, name := range []string{"o200k_base", "cl100k_base"} {
			n := len(encs[name].Encode(r.data, nil, nil))
			tokens[name] = append(tokens[name], n)
			fmt.Fprintf(&b, " %d |", n)
		}
		b.WriteString("\n")
	}
	t.Logf("tokens of a 300-tool hub, whole and through a two-server virtual server:\n%s", b.String())
	if out := os.Getenv("MCPHUB_TOKENS_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o600); err != nil {
			t.Error(err)
		}
	}
	for name, n := range tokens {
		if n[1]*4 > n[0] {
			t.Errorf("%s: the virtual server's list costs %d tokens, the whole %d: more than a quarter", name, n[1], n[0])
		}
	}
}

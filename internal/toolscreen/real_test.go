package toolscreen

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// realServer is one file of testdata/real: the tools/list answer of a
// published server, as the hub's client decodes it.
type realServer struct {
	Package string     `json:"package"`
	Version string     `json:"version"`
	License string     `json:"license"`
	Source  string     `json:"source"`
	Tools   []mcp.Tool `json:"tools"`
	// Instructions, Prompts, Resources and Templates are the rest of what
	// it offers, where the file has them.
	Instructions string                 `json:"instructions"`
	Prompts      []mcp.Prompt           `json:"prompts"`
	Resources    []mcp.Resource         `json:"resources"`
	Templates    []mcp.ResourceTemplate `json:"resourceTemplates"`
}

// TestRealServersHaveNoHits screens the tool definitions of the official
// reference servers and popular servers, and the instructions, prompts,
// resources and templates where a file has them: a rule that fires on one
// of them would quarantine a definition every hub lists. Zero hits is the
// bar.
func TestRealServersHaveNoHits(t *testing.T) {
	servers := realServers(t)
	sc := New()
	tools, features := 0, 0
	for _, s := range servers {
		for _, tool := range s.Tools {
			tools++
			if hits := sc.Screen(tool); len(hits) > 0 {
				t.Errorf("%s@%s tool %s: false hits: %s", s.Package, s.Version, tool.Name, Summary(hits))
			}
		}
		others := [][]Hit{sc.ScreenInstructions(s.Instructions)}
		for _, p := range s.Prompts {
			others = append(others, sc.ScreenPrompt(p))
		}
		for _, r := range s.Resources {
			others = append(others, sc.ScreenResource(r))
		}
		for _, r := range s.Templates {
			others = append(others, sc.ScreenTemplate(r))
		}
		for _, hits := range others {
			if len(hits) > 0 {
				t.Errorf("%s@%s: false hits: %s", s.Package, s.Version, Summary(hits))
			}
		}
		features += len(others) - 1
		t.Logf("%s@%s (%s): %d tools, %d prompts, resources and templates, no hits", s.Package, s.Version, s.License, len(s.Tools), len(others)-1)
	}
	t.Logf("%d real tool definitions and %d others of %d servers screened", tools, features, len(servers))
}

// realServers reads testdata/real.
func realServers(tb testing.TB) []realServer {
	servers := readTestdata[realServer](tb, "testdata/real/*.json")
	for _, s := range servers {
		if s.Package == "" || s.Version == "" || s.License == "" || len(s.Tools) == 0 {
			tb.Fatalf("%s: package, version, license and tools must be noted", s.Package)
		}
	}
	return servers
}

// readTestdata decodes each file glob matches, in name order.
func readTestdata[T any](tb testing.TB, glob string) []T {
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		tb.Fatalf("no testdata %s: %v", glob, err)
	}
	out := make([]T, len(files))
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		if err := json.Unmarshal(b, &out[i]); err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
	}
	return out
}

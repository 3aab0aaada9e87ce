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
}

// TestRealServersHaveNoHits screens the tool definitions of the official
// reference servers and popular servers: a rule that fires on one of them
// would quarantine a tool every hub lists. Zero hits is the bar.
func TestRealServersHaveNoHits(t *testing.T) {
	files, err := filepath.Glob("testdata/real/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	tools := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var s realServer
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if s.Package == "" || s.Version == "" || s.License == "" || len(s.Tools) == 0 {
			t.Fatalf("%s: package, version, license and tools must be noted", f)
		}
		for _, tool := range s.Tools {
			tools++
			if hits := New().Screen(tool); len(hits) > 0 {
				t.Errorf("%s@%s tool %s: false hits: %s", s.Package, s.Version, tool.Name, Summary(hits))
			}
		}
		t.Logf("%s@%s (%s): %d tools, no hits", s.Package, s.Version, s.License, len(s.Tools))
	}
	t.Logf("%d real tool definitions of %d servers screened", tools, len(files))
}

// Package layers checks that the map of the house in README.md ("Layout")
// is the house: every package of the module is on the map, in a layer, and
// no package imports from a layer above its own. A newcomer reads the map
// to know where a thing goes and which way imports may point; a map that
// drifts from the code misleads more than none.
package layers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/purko-io/mcp-hub/"

// layout is the README's map: each package's layer (0 is the top) and the
// layers' names, in order.
type layout struct {
	layers []string
	of     map[string]int // package path (cmd/mcp-hub, internal/server) -> layer
}

// pathToken is a package directory as the map writes it: cmd/..., internal/...
// or test/..., with a slash at the end.
var pathToken = regexp.MustCompile(`^(cmd|internal|test)/([a-z0-9/-]+/)?$`)

// readLayout reads the code block under "## Layout" in readme: a line that
// starts in the first column names a layer and its first package; an
// indented line that starts with a package path adds a package to the
// layer above it; other indented lines continue a description.
func readLayout(readme []byte) (*layout, error) {
	l := &layout{of: map[string]int{}}
	sc := bufio.NewScanner(bytes.NewReader(readme))
	inSection, inBlock := false, false
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			inSection = line == "## Layout"
			continue
		case !inSection:
			continue
		case strings.HasPrefix(line, "```"):
			if inBlock {
				return l, nil
			}
			inBlock = true
			continue
		case !inBlock || strings.TrimSpace(line) == "":
			continue
		}
		fields := strings.Fields(line)
		if line[0] != ' ' {
			if len(fields) < 2 || !pathToken.MatchString(fields[1]) {
				return nil, fmt.Errorf("README.md line %d: a layer's line is its name and a package path (internal/x/), got %q", n, line)
			}
			l.layers = append(l.layers, fields[0])
			fields = fields[1:]
		}
		if !pathToken.MatchString(fields[0]) {
			continue // a description's next line
		}
		if len(l.layers) == 0 {
			return nil, fmt.Errorf("README.md line %d: package %s before any layer", n, fields[0])
		}
		pkg := strings.TrimSuffix(fields[0], "/")
		if prev, ok := l.of[pkg]; ok {
			return nil, fmt.Errorf("README.md line %d: %s is on the map twice (layers %s and %s)", n, pkg, l.layers[prev], l.layers[len(l.layers)-1])
		}
		l.of[pkg] = len(l.layers) - 1
	}
	if !inBlock {
		return nil, fmt.Errorf("README.md has no code block under ## Layout")
	}
	return nil, fmt.Errorf("README.md: the Layout block does not end")
}

// layerOf is the layer of pkg: its own entry, or its nearest parent's (a
// source under internal/discovery/ is the discovery package's layer).
func (l *layout) layerOf(pkg string) (int, bool) {
	for p := pkg; p != "." && p != ""; p = filepath.Dir(p) {
		if n, ok := l.of[p]; ok {
			return n, true
		}
	}
	return 0, false
}

type goPackage struct {
	ImportPath string
	Imports    []string
	Name       string
}

// packages lists the module's packages with their non-test imports.
func packages(t *testing.T, root string) []goPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []goPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p goPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("read go list: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// harness is the layer of test harnesses: only tests and test/ packages may
// import them.
const harness = "harness"

func TestMapMatchesTheHouse(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := readLayout(readme)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, p := range packages(t, root) {
		pkg, ok := strings.CutPrefix(p.ImportPath, module)
		if !ok || pkg == "charts/mcp-hub" {
			continue // the chart's tests: Go only to run them
		}
		own, ok := l.layerOf(pkg)
		if !ok {
			t.Errorf("%s is not on the map: add it to a layer in README.md's Layout", pkg)
			continue
		}
		for _, imp := range p.Imports {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			checked++
			layer, ok := l.layerOf(dep)
			switch {
			case !ok:
				t.Errorf("%s imports %s, which is not on the map", pkg, dep)
			case l.layers[layer] == harness && l.layers[own] != harness && !strings.HasPrefix(pkg, "test/"):
				t.Errorf("%s imports the test harness %s outside its tests", pkg, dep)
			case layer < own && l.layers[own] != harness: // a harness serves tests of any layer
				t.Errorf("%s (layer %s) imports %s from the layer above it (%s): imports point down", pkg, l.layers[own], dep, l.layers[layer])
			}
		}
	}
	if checked == 0 {
		t.Fatal("no import of the module's own packages checked")
	}
	// Every entry on the map is a package (or a parent of packages) that
	// exists, so a moved package does not leave its old line behind.
	for pkg := range l.of {
		if _, err := os.Stat(filepath.Join(root, pkg)); err != nil {
			t.Errorf("README.md's Layout names %s, which does not exist", pkg)
		}
	}
}

// TestReadLayout: the checker itself catches an upward import and a
// package off the map (it would pass anything if it read nothing).
func TestReadLayout(t *testing.T) {
	readme := []byte("# x\n## Layout\n\n```\ntop        cmd/a/    the entry\n           internal/b/   wiring\n                     more words\nlow        internal/c/   leaf\n```\n## Next\n")
	l, err := readLayout(readme)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.layers, []string{"top", "low"}) {
		t.Fatalf("layers %v", l.layers)
	}
	for pkg, want := range map[string]int{"cmd/a": 0, "internal/b": 0, "internal/c": 0 + 1, "internal/c/sub": 1} {
		if got, ok := l.layerOf(pkg); !ok || got != want {
			t.Errorf("layerOf(%s) = %d, %v; want %d", pkg, got, ok, want)
		}
	}
	if _, ok := l.layerOf("internal/d"); ok {
		t.Error("internal/d is not on the map")
	}
	for _, bad := range []string{
		"## Layout\n```\ntop\n```\n",
		"## Layout\n```\n    internal/a/ x\n```\n",
		"## Layout\n```\ntop cmd/a/\nlow cmd/a/\n```\n",
		"## Layout\n```\ntop cmd/a/\n",
		"## Layout\nno block\n",
	} {
		if _, err := readLayout([]byte(bad)); err == nil {
			t.Errorf("readLayout(%q) took it", bad)
		}
	}
}

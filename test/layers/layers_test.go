// Package layers checks that the map of the house in docs/contributors.md ("Layout")
// is the house: every package of the module is on the map, in a layer, no
// package imports from a layer above its own, and within a layer a package
// imports only the ones written below it. A newcomer reads the map to know
// where a thing goes and which way imports may point; a map that drifts
// from the code misleads more than none. The order inside a layer is held
// too because siblings that lean on each other both ways (in meaning: a
// type here, its helper there) are one job split in two, which only a
// real top-down order shows.
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

// layout is the map of docs/contributors.md: each package's layer (0 is the top) and
// place on the map, and the layers' names, in order.
type layout struct {
	layers []string
	of     map[string]int // package path (cmd/mcp-hub, internal/server) -> layer
	line   map[string]int // package path -> its place on the map, top first
}

// pathToken is a package directory as the map writes it: cmd/..., internal/...
// or test/..., with a slash at the end.
var pathToken = regexp.MustCompile(`^(cmd|internal|test)/([a-z0-9/-]+/)?$`)

// readLayout reads the code block under "## Layout" in readme: a line that
// starts in the first column names a layer and its first package; an
// indented line that starts with a package path adds a package to the
// layer above it; other indented lines continue a description.
func readLayout(readme []byte) (*layout, error) {
	l := &layout{of: map[string]int{}, line: map[string]int{}}
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
				return nil, fmt.Errorf("docs/contributors.md line %d: a layer's line is its name and a package path (internal/x/), got %q", n, line)
			}
			l.layers = append(l.layers, fields[0])
			fields = fields[1:]
		}
		if !pathToken.MatchString(fields[0]) {
			continue // a description's next line
		}
		if len(l.layers) == 0 {
			return nil, fmt.Errorf("docs/contributors.md line %d: package %s before any layer", n, fields[0])
		}
		pkg := strings.TrimSuffix(fields[0], "/")
		if prev, ok := l.of[pkg]; ok {
			return nil, fmt.Errorf("docs/contributors.md line %d: %s is on the map twice (layers %s and %s)", n, pkg, l.layers[prev], l.layers[len(l.layers)-1])
		}
		l.of[pkg] = len(l.layers) - 1
		l.line[pkg] = len(l.line)
	}
	if !inBlock {
		return nil, fmt.Errorf("docs/contributors.md has no code block under ## Layout")
	}
	return nil, fmt.Errorf("docs/contributors.md: the Layout block does not end")
}

// entryOf is the map's entry for pkg: its own, or its nearest parent's (a
// source under internal/discovery/ is on the discovery package's line).
func (l *layout) entryOf(pkg string) (string, bool) {
	for p := pkg; p != "." && p != ""; p = filepath.Dir(p) {
		if _, ok := l.of[p]; ok {
			return p, true
		}
	}
	return "", false
}

// layerOf is the layer of pkg's entry.
func (l *layout) layerOf(pkg string) (int, bool) {
	e, ok := l.entryOf(pkg)
	return l.of[e], ok
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

// ownLine is the note for a package the map holds on its parent's line:
// a line of its own may be what the order needs.
func ownLine(pkg, entry string) string {
	if pkg == entry {
		return ""
	}
	return fmt.Sprintf(" (%s has no line of its own, it is on %s's: give it one)", pkg, entry)
}

// problems are the ways pkgs break the map, one sentence each, and how
// many imports of the module's own packages it checked. A line of the map
// holds its package and the sub-packages without a line of their own, so
// imports among those are not ordered.
func (l *layout) problems(pkgs []goPackage) (found []string, checked int) {
	for _, p := range pkgs {
		pkg, ok := strings.CutPrefix(p.ImportPath, module)
		if !ok || pkg == "charts/mcp-hub" {
			continue // the chart's tests: Go only to run them
		}
		entry, ok := l.entryOf(pkg)
		if !ok {
			found = append(found, fmt.Sprintf("%s is not on the map: add it to a layer in docs/contributors.md's Layout", pkg))
			continue
		}
		own := l.of[entry]
		for _, imp := range p.Imports {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			checked++
			depEntry, ok := l.entryOf(dep)
			layer := l.of[depEntry]
			switch {
			case !ok:
				found = append(found, fmt.Sprintf("%s imports %s, which is not on the map", pkg, dep))
			case l.layers[layer] == harness && l.layers[own] != harness && !strings.HasPrefix(pkg, "test/"):
				found = append(found, fmt.Sprintf("%s imports the test harness %s outside its tests", pkg, dep))
			case layer < own && l.layers[own] != harness: // a harness serves tests of any layer
				found = append(found, fmt.Sprintf("%s (layer %s) imports %s from the layer above it (%s): imports point down", pkg, l.layers[own], dep, l.layers[layer]))
			case layer == own && l.line[depEntry] < l.line[entry]:
				found = append(found, fmt.Sprintf("%s imports %s, which docs/contributors.md's Layout writes above it in layer %s: within a layer a package imports only the ones written below it. "+
					"Move the line of %s (with its description) below the line of %s, or, if another import holds that order, move the code %s needs out of %s%s",
					pkg, dep, l.layers[own], depEntry, entry, pkg, dep, ownLine(pkg, entry)+ownLine(dep, depEntry)))
			}
		}
	}
	return found, checked
}

func TestMapMatchesTheHouse(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(root, "docs", "contributors.md"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := readLayout(page)
	if err != nil {
		t.Fatal(err)
	}
	found, checked := l.problems(packages(t, root))
	for _, f := range found {
		t.Error(f)
	}
	if checked == 0 {
		t.Fatal("no import of the module's own packages checked")
	}
	// Every entry on the map is a package (or a parent of packages) that
	// exists, so a moved package does not leave its old line behind.
	for pkg := range l.of {
		if _, err := os.Stat(filepath.Join(root, pkg)); err != nil {
			t.Errorf("docs/contributors.md's Layout names %s, which does not exist", pkg)
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

// TestProblems: the checker itself, on small maps, finds each way a house
// can leave its map (an import up, one up inside a layer, a package off
// the map, the harness outside tests) and takes a house that keeps to it,
// so that TestMapMatchesTheHouse can fail.
func TestProblems(t *testing.T) {
	// tests; top: a above b; low: c; harness: h. a/sub is on a's line.
	const readme = "## Layout\n```\n" +
		"tests      test/         suites\n" +
		"top        internal/a/   the top one\n" +
		"                         more words of a\n" +
		"           internal/b/   below a\n" +
		"low        internal/c/   a leaf\n" +
		"harness    internal/h/   a harness\n" +
		"```\n"
	l, err := readLayout([]byte(readme))
	if err != nil {
		t.Fatal(err)
	}
	pkg := func(path string, imports ...string) goPackage {
		p := goPackage{ImportPath: module + path}
		for _, imp := range imports {
			if strings.Contains(imp, "/") { // the module's, not the standard library's
				imp = module + imp
			}
			p.Imports = append(p.Imports, imp)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pkgs []goPackage
		want []string // one problem holding each, in order; none: the house keeps to its map
	}{
		{"imports point down, across layers and inside one", []goPackage{
			pkg("internal/a", "internal/b", "internal/c", "fmt"),
			pkg("internal/a/sub", "internal/a", "internal/b"),
			pkg("internal/b", "internal/c"),
			pkg("internal/c"),
			pkg("internal/h", "internal/a"),
			pkg("test/x", "internal/h"),
		}, nil},
		{"inside a layer, an import of a line above", []goPackage{
			pkg("internal/b", "internal/a"),
		}, []string{"internal/b imports internal/a, which docs/contributors.md's Layout writes above it in layer top: " +
			"within a layer a package imports only the ones written below it. Move the line of internal/a (with its description) " +
			"below the line of internal/b, or, if another import holds that order, move the code internal/b needs out of internal/a"}},
		{"a sub-package on its parent's line", []goPackage{
			pkg("internal/b", "internal/a/sub"),
		}, []string{"internal/b imports internal/a/sub, which docs/contributors.md's Layout writes above it in layer top",
			"(internal/a/sub has no line of its own, it is on internal/a's: give it one)"}},
		{"an import of the layer above", []goPackage{
			pkg("internal/c", "internal/b"),
		}, []string{"internal/c (layer low) imports internal/b from the layer above it (top): imports point down"}},
		{"off the map", []goPackage{
			pkg("internal/d"),
			pkg("internal/c", "internal/e"),
		}, []string{"internal/d is not on the map", "internal/c imports internal/e, which is not on the map"}},
		{"the harness outside tests", []goPackage{
			pkg("internal/a", "internal/h"),
		}, []string{"internal/a imports the test harness internal/h outside its tests"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			found, checked := l.problems(tc.pkgs)
			if checked == 0 {
				t.Fatal("checked no import")
			}
			all := strings.Join(found, "\n")
			if len(tc.want) == 0 && len(found) != 0 {
				t.Fatalf("problems in a house that keeps to its map:\n%s", all)
			}
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("no problem says %q; found:\n%s", w, all)
				}
			}
		})
	}
}

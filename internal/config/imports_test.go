package config

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/purko-io/mcp-hub"

// forbiddenForConfig are the packages that run the hub. config and the
// discovery sources describe what to run; if they imported these, a
// discovery source would drag in the request path and the import arrows of
// DESIGN.md would point both ways.
func forbiddenForConfig() []string {
	return []string{"internal/apitools", "internal/autonomy", "internal/upstream", "internal/registry", "internal/server"}
}

func TestConfigAndDiscoveryImportNoRuntimePackages(t *testing.T) {
	root := moduleRoot(t)
	roots := []string{"internal/config"}
	err := filepath.WalkDir(filepath.Join(root, "internal", "discovery"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			roots = append(roots, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(roots) < 5 {
		t.Fatalf("found only %v; is the layout still internal/discovery/{file,env,kube}?", roots)
	}
	for _, pkg := range roots {
		if chain := forbiddenImport(t, root, pkg, forbiddenForConfig()); chain != nil {
			t.Errorf("%s imports %s (via %s)", pkg, chain[len(chain)-1], strings.Join(chain, " -> "))
		}
	}
}

// TestImportCheckFindsImports keeps the check above honest: registry does
// import apitools, directly, and server does through registry.
func TestImportCheckFindsImports(t *testing.T) {
	root := moduleRoot(t)
	for _, pkg := range []string{"internal/registry", "internal/server"} {
		if chain := forbiddenImport(t, root, pkg, []string{"internal/apitools"}); chain == nil {
			t.Errorf("the import check finds no path from %s to internal/apitools", pkg)
		}
	}
}

// forbiddenImport follows the non-test imports of pkg within this module
// (transitively) and returns the chain to the first package in forbidden,
// or nil. Every .go file counts, whatever its build constraints, so a
// platform-specific file cannot hide an import.
func forbiddenImport(t *testing.T, root, pkg string, forbidden []string) []string {
	t.Helper()
	type step struct {
		pkg   string
		chain []string
	}
	seen := map[string]bool{pkg: true}
	queue := []step{{pkg, []string{pkg}}}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, imp := range packageImports(t, filepath.Join(root, filepath.FromSlash(cur.pkg))) {
			rel, ours := strings.CutPrefix(imp, modulePath+"/")
			if !ours || seen[rel] {
				continue
			}
			seen[rel] = true
			chain := append(slices.Clone(cur.chain), rel)
			if slices.Contains(forbidden, rel) {
				return chain
			}
			queue = append(queue, step{rel, chain})
		}
	}
	return nil
}

func packageImports(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read package %s: %v", dir, err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("parse imports of %s: %v", filepath.Join(dir, name), err)
		}
		for _, spec := range f.Imports {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				t.Fatalf("%s: import %s: %v", name, spec.Path.Value, err)
			}
			out = append(out, p)
		}
	}
	return out
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

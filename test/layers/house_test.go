package layers

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The size of the house (issue 34): a package past maxPackageLines or a
// type past maxMethods holds more than one job, and the next feature lands
// in it because it is already there. Counted honestly: physical lines of
// every non-test file, generated files apart; methods of every named type,
// pointer receivers or not. Moving methods into free functions or helper
// types only to pass the count defeats the purpose: a new package or type
// must be a job a newcomer would look for under its name.
const (
	maxPackageLines = 2500
	maxMethods      = 25
)

// generated is the header of a generated file (go help generate).
var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// TestHouseStaysSmall holds every package of the product (cmd/ and
// internal/, the test fakes of internal/hubtest included) under
// maxPackageLines and every type under maxMethods. The harnesses of test/
// and hack/ are not the product: a test peer's type has the methods the
// interface it implements asks for.
func TestHouseStaysSmall(t *testing.T) {
	root, err := filepath.Abs("../..") // the module, as TestMapMatchesTheHouse reads it
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]int{}   // package directory -> physical lines
	methods := map[string]int{} // package directory.Type -> methods
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
			if path != root && (top != "cmd" && top != "internal" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if generated.Match(src) {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		lines[dir] += bytes.Count(src, []byte("\n"))
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv != nil && len(fd.Recv.List) == 1 {
				if name := receiverType(fd.Recv.List[0].Type); name != "" {
					methods[dir+"."+name]++
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) < 20 {
		t.Fatalf("counted %d packages under %s: not the module", len(lines), root)
	}
	var over []string
	for dir, n := range lines {
		if n > maxPackageLines {
			over = append(over, fmt.Sprintf("%s: %d lines", dir, n))
		}
	}
	for typ, n := range methods {
		if n > maxMethods {
			over = append(over, fmt.Sprintf("%s: %d methods", typ, n))
		}
	}
	sort.Strings(over)
	for _, o := range over {
		t.Errorf("%s (at most %d lines a package, %d methods a type): split out a job of its own", o, maxPackageLines, maxMethods)
	}
}

// receiverType is the name of a method's receiver type: T, *T, T[P], *T[P].
func receiverType(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	switch x := e.(type) {
	case *ast.IndexExpr:
		e = x.X
	case *ast.IndexListExpr:
		e = x.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

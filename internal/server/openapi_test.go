package server

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// apiRoute matches the mux patterns of the REST API.
var apiRoute = regexp.MustCompile(`^(GET|POST|PUT|PATCH|DELETE) (/api/\S*)$`)

// TestOpenAPIDocumentIsValidAndComplete loads /api/openapi.json with
// kin-openapi, validates it, and checks that every route the hub serves
// under /api/ (every pattern literal of the sources of this package and of
// internal/adminapi, which mounts its routes on the same mux) is in it,
// with its method.
func TestOpenAPIDocumentIsValidAndComplete(t *testing.T) {
	h := newTestHub(t, nil)
	res, err := http.Get(h.url("/api/openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if ct := res.Header.Get("Content-Type"); res.StatusCode != 200 || ct != "application/json" {
		t.Fatalf("GET /api/openapi.json: %d %s", res.StatusCode, ct)
	}
	doc, err := openapi3.NewLoader().LoadFromData(body)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("validate: %v", err)
	}

	routes := muxRoutes(t)
	if len(routes) < 6 {
		t.Fatalf("found only %v among the mux's patterns; were the routes moved?", routes)
	}
	for _, r := range routes {
		m := apiRoute.FindStringSubmatch(r)
		item := doc.Paths.Value(m[2])
		if item == nil {
			t.Errorf("route %s: path %s is not in openapi.json", r, m[2])
			continue
		}
		if item.GetOperation(m[1]) == nil {
			t.Errorf("route %s: no %s operation in openapi.json", r, m[1])
		}
	}
	// The tool-run endpoint is documented for the engineer who serves it.
	if run := doc.Paths.Value("/api/mcp/tools/{name}/run"); run == nil || run.Post == nil || run.Post.Responses.Status(429) == nil {
		t.Error("POST /api/mcp/tools/{name}/run with its 429 is not documented")
	}
}

// muxRoutes are the string literals of the sources that mount routes on
// the hub's mux (this package's and internal/adminapi's) that are mux
// patterns under /api/.
func muxRoutes(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, dir := range []string{".", "../adminapi"} {
		found, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, found...)
	}
	var out []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if v, err := strconv.Unquote(lit.Value); err == nil && apiRoute.MatchString(v) {
					out = append(out, v)
				}
			}
			return true
		})
	}
	return out
}

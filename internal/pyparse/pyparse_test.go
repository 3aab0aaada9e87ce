package pyparse

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// shape renders a subtree as kind(field:child ...), named nodes only, the
// way tree-sitter's own tests write expected trees.
func shape(n *Node) string {
	var b strings.Builder
	var walk func(n *Node, field string)
	walk = func(n *Node, field string) {
		if field != "" {
			b.WriteString(field + ":")
		}
		b.WriteString(n.Kind())
		if n.NamedChildCount() == 0 {
			return
		}
		b.WriteString("(")
		first := true
		for i := uint(0); i < n.ChildCount(); i++ {
			c := n.Child(i)
			if !c.IsNamed() {
				continue
			}
			if !first {
				b.WriteString(" ")
			}
			first = false
			walk(c, n.t.fields[c.field])
		}
		b.WriteString(")")
	}
	walk(n, "")
	return b.String()
}

func TestParseTrees(t *testing.T) {
	p := New()
	defer func() { _ = p.Close(context.Background()) }()
	cases := []struct {
		name, src, want string
	}{
		{"call with keyword", "subprocess.run(cmd, shell=True)\n",
			"module(expression_statement(call(function:attribute(object:identifier attribute:identifier) arguments:argument_list(identifier keyword_argument(name:identifier value:true)))))"},
		{"import alias", "from os import popen as p\n",
			"module(import_from_statement(module_name:dotted_name(identifier) name:aliased_import(name:dotted_name(identifier) alias:identifier)))"},
		{"f-string and comment", "x = f\"{a}\"  # eval(x)\n",
			"module(expression_statement(assignment(left:identifier right:string(string_start interpolation(expression:identifier) string_end))) comment)"},
		{"try except pass", "try:\n    f()\nexcept Exception:\n    pass\n",
			"module(try_statement(body:block(expression_statement(call(function:identifier arguments:argument_list))) except_clause(value:identifier block(pass_statement))))"},
		{"match statement (3.10)", "match x:\n    case 1:\n        pass\n",
			"module(match_statement(subject:identifier body:block(alternative:case_clause(case_pattern(integer) consequence:block(pass_statement)))))"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tree, err := p.Parse(context.Background(), []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			if got := shape(tree.Root()); got != tc.want {
				t.Errorf("tree of %q\n got %s\nwant %s", tc.src, got, tc.want)
			}
			if tree.Root().HasError() {
				t.Errorf("%q: unexpected syntax error", tc.src)
			}
		})
	}
}

func TestNodeAccessors(t *testing.T) {
	p := New()
	src := []byte("import os\ns = 'é'; os.system(cmd)\n")
	tree, err := p.Parse(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	root := tree.Root()
	if root.Parent() != nil || root.Kind() != "module" || root.NamedChildCount() != 3 {
		t.Fatalf("root: kind %s, %d named children, parent %v", root.Kind(), root.NamedChildCount(), root.Parent())
	}
	call := root.NamedChild(2).NamedChild(0)
	if call.Kind() != "call" {
		t.Fatalf("third statement holds %s, want call", call.Kind())
	}
	// Columns count bytes: 'é' is two.
	if pos := call.StartPosition(); pos != (Point{Row: 1, Column: 10}) {
		t.Errorf("call starts at %+v, want row 1 column 10", pos)
	}
	if got := call.Utf8Text(src); got != "os.system(cmd)" {
		t.Errorf("call text %q", got)
	}
	fn := call.ChildByFieldName("function")
	if fn == nil || fn.Utf8Text(src) != "os.system" || fn.Parent() != call {
		t.Fatalf("function field: %v", fn)
	}
	if call.ChildByFieldName("body") != nil || call.NamedChild(9) != nil || call.Child(99) != nil {
		t.Error("absent field or child index gave a node")
	}
	if n := call.ChildByFieldName("arguments"); n.ChildCount() != 3 || n.NamedChildCount() != 1 || n.Child(0).IsNamed() {
		t.Errorf("argument_list: %d children, %d named", n.ChildCount(), n.NamedChildCount())
	}
	if int(call.EndByte())-int(call.StartByte()) != len("os.system(cmd)") {
		t.Errorf("call spans %d..%d", call.StartByte(), call.EndByte())
	}
}

func TestSyntaxErrorsAreNodes(t *testing.T) {
	p := New()
	for _, src := range []string{"def f(:\n    pass\n", "x = (1,\n", "print('a'\n"} {
		tree, err := p.Parse(context.Background(), []byte(src))
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if !tree.Root().HasError() {
			t.Errorf("%q: no error in the tree", src)
		}
		found := false
		var walk func(n *Node)
		walk = func(n *Node) {
			if n.IsError() || n.IsMissing() {
				found = true
			}
			for i := uint(0); i < n.ChildCount(); i++ {
				walk(n.Child(i))
			}
		}
		walk(tree.Root())
		if !found {
			t.Errorf("%q: HasError but no ERROR or MISSING node", src)
		}
	}
}

// TestCancelStopsTheParse: a context that ends stops a long parse within
// a hundred parse operations, and the parser goes on serving.
func TestCancelStopsTheParse(t *testing.T) {
	p := New()
	if _, err := p.Parse(context.Background(), []byte("x = 1\n")); err != nil {
		t.Fatal(err)
	}
	big := []byte(strings.Repeat("def f(x):\n    return [g(y) for y in x if y]\n", 40000))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.Parse(ctx, big)
	if !errors.Is(err, ErrCancelled) {
		t.Fatalf("parse of %d bytes under a 20ms deadline: %v, want ErrCancelled", len(big), err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("cancelled parse took %v", took)
	}
	tree, err := p.Parse(context.Background(), []byte("y = 2\n"))
	if err != nil || shape(tree.Root()) != "module(expression_statement(assignment(left:identifier right:integer)))" {
		t.Fatalf("parse after a cancel: %v", err)
	}
}

func TestParallelParses(t *testing.T) {
	p := New()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := fmt.Sprintf("v%d = eval(x)\n", i)
			tree, err := p.Parse(context.Background(), []byte(src))
			if err != nil {
				errs <- err
				return
			}
			if got := tree.Root().NamedChild(0).NamedChild(0).ChildByFieldName("left").Utf8Text([]byte(src)); got != fmt.Sprintf("v%d", i) {
				errs <- fmt.Errorf("parse %d read %q", i, got)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestClosedParserRefuses(t *testing.T) {
	p := New()
	if _, err := p.Parse(context.Background(), []byte("a = 1\n")); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Parse(context.Background(), []byte("a = 1\n")); err == nil {
		t.Fatal("a closed parser parsed")
	}
}

// TestModuleMatchesItsSources: python.wasm.sum, written by wasm/build.sh,
// names the hash of the module and of shim.c it was built from; a shim
// edited without a rebuild, or a module replaced by hand, fails here.
func TestModuleMatchesItsSources(t *testing.T) {
	f, err := os.Open("python.wasm.sum")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		sums[k] = v
	}
	hash := func(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }
	shim, err := os.ReadFile("wasm/shim.c")
	if err != nil {
		t.Fatal(err)
	}
	if got := hash(shim); got != sums["shim.c"] {
		t.Errorf("wasm/shim.c hashes to %s, python.wasm was built from %s: run `make pyparse-wasm`", got, sums["shim.c"])
	}
	if got := hash(pythonWasm); got != sums["python.wasm"] {
		t.Errorf("embedded python.wasm hashes to %s, python.wasm.sum says %s", got, sums["python.wasm"])
	}
	build, err := os.ReadFile("wasm/build.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tree-sitter", "tree-sitter-python"} {
		ver := strings.Fields(sums[k])
		if len(ver) != 1 || !strings.Contains(string(build), ver[0]) {
			t.Errorf("python.wasm.sum names %s %q, which wasm/build.sh does not pin", k, sums[k])
		}
	}
}

func BenchmarkParse(b *testing.B) {
	p := New()
	src := []byte(strings.Repeat("import os\ndef f(x):\n    os.system('ls ' + x)  # note\n    return eval(x)\n", 250))
	if _, err := p.Parse(context.Background(), src); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(src)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := p.Parse(context.Background(), src); err != nil {
			b.Fatal(err)
		}
	}
}

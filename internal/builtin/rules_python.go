package builtin

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/purko-io/mcp-hub/internal/pyparse"
)

// Python rules, modelled on Bandit's checks (Bandit ids in comments).
var (
	rulePyEval       = ruleInfo{"PY001", sevHigh, "CWE-95", "Use of eval/exec on dynamic input allows code injection"}                            // B307
	rulePyBareExcept = ruleInfo{"PY002", sevLow, "CWE-396", "Bare 'except:' catches every exception, including SystemExit and KeyboardInterrupt"} // E722
	rulePyExceptPass = ruleInfo{"PY003", sevLow, "CWE-703", "Exception swallowed by 'except ...: pass'"}                                          // B110
	rulePyDeserial   = ruleInfo{"PY004", sevHigh, "CWE-502", "Deserialisation with pickle/marshal can execute arbitrary code"}                    // B301/B302
	rulePyYamlLoad   = ruleInfo{"PY005", sevMedium, "CWE-20", "yaml.load without SafeLoader can construct arbitrary objects; use yaml.safe_load"} // B506
	rulePyShellTrue  = ruleInfo{"PY006", sevHigh, "CWE-78", "Subprocess call with shell=True is open to shell injection"}                         // B602/B604
	rulePyOsSystem   = ruleInfo{"PY007", sevHigh, "CWE-78", "Command run through a shell (os.system/os.popen)"}                                   // B605
	rulePyNoVerify   = ruleInfo{"PY008", sevHigh, "CWE-295", "HTTP request with verify=False disables TLS certificate checks"}                    // B501
	rulePyWeakHash   = ruleInfo{"PY009", sevMedium, "CWE-327", "Weak hash function (MD5/SHA1) used"}                                              // B303/B324
	rulePyMktemp     = ruleInfo{"PY010", sevMedium, "CWE-377", "tempfile.mktemp is racy; use mkstemp or NamedTemporaryFile"}                      // B306
	rulePySQL        = ruleInfo{"PY011", sevHigh, "CWE-89", "SQL built by string formatting/concatenation passed to execute(); use parameters"}   // B608
	rulePyAssert     = ruleInfo{"PY012", sevLow, "CWE-703", "assert is removed under python -O; do not use it for checks in production code"}     // B101
	rulePySecret     = ruleInfo{"PY013", sevMedium, "CWE-798", "Hard-coded secret assigned to a credential-named variable"}                       // B105/B106/B107
	rulePyBindAll    = ruleInfo{"PY014", sevMedium, "CWE-605", "Binding to all interfaces (0.0.0.0)"}                                             // B104
	rulePyTodo       = ruleInfo{"PY015", sevLow, "CWE-546", "TODO/FIXME comment left in code"}
	rulePyNoCertChk  = ruleInfo{"PY016", sevHigh, "CWE-295", "TLS certificate verification disabled (ssl)"} // B323
)

var errParseTimeout = errors.New("parse timed out")

// analyzePython parses code with tree-sitter's Python grammar (run as
// WebAssembly by internal/pyparse, so no cgo) under ctx, which stops the
// parse when it ends, and runs the Python rules on the syntax tree.
func analyzePython(ctx context.Context, parser *pyparse.Parser, code, filename string, sink *findingSink) ([]string, error) {
	src := []byte(code)
	tree, err := parser.Parse(ctx, src)
	if errors.Is(err, pyparse.ErrCancelled) {
		return nil, errParseTimeout
	}
	if err != nil {
		return nil, err
	}
	root := tree.Root()

	a := &pyAnalyzer{src: src, sink: sink, aliases: map[string]string{}, assigns: map[string]*pyparse.Node{}, isTest: isPythonTestFile(filename)}
	var notes []string
	if root.HasError() {
		if n := firstErrorNode(root); n != nil {
			p := n.StartPosition()
			notes = append(notes, fmt.Sprintf("syntax error near line %d column %d: findings may be incomplete", p.Row+1, p.Column+1))
		} else {
			notes = append(notes, "syntax error: findings may be incomplete")
		}
	}
	a.collect(root)
	a.check(root)
	return notes, nil
}

func isPythonTestFile(filename string) bool {
	if filename == "" {
		return false
	}
	f := strings.ReplaceAll(filename, "\\", "/")
	base := path.Base(f)
	return strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") || base == "conftest.py" ||
		strings.Contains("/"+f, "/tests/") || strings.Contains("/"+f, "/test/")
}

func firstErrorNode(root *pyparse.Node) *pyparse.Node {
	var found *pyparse.Node
	walkTS(root, func(n *pyparse.Node) bool {
		if found != nil {
			return false
		}
		if n.IsError() || n.IsMissing() {
			found = n
			return false
		}
		return n.HasError()
	})
	return found
}

// walkTS visits nodes depth-first with an explicit stack (deeply nested
// input must not exhaust the goroutine stack); visit returns false to skip
// a node's children.
func walkTS(root *pyparse.Node, visit func(n *pyparse.Node) bool) {
	stack := []*pyparse.Node{root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !visit(n) {
			continue
		}
		for i := int(n.ChildCount()) - 1; i >= 0; i-- {
			if c := n.Child(uint(i)); c != nil {
				stack = append(stack, c)
			}
		}
	}
}

type pyAnalyzer struct {
	src     []byte
	sink    *findingSink
	aliases map[string]string        // local name -> qualified import name
	assigns map[string]*pyparse.Node // variable -> last assigned expression
	isTest  bool
}

func (a *pyAnalyzer) text(n *pyparse.Node) string {
	if n == nil {
		return ""
	}
	return n.Utf8Text(a.src)
}

func (a *pyAnalyzer) report(r ruleInfo, n *pyparse.Node, detail string) {
	p := n.StartPosition()
	a.sink.add(r, int(p.Row)+1, int(p.Column)+1, detail)
}

// collect records imports (so aliases resolve) and simple assignments (so
// a query built one line before execute() is still seen).
func (a *pyAnalyzer) collect(root *pyparse.Node) {
	walkTS(root, func(n *pyparse.Node) bool {
		switch n.Kind() {
		case "import_statement":
			for i := uint(0); i < n.NamedChildCount(); i++ {
				c := n.NamedChild(i)
				switch c.Kind() {
				case "dotted_name":
					full := a.text(c)
					first := strings.SplitN(full, ".", 2)[0]
					a.aliases[first] = first
				case "aliased_import":
					a.aliases[a.text(c.ChildByFieldName("alias"))] = a.text(c.ChildByFieldName("name"))
				}
			}
			return false
		case "import_from_statement":
			mod := a.text(n.ChildByFieldName("module_name"))
			for i := uint(0); i < n.NamedChildCount(); i++ {
				c := n.NamedChild(i)
				if a.text(c) == mod && c.Kind() != "aliased_import" {
					continue
				}
				switch c.Kind() {
				case "dotted_name":
					a.aliases[a.text(c)] = mod + "." + a.text(c)
				case "aliased_import":
					a.aliases[a.text(c.ChildByFieldName("alias"))] = mod + "." + a.text(c.ChildByFieldName("name"))
				}
			}
			return false
		case "assignment":
			if l := n.ChildByFieldName("left"); l != nil && l.Kind() == "identifier" {
				if r := n.ChildByFieldName("right"); r != nil {
					a.assigns[a.text(l)] = r
				}
			}
		case "string", "comment":
			return false
		}
		return true
	})
}

// qual resolves a callee expression to a dotted name through the imports:
// with `from os import system as s`, `s` resolves to os.system.
func (a *pyAnalyzer) qual(n *pyparse.Node) string {
	if n == nil {
		return ""
	}
	switch n.Kind() {
	case "identifier":
		name := a.text(n)
		if q, ok := a.aliases[name]; ok {
			return q
		}
		return name
	case "attribute":
		obj := a.qual(n.ChildByFieldName("object"))
		if obj == "" {
			obj = "?"
		}
		return obj + "." + a.text(n.ChildByFieldName("attribute"))
	case "call":
		return a.qual(n.ChildByFieldName("function")) + "()"
	case "parenthesized_expression":
		if n.NamedChildCount() == 1 {
			return a.qual(n.NamedChild(0))
		}
	}
	return ""
}

// plainString returns the value of a string literal without interpolation.
func (a *pyAnalyzer) plainString(n *pyparse.Node) (string, bool) {
	if n == nil || n.Kind() != "string" {
		return "", false
	}
	var b strings.Builder
	for i := uint(0); i < n.NamedChildCount(); i++ {
		c := n.NamedChild(i)
		switch c.Kind() {
		case "interpolation":
			return "", false
		case "string_content":
			b.WriteString(a.text(c))
		}
	}
	return b.String(), true
}

func (a *pyAnalyzer) isStringish(n *pyparse.Node) bool {
	if n == nil {
		return false
	}
	switch n.Kind() {
	case "string", "concatenated_string":
		return true
	case "parenthesized_expression":
		return n.NamedChildCount() == 1 && a.isStringish(n.NamedChild(0))
	}
	return false
}

// dynamicString reports whether n builds a string from runtime values:
// f-strings with interpolation, `+` concatenation with a non-literal,
// `%` formatting and str.format. Variables are followed a few steps.
func (a *pyAnalyzer) dynamicString(n *pyparse.Node, depth int) bool {
	if n == nil || depth > 4 {
		return false
	}
	switch n.Kind() {
	case "string":
		_, plain := a.plainString(n)
		return !plain
	case "concatenated_string":
		for i := uint(0); i < n.NamedChildCount(); i++ {
			if a.dynamicString(n.NamedChild(i), depth+1) {
				return true
			}
		}
	case "parenthesized_expression":
		return n.NamedChildCount() == 1 && a.dynamicString(n.NamedChild(0), depth+1)
	case "binary_operator":
		op := a.text(n.ChildByFieldName("operator"))
		l, r := n.ChildByFieldName("left"), n.ChildByFieldName("right")
		switch op {
		case "%":
			return a.isStringish(l) || a.dynamicString(l, depth+1)
		case "+":
			ls := a.isStringish(l) || a.dynamicString(l, depth+1)
			rs := a.isStringish(r) || a.dynamicString(r, depth+1)
			if !ls && !rs {
				return false
			}
			_, lp := a.plainString(l)
			_, rp := a.plainString(r)
			return !(lp && rp)
		}
	case "call":
		fn := n.ChildByFieldName("function")
		if fn != nil && fn.Kind() == "attribute" && a.text(fn.ChildByFieldName("attribute")) == "format" {
			obj := fn.ChildByFieldName("object")
			return a.isStringish(obj) || a.dynamicString(obj, depth+1)
		}
	case "identifier":
		if v, ok := a.assigns[a.text(n)]; ok && v != n {
			return a.dynamicString(v, depth+1)
		}
	}
	return false
}

// callArgs splits a call's argument list into positional and keyword ones.
func (a *pyAnalyzer) callArgs(call *pyparse.Node) (pos []*pyparse.Node, kw map[string]*pyparse.Node) {
	kw = map[string]*pyparse.Node{}
	args := call.ChildByFieldName("arguments")
	if args == nil || args.Kind() != "argument_list" {
		return nil, kw
	}
	for i := uint(0); i < args.NamedChildCount(); i++ {
		c := args.NamedChild(i)
		switch c.Kind() {
		case "keyword_argument":
			kw[a.text(c.ChildByFieldName("name"))] = c.ChildByFieldName("value")
		case "comment", "list_splat", "dictionary_splat":
		default:
			pos = append(pos, c)
		}
	}
	return pos, kw
}

var pyHTTPVerbs = map[string]bool{"get": true, "post": true, "put": true, "patch": true, "delete": true, "head": true, "options": true, "request": true, "stream": true, "Client": true, "AsyncClient": true, "Session": true}

var pyDeserialisers = map[string]bool{
	"pickle.loads": true, "pickle.load": true, "pickle.Unpickler": true, "cPickle.loads": true, "cPickle.load": true,
	"_pickle.loads": true, "_pickle.load": true, "marshal.loads": true, "marshal.load": true, "dill.loads": true, "dill.load": true,
	"shelve.open": true, "jsonpickle.decode": true, "pandas.read_pickle": true,
}

var pyShellFuncs = map[string]bool{
	"os.system": true, "os.popen": true, "os.popen2": true, "os.popen3": true, "os.popen4": true,
	"commands.getoutput": true, "commands.getstatusoutput": true, "subprocess.getoutput": true, "subprocess.getstatusoutput": true,
}

var reBindKw = regexp.MustCompile(`(?i)^(host|hostname|bind|bind_addr|address|addr|listen|ip|interface|server_address|listen_address)$`)
var reBindName = regexp.MustCompile(`(?i)(host|bind|listen|addr)`)

func (a *pyAnalyzer) check(root *pyparse.Node) {
	walkTS(root, func(n *pyparse.Node) bool {
		switch n.Kind() {
		case "comment":
			if m := reTodo.FindString(a.text(n)); m != "" {
				a.report(rulePyTodo, n, m)
			}
			return false
		case "string":
			a.checkBindString(n)
			return true // interpolations of f-strings hold code
		case "call":
			a.checkCall(n)
		case "except_clause":
			a.checkExcept(n)
		case "assert_statement":
			if !a.isTest {
				a.report(rulePyAssert, n, "")
			}
		case "assignment":
			a.checkAssignment(n)
		case "keyword_argument", "default_parameter", "typed_default_parameter":
			name := a.text(n.ChildByFieldName("name"))
			if v, ok := a.plainString(n.ChildByFieldName("value")); ok && looksLikeSecretName(name) && looksLikeSecretValue(v) {
				a.report(rulePySecret, n, name)
			}
			if a.qual(n.ChildByFieldName("value")) == "ssl.CERT_NONE" {
				a.report(rulePyNoCertChk, n, "ssl.CERT_NONE")
			}
		case "pair":
			if k, ok := a.plainString(n.ChildByFieldName("key")); ok && looksLikeSecretName(k) {
				if v, ok := a.plainString(n.ChildByFieldName("value")); ok && looksLikeSecretValue(v) {
					a.report(rulePySecret, n, k)
				}
			}
		}
		return true
	})
}

func (a *pyAnalyzer) checkCall(n *pyparse.Node) {
	fn := n.ChildByFieldName("function")
	q := a.qual(fn)
	pos, kw := a.callArgs(n)
	switch {
	case q == "eval" || q == "exec" || q == "builtins.eval" || q == "builtins.exec":
		a.report(rulePyEval, n, q)
	case pyDeserialisers[q]:
		a.report(rulePyDeserial, n, q)
	case q == "yaml.unsafe_load" || q == "yaml.unsafe_load_all":
		a.report(rulePyYamlLoad, n, q)
	case q == "yaml.load" || q == "yaml.load_all":
		loader := kw["Loader"]
		if loader == nil && len(pos) > 1 {
			loader = pos[1]
		}
		lq := a.qual(loader)
		if loader == nil || !(strings.HasSuffix(lq, "SafeLoader") || strings.HasSuffix(lq, "BaseLoader")) {
			a.report(rulePyYamlLoad, n, q)
		}
	case pyShellFuncs[q]:
		a.report(rulePyOsSystem, n, q)
	case q == "tempfile.mktemp" || q == "os.tempnam" || q == "os.tmpnam":
		a.report(rulePyMktemp, n, q)
	case q == "ssl._create_unverified_context":
		a.report(rulePyNoCertChk, n, q)
	case q == "hashlib.md5" || q == "hashlib.sha1" || q == "hashlib.md4" || q == "Crypto.Hash.MD5.new" || q == "Crypto.Hash.SHA.new" || q == "Cryptodome.Hash.MD5.new":
		if !a.notForSecurity(kw) {
			a.report(rulePyWeakHash, n, q)
		}
	case q == "hashlib.new" && len(pos) > 0:
		if s, ok := a.plainString(pos[0]); ok {
			switch strings.ToLower(s) {
			case "md5", "sha1", "md4", "sha", "ripemd160":
				if !a.notForSecurity(kw) {
					a.report(rulePyWeakHash, n, "hashlib.new('"+s+"')")
				}
			}
		}
	}
	if v := kw["shell"]; v != nil && v.Kind() == "true" {
		a.report(rulePyShellTrue, n, q)
	}
	if v := kw["verify"]; v != nil && v.Kind() == "false" {
		last := q[strings.LastIndex(q, ".")+1:]
		if strings.HasPrefix(q, "requests.") || strings.HasPrefix(q, "httpx.") || pyHTTPVerbs[last] {
			a.report(rulePyNoVerify, n, q)
		}
	}
	if fn != nil && fn.Kind() == "attribute" {
		switch a.text(fn.ChildByFieldName("attribute")) {
		case "execute", "executemany", "executescript", "raw":
			if len(pos) > 0 && a.dynamicString(pos[0], 0) {
				a.report(rulePySQL, n, a.text(fn.ChildByFieldName("attribute"))+"()")
			}
		}
	}
}

func (a *pyAnalyzer) notForSecurity(kw map[string]*pyparse.Node) bool {
	v := kw["usedforsecurity"]
	return v != nil && v.Kind() == "false"
}

func (a *pyAnalyzer) checkExcept(n *pyparse.Node) {
	var typ, body *pyparse.Node
	for i := uint(0); i < n.NamedChildCount(); i++ {
		c := n.NamedChild(i)
		switch c.Kind() {
		case "block":
			body = c
		case "comment":
		default:
			if typ == nil {
				typ = c
			}
		}
	}
	if typ == nil {
		a.report(rulePyBareExcept, n, "")
	}
	broad := typ == nil
	if typ != nil {
		t := typ
		if t.Kind() == "as_pattern" && t.NamedChildCount() > 0 {
			t = t.NamedChild(0)
		}
		switch a.qual(t) {
		case "Exception", "BaseException", "builtins.Exception":
			broad = true
		}
	}
	if !broad || body == nil {
		return
	}
	stmts := 0
	onlyPass := true
	for i := uint(0); i < body.NamedChildCount(); i++ {
		c := body.NamedChild(i)
		if c.Kind() == "comment" {
			continue
		}
		stmts++
		if c.Kind() != "pass_statement" && !(c.Kind() == "expression_statement" && a.text(c) == "...") {
			onlyPass = false
		}
	}
	if stmts >= 1 && onlyPass {
		a.report(rulePyExceptPass, n, "")
	}
}

func (a *pyAnalyzer) checkAssignment(n *pyparse.Node) {
	left, right := n.ChildByFieldName("left"), n.ChildByFieldName("right")
	if left == nil || right == nil {
		return
	}
	name := ""
	switch left.Kind() {
	case "identifier":
		name = a.text(left)
	case "attribute":
		name = a.text(left.ChildByFieldName("attribute"))
	case "subscript":
		if s, ok := a.plainString(left.ChildByFieldName("subscript")); ok {
			name = s
		}
	}
	if name == "" {
		return
	}
	if v, ok := a.plainString(right); ok {
		if looksLikeSecretName(name) && looksLikeSecretValue(v) {
			a.report(rulePySecret, n, name)
		}
		if v == "0.0.0.0" && reBindName.MatchString(name) {
			a.report(rulePyBindAll, right, name)
		}
	}
	if a.qual(right) == "ssl.CERT_NONE" || (name == "check_hostname" && right.Kind() == "false") {
		a.report(rulePyNoCertChk, n, name)
	}
}

// checkBindString flags the literal '0.0.0.0' when it is passed to a call,
// directly, as a keyword such as host=, or inside an (host, port) tuple.
func (a *pyAnalyzer) checkBindString(n *pyparse.Node) {
	v, ok := a.plainString(n)
	if !ok || (v != "0.0.0.0" && v != "::") {
		return
	}
	p := n.Parent()
	if p != nil && p.Kind() == "tuple" {
		p = p.Parent()
	}
	if p == nil {
		return
	}
	switch p.Kind() {
	case "argument_list":
		a.report(rulePyBindAll, n, v)
	case "keyword_argument":
		if reBindKw.MatchString(a.text(p.ChildByFieldName("name"))) {
			a.report(rulePyBindAll, n, v)
		}
	}
}

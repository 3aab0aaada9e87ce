package builtin

import (
	"context"
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// Go rules, modelled on gosec's checks (gosec ids in comments).
var (
	ruleGoSQL          = ruleInfo{"GO001", sevHigh, "CWE-89", "SQL built with fmt.Sprintf/concatenation passed to a query; use placeholders"} // G201/G202
	ruleGoExec         = ruleInfo{"GO002", sevHigh, "CWE-78", "Command execution through a shell or with a non-constant command"}             // G204
	ruleGoSkipVerify   = ruleInfo{"GO003", sevHigh, "CWE-295", "TLS InsecureSkipVerify set to true"}                                          // G402
	ruleGoWeakImport   = ruleInfo{"GO004", sevMedium, "CWE-327", "Import of a weak cryptographic primitive"}                                  // G501-G503,G505
	ruleGoWeakCall     = ruleInfo{"GO005", sevMedium, "CWE-327", "Use of a weak cryptographic primitive"}                                     // G401/G405
	ruleGoMathRand     = ruleInfo{"GO006", sevHigh, "CWE-338", "math/rand used to generate a secret; use crypto/rand"}                        // G404
	ruleGoUnchecked    = ruleInfo{"GO007", sevMedium, "CWE-703", "Error of a security-relevant call is not checked"}                          // G104
	ruleGoPerms        = ruleInfo{"GO008", sevMedium, "CWE-276", "File permissions wider than needed"}                                        // G301/G302/G306
	ruleGoTraversal    = ruleInfo{"GO009", sevHigh, "CWE-22", "File path built from request input without Clean+prefix check"}                // G304/G305
	ruleGoUnsafe       = ruleInfo{"GO010", sevLow, "CWE-242", "Use of package unsafe"}                                                        // G103
	ruleGoExit         = ruleInfo{"GO011", sevLow, "CWE-705", "os.Exit outside package main skips deferred cleanup of the caller"}
	ruleGoSecret       = ruleInfo{"GO012", sevMedium, "CWE-798", "Hard-coded secret assigned to a credential-named identifier"}           // G101
	ruleGoNoTimeout    = ruleInfo{"GO013", sevMedium, "CWE-400", "HTTP server without read timeouts (Slowloris)"}                         // G112/G114
	ruleGoTLSVersion   = ruleInfo{"GO014", sevHigh, "CWE-327", "TLS MinVersion below TLS 1.2"}                                            // G402
	ruleGoBindAll      = ruleInfo{"GO015", sevMedium, "CWE-200", "Binding to all interfaces (0.0.0.0)"}                                   // G102
	ruleGoTemplateHTML = ruleInfo{"GO016", sevMedium, "CWE-79", "Non-constant value converted to template.HTML/JS/URL bypasses escaping"} // G203
)

var weakCryptoPkgs = map[string]bool{
	"crypto/md5": true, "crypto/sha1": true, "crypto/des": true, "crypto/rc4": true,
	"golang.org/x/crypto/md4": true, "golang.org/x/crypto/ripemd160": true, "golang.org/x/crypto/blowfish": true,
}

var reGoSecretUse = regexp.MustCompile(`(?i)(key|token|secret|passw|nonce|salt|session|otp|csrf|credential|apikey)`)

// goParseResult carries an analysis done on its own goroutine, so a
// timed-out parse never races with the caller.
type goParseResult struct {
	sink  findingSink
	notes []string
	err   error
}

// analyzeGo parses code with go/parser and runs the Go rules. go/parser has
// no cancellation, so the work runs on its own goroutine and the caller
// stops waiting when ctx ends; input size is capped before this point, which
// bounds what an abandoned goroutine can still cost.
func analyzeGo(ctx context.Context, code, filename string, sink *findingSink) ([]string, error) {
	done := make(chan goParseResult, 1)
	go func() {
		var r goParseResult
		defer func() {
			if p := recover(); p != nil {
				r.err = fmt.Errorf("go analysis failed: %v", p)
			}
			done <- r
		}()
		r.notes = runGoRules(code, filename, &r.sink)
	}()
	select {
	case <-ctx.Done():
		return nil, errParseTimeout
	case r := <-done:
		if r.err != nil {
			return nil, r.err
		}
		for _, f := range r.sink.list {
			sink.add(ruleInfo{f.Rule, f.Severity, f.CWE, f.Issue}, f.Line, f.Column, "")
		}
		return r.notes, nil
	}
}

// parseGoLenient parses a whole file, or else a fragment: declarations
// without a package clause, or bare statements. It returns the file, the
// number of lines added in front, and the parse errors of the best attempt.
func parseGoLenient(fset *token.FileSet, code, filename string) (*ast.File, int, bool, error) {
	if filename == "" {
		filename = "input.go"
	}
	type attempt struct {
		src    string
		offset int
	}
	attempts := []attempt{{code, 0}, {"package snippet\n" + code, 1}, {"package snippet\nfunc _() {\n" + code + "\n}\n", 2}}
	var (
		best      *ast.File
		bestOff   int
		bestErr   error
		bestCount = -1
	)
	for i, at := range attempts {
		f, err := parser.ParseFile(fset, filename, at.src, parser.ParseComments|parser.AllErrors)
		n := 0
		if el, ok := err.(scanner.ErrorList); ok {
			n = len(el)
		} else if err != nil {
			n = 1
		}
		if f != nil && (bestCount < 0 || n < bestCount) {
			best, bestOff, bestErr, bestCount = f, at.offset, err, n
		}
		if n == 0 {
			break
		}
		if i == 0 && f != nil && f.Name != nil && f.Name.Name != "_" && f.Package.IsValid() {
			// It has a package clause: the errors are real syntax errors.
			break
		}
	}
	return best, bestOff, bestOff > 0, bestErr
}

type fakeImporter struct{}

// Import returns an empty, complete package for every path: the tool sees
// one file without its dependencies, and type checking is only used for
// constant values and package-name resolution.
func (fakeImporter) Import(p string) (*types.Package, error) {
	return types.NewPackage(p, goDefaultPkgName(p)), nil
}

func goDefaultPkgName(p string) string {
	base := path.Base(p)
	if len(base) > 1 && base[0] == 'v' && strings.Trim(base[1:], "0123456789") == "" {
		base = path.Base(path.Dir(p))
	}
	if i := strings.Index(base, ".v"); i > 0 {
		base = base[:i]
	}
	base = strings.TrimPrefix(base, "go-")
	base = strings.ReplaceAll(strings.ReplaceAll(base, "-", ""), ".", "")
	return base
}

type goAnalyzer struct {
	fset      *token.FileSet
	file      *ast.File
	info      *types.Info
	sink      *findingSink
	lineOff   int
	fragment  bool
	imports   map[string]string // local name -> import path
	assignLHS map[*ast.CallExpr][]string
}

func runGoRules(code, filename string, sink *findingSink) []string {
	fset := token.NewFileSet()
	f, off, fragment, perr := parseGoLenient(fset, code, filename)
	var notes []string
	if perr != nil {
		msg := perr.Error()
		if el, ok := perr.(scanner.ErrorList); ok && len(el) > 0 {
			e := el[0]
			msg = fmt.Sprintf("line %d column %d: %s", e.Pos.Line-off, e.Pos.Column, e.Msg)
			if len(el) > 1 {
				msg += fmt.Sprintf(" (and %d more)", len(el)-1)
			}
		}
		notes = append(notes, "syntax error: "+msg+"; findings may be incomplete")
	}
	if f == nil {
		return notes
	}
	if fragment {
		notes = append(notes, "no package clause: parsed as a fragment")
	}
	a := &goAnalyzer{fset: fset, file: f, sink: sink, lineOff: off, fragment: fragment, imports: map[string]string{}, assignLHS: map[*ast.CallExpr][]string{}}
	a.typeCheck()
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		name := goDefaultPkgName(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		a.imports[name] = p
		switch {
		case weakCryptoPkgs[p]:
			a.report(ruleGoWeakImport, imp, p)
		case p == "unsafe":
			a.report(ruleGoUnsafe, imp, "")
		}
	}
	a.run()
	return notes
}

func (a *goAnalyzer) typeCheck() {
	defer func() { _ = recover() }() // best effort: a broken file still gets the syntactic rules
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: fakeImporter{}, Error: func(error) {}, FakeImportC: true}
	_, _ = conf.Check(a.file.Name.Name, a.fset, []*ast.File{a.file}, info)
	a.info = info
}

func (a *goAnalyzer) report(r ruleInfo, n ast.Node, detail string) {
	p := a.fset.Position(n.Pos())
	a.sink.add(r, p.Line-a.lineOff, p.Column, detail)
}

// pkgFunc resolves `pkg.Fn` to (import path, Fn).
func (a *goAnalyzer) pkgFunc(e ast.Expr) (string, string) {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	if !ok {
		return "", ""
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", ""
	}
	if a.info != nil {
		if obj, ok := a.info.Uses[id]; ok {
			if pn, ok := obj.(*types.PkgName); ok {
				return pn.Imported().Path(), sel.Sel.Name
			}
			return "", ""
		}
	}
	if p, ok := a.imports[id.Name]; ok {
		return p, sel.Sel.Name
	}
	return "", ""
}

func (a *goAnalyzer) constValue(e ast.Expr) constant.Value {
	e = ast.Unparen(e)
	if a.info != nil {
		if tv, ok := a.info.Types[e]; ok && tv.Value != nil {
			return tv.Value
		}
	}
	if bl, ok := e.(*ast.BasicLit); ok {
		return constant.MakeFromLiteral(bl.Value, bl.Kind, 0)
	}
	return nil
}

func (a *goAnalyzer) constString(e ast.Expr) (string, bool) {
	v := a.constValue(e)
	if v == nil || v.Kind() != constant.String {
		return "", false
	}
	return constant.StringVal(v), true
}

func (a *goAnalyzer) isConst(e ast.Expr) bool {
	v := a.constValue(e)
	return v != nil && v.Kind() != constant.Unknown
}

func (a *goAnalyzer) run() {
	// Map calls to the names they are assigned to, for the math/rand rule.
	ast.Inspect(a.file, func(n ast.Node) bool {
		switch s := n.(type) {
		case *ast.AssignStmt:
			var names []string
			for _, l := range s.Lhs {
				names = append(names, exprName(l))
			}
			for _, r := range s.Rhs {
				ast.Inspect(r, func(m ast.Node) bool {
					if c, ok := m.(*ast.CallExpr); ok {
						a.assignLHS[c] = append(a.assignLHS[c], names...)
					}
					return true
				})
			}
		case *ast.ValueSpec:
			var names []string
			for _, l := range s.Names {
				names = append(names, l.Name)
			}
			for _, r := range s.Values {
				ast.Inspect(r, func(m ast.Node) bool {
					if c, ok := m.(*ast.CallExpr); ok {
						a.assignLHS[c] = append(a.assignLHS[c], names...)
					}
					return true
				})
			}
		}
		return true
	})

	// Package-level declarations (secrets in const/var blocks).
	for _, d := range a.file.Decls {
		if gd, ok := d.(*ast.GenDecl); ok {
			a.checkGenDecl(gd)
		}
	}
	for _, d := range a.file.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
			a.checkFunc(fd.Name.Name, fd.Type, fd.Body)
		}
	}
	// Expressions anywhere (including package-level var initialisers).
	ast.Inspect(a.file, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.CallExpr:
			a.checkCall(x)
		case *ast.KeyValueExpr:
			a.checkKeyValue(x)
		case *ast.CompositeLit:
			a.checkCompositeLit(x)
		case *ast.AssignStmt:
			a.checkAssign(x)
		case *ast.ExprStmt:
			if c, ok := x.X.(*ast.CallExpr); ok {
				a.checkUnchecked(c, x)
			}
		case *ast.DeclStmt:
			if gd, ok := x.Decl.(*ast.GenDecl); ok {
				a.checkGenDecl(gd)
			}
		case *ast.FuncLit:
			a.checkFunc("", x.Type, x.Body)
		}
		return true
	})
}

func exprName(e ast.Expr) string {
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return x.Sel.Name
	case *ast.IndexExpr:
		if bl, ok := x.Index.(*ast.BasicLit); ok && bl.Kind == token.STRING {
			s, _ := strconv.Unquote(bl.Value)
			return s
		}
	case *ast.StarExpr:
		return exprName(x.X)
	}
	return ""
}

func (a *goAnalyzer) checkSecret(name string, value ast.Expr, at ast.Node) {
	if name == "" || name == "_" || !looksLikeSecretName(name) {
		return
	}
	bl, ok := ast.Unparen(value).(*ast.BasicLit)
	if !ok || bl.Kind != token.STRING {
		return
	}
	s, err := strconv.Unquote(bl.Value)
	if err != nil || !looksLikeSecretValue(s) {
		return
	}
	a.report(ruleGoSecret, at, name)
}

func (a *goAnalyzer) checkGenDecl(gd *ast.GenDecl) {
	if gd.Tok != token.CONST && gd.Tok != token.VAR {
		return
	}
	for _, sp := range gd.Specs {
		vs, ok := sp.(*ast.ValueSpec)
		if !ok {
			continue
		}
		for i, n := range vs.Names {
			if i < len(vs.Values) {
				a.checkSecret(n.Name, vs.Values[i], n)
			}
		}
	}
}

func (a *goAnalyzer) checkAssign(s *ast.AssignStmt) {
	if len(s.Lhs) == len(s.Rhs) {
		for i, l := range s.Lhs {
			a.checkSecret(exprName(l), s.Rhs[i], l)
			if sel, ok := l.(*ast.SelectorExpr); ok {
				switch sel.Sel.Name {
				case "InsecureSkipVerify":
					if id, ok := s.Rhs[i].(*ast.Ident); ok && id.Name == "true" {
						a.report(ruleGoSkipVerify, s, "")
					}
				case "MinVersion":
					a.checkTLSVersion(s.Rhs[i], s)
				}
			}
		}
	}
	if len(s.Rhs) == 1 {
		if c, ok := ast.Unparen(s.Rhs[0]).(*ast.CallExpr); ok {
			if id, ok := s.Lhs[len(s.Lhs)-1].(*ast.Ident); ok && id.Name == "_" {
				a.checkUnchecked(c, s)
			}
		}
	}
}

func (a *goAnalyzer) checkKeyValue(kv *ast.KeyValueExpr) {
	key := ""
	switch k := kv.Key.(type) {
	case *ast.Ident:
		key = k.Name
	case *ast.BasicLit:
		if k.Kind == token.STRING {
			key, _ = strconv.Unquote(k.Value)
		}
	}
	a.checkSecret(key, kv.Value, kv)
	switch key {
	case "InsecureSkipVerify":
		if id, ok := kv.Value.(*ast.Ident); ok && id.Name == "true" {
			a.report(ruleGoSkipVerify, kv, "")
		}
	case "MinVersion":
		a.checkTLSVersion(kv.Value, kv)
	case "Addr":
		if s, ok := a.constString(kv.Value); ok && strings.HasPrefix(s, "0.0.0.0") {
			a.report(ruleGoBindAll, kv.Value, s)
		}
	}
}

func (a *goAnalyzer) checkTLSVersion(v ast.Expr, at ast.Node) {
	if p, name := a.pkgFunc(v); p == "crypto/tls" {
		switch name {
		case "VersionSSL30", "VersionTLS10", "VersionTLS11":
			a.report(ruleGoTLSVersion, at, "tls."+name)
		}
		return
	}
	if c := a.constValue(v); c != nil {
		if x, ok := constant.Int64Val(c); ok && x > 0 && x < 0x0303 {
			a.report(ruleGoTLSVersion, at, fmt.Sprintf("0x%04x", x))
		}
	}
}

func (a *goAnalyzer) checkCompositeLit(cl *ast.CompositeLit) {
	if p, name := a.pkgFunc(cl.Type); p == "net/http" && name == "Server" {
		for _, e := range cl.Elts {
			if kv, ok := e.(*ast.KeyValueExpr); ok {
				if k, ok := kv.Key.(*ast.Ident); ok && (k.Name == "ReadHeaderTimeout" || k.Name == "ReadTimeout") {
					return
				}
			}
		}
		a.report(ruleGoNoTimeout, cl, "http.Server without ReadHeaderTimeout")
	}
}

var goSQLMethods = map[string]int{
	"Query": 0, "QueryRow": 0, "Exec": 0, "Prepare": 0, "Queryx": 0, "QueryRowx": 0, "Select": 1, "Get": 1, "Raw": 0,
	"QueryContext": 1, "QueryRowContext": 1, "ExecContext": 1, "PrepareContext": 1, "QueryxContext": 1, "SelectContext": 2, "GetContext": 2,
}

func (a *goAnalyzer) checkCall(c *ast.CallExpr) {
	p, fn := a.pkgFunc(c.Fun)
	switch {
	case p == "os/exec" && (fn == "Command" || fn == "CommandContext"):
		a.checkExecCommand(c, fn)
	case weakCryptoPkgs[p] && (fn == "New" || fn == "Sum" || fn == "NewCipher" || fn == "NewTripleDESCipher"):
		a.report(ruleGoWeakCall, c, path.Base(p)+"."+fn)
	case p == "math/rand" || p == "math/rand/v2":
		a.checkMathRand(c, fn)
	case p == "os" && fn == "Exit":
		if !a.fragment && a.file.Name.Name != "main" {
			a.report(ruleGoExit, c, "package "+a.file.Name.Name)
		}
	case p == "net/http" && (fn == "ListenAndServe" || fn == "ListenAndServeTLS" || fn == "Serve" || fn == "ServeTLS"):
		a.report(ruleGoNoTimeout, c, "http."+fn)
		if len(c.Args) > 0 {
			if s, ok := a.constString(c.Args[0]); ok && strings.HasPrefix(s, "0.0.0.0") {
				a.report(ruleGoBindAll, c.Args[0], s)
			}
		}
	case p == "net" && (fn == "Listen" || fn == "ListenPacket") && len(c.Args) > 1:
		if s, ok := a.constString(c.Args[1]); ok && strings.HasPrefix(s, "0.0.0.0") {
			a.report(ruleGoBindAll, c.Args[1], s)
		}
	case p == "html/template" && (fn == "HTML" || fn == "JS" || fn == "URL" || fn == "CSS" || fn == "HTMLAttr" || fn == "JSStr" || fn == "Srcset"):
		if len(c.Args) == 1 && !a.isConst(c.Args[0]) {
			a.report(ruleGoTemplateHTML, c, "template."+fn)
		}
	}
	a.checkPerms(c, p, fn)
	if sel, ok := ast.Unparen(c.Fun).(*ast.SelectorExpr); ok && p == "" {
		if idx, ok := goSQLMethods[sel.Sel.Name]; ok && idx < len(c.Args) {
			if a.dynamicSQL(c.Args[idx], c, 0) {
				a.report(ruleGoSQL, c, sel.Sel.Name)
			}
		}
	}
}

var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "/bin/sh": true, "/bin/bash": true, "/usr/bin/bash": true, "/bin/zsh": true, "cmd": true, "cmd.exe": true, "powershell": true, "pwsh": true}

func (a *goAnalyzer) checkExecCommand(c *ast.CallExpr, fn string) {
	i := 0
	if fn == "CommandContext" {
		i = 1
	}
	if i >= len(c.Args) {
		return
	}
	name, ok := a.constString(c.Args[i])
	if !ok {
		a.report(ruleGoExec, c, "non-constant command")
		return
	}
	if shells[name] && i+1 < len(c.Args) {
		if flag, ok := a.constString(c.Args[i+1]); ok && (flag == "-c" || strings.EqualFold(flag, "/c") || strings.EqualFold(flag, "-Command")) {
			a.report(ruleGoExec, c, name+" "+flag)
		}
	}
}

func (a *goAnalyzer) checkMathRand(c *ast.CallExpr, fn string) {
	if fn == "Read" {
		a.report(ruleGoMathRand, c, "rand.Read")
		return
	}
	for _, n := range a.assignLHS[c] {
		if reGoSecretUse.MatchString(n) {
			a.report(ruleGoMathRand, c, "assigned to "+n)
			return
		}
	}
	if fd := a.enclosingFunc(c.Pos()); fd != nil && reGoSecretUse.MatchString(fd.Name.Name) {
		a.report(ruleGoMathRand, c, "in "+fd.Name.Name)
	}
}

func (a *goAnalyzer) enclosingFunc(pos token.Pos) *ast.FuncDecl {
	for _, d := range a.file.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Pos() <= pos && pos < fd.End() {
			return fd
		}
	}
	return nil
}

type permCheck struct {
	arg int
	max int64
}

var goPermFuncs = map[string]permCheck{
	"os.WriteFile": {2, 0o600}, "io/ioutil.WriteFile": {2, 0o600}, "os.OpenFile": {2, 0o600},
	"os.Chmod": {1, 0o600}, "os.Mkdir": {1, 0o750}, "os.MkdirAll": {1, 0o750},
}

func (a *goAnalyzer) checkPerms(c *ast.CallExpr, p, fn string) {
	pc, ok := goPermFuncs[p+"."+fn]
	if !ok || pc.arg >= len(c.Args) {
		return
	}
	arg := ast.Unparen(c.Args[pc.arg])
	if conv, ok := arg.(*ast.CallExpr); ok && len(conv.Args) == 1 { // os.FileMode(0644)
		if _, name := a.pkgFunc(conv.Fun); name == "FileMode" {
			arg = conv.Args[0]
		}
	}
	v := a.constValue(arg)
	if v == nil {
		return
	}
	m, ok := constant.Int64Val(constant.ToInt(v))
	if !ok {
		return
	}
	if m&^pc.max&0o777 != 0 {
		a.report(ruleGoPerms, c, fmt.Sprintf("%s with mode %#o (max %#o)", path.Base(p)+"."+fn, m, pc.max))
	}
}

// unchecked security-relevant calls: package functions and method names.
var goMustCheck = map[string]bool{
	"os.Chmod": true, "os.Chown": true, "os.Lchown": true, "os.WriteFile": true, "os.Mkdir": true, "os.MkdirAll": true,
	"os.Remove": true, "os.RemoveAll": true, "os.Rename": true, "os.Setenv": true, "os.Symlink": true, "os.Truncate": true,
	"io.Copy": true, "io.CopyN": true, "io.CopyBuffer": true, "io.ReadFull": true, "io/ioutil.WriteFile": true,
	"crypto/tls.LoadX509KeyPair": true, "crypto/tls.X509KeyPair": true, "crypto/rand.Read": true, "crypto/x509.ParseCertificate": true,
}
var goMustCheckMethods = map[string]bool{"Exec": true, "ExecContext": true, "Chmod": true, "Chown": true, "Truncate": true, "Sync": true}

func (a *goAnalyzer) checkUnchecked(c *ast.CallExpr, at ast.Node) {
	p, fn := a.pkgFunc(c.Fun)
	if p != "" {
		if goMustCheck[p+"."+fn] {
			a.report(ruleGoUnchecked, at, path.Base(p)+"."+fn)
		}
		return
	}
	if sel, ok := ast.Unparen(c.Fun).(*ast.SelectorExpr); ok && goMustCheckMethods[sel.Sel.Name] {
		a.report(ruleGoUnchecked, at, sel.Sel.Name)
	}
}

// dynamicSQL reports whether e builds a string from non-constant parts
// with fmt.Sprintf or +; variables are followed to their assignments in
// the enclosing function.
func (a *goAnalyzer) dynamicSQL(e ast.Expr, ctxNode ast.Node, depth int) bool {
	if depth > 4 {
		return false
	}
	e = ast.Unparen(e)
	if a.isConst(e) {
		return false
	}
	switch x := e.(type) {
	case *ast.CallExpr:
		p, fn := a.pkgFunc(x.Fun)
		if p == "fmt" && (fn == "Sprintf" || fn == "Sprint" || fn == "Sprintln") {
			for _, arg := range x.Args[min(1, len(x.Args)):] {
				if !a.isConst(arg) {
					return true
				}
			}
			return fn != "Sprintf" && len(x.Args) > 0
		}
		if p == "strings" && (fn == "Join" || fn == "Replace" || fn == "ReplaceAll") {
			return true
		}
		if sel, ok := x.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "String" && p == "" {
			return a.builderDynamic(sel.X, ctxNode)
		}
	case *ast.BinaryExpr:
		if x.Op != token.ADD {
			return false
		}
		return hasStringLit(x) || a.dynamicSQL(x.X, ctxNode, depth+1) || a.dynamicSQL(x.Y, ctxNode, depth+1)
	case *ast.Ident:
		for _, rhs := range a.assignmentsTo(x.Name, ctxNode) {
			if rhs != e && a.dynamicSQL(rhs, ctxNode, depth+1) {
				return true
			}
		}
	}
	return false
}

// hasStringLit reports whether e holds a string literal anywhere.
func hasStringLit(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if bl, ok := n.(*ast.BasicLit); ok && bl.Kind == token.STRING {
			found = true
		}
		return !found
	})
	return found
}

// builderDynamic: a strings.Builder that had non-constant WriteString calls.
func (a *goAnalyzer) builderDynamic(x ast.Expr, ctxNode ast.Node) bool {
	name := exprName(x)
	body := a.enclosingBody(ctxNode)
	if body == nil || name == "" {
		return false
	}
	dyn := false
	ast.Inspect(body, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if sel, ok := c.Fun.(*ast.SelectorExpr); ok && exprName(sel.X) == name && strings.HasPrefix(sel.Sel.Name, "Write") {
				for _, arg := range c.Args {
					if !a.isConst(arg) {
						dyn = true
					}
				}
			}
		}
		return !dyn
	})
	return dyn
}

func (a *goAnalyzer) enclosingBody(n ast.Node) ast.Node {
	var best ast.Node
	ast.Inspect(a.file, func(m ast.Node) bool {
		if m == nil {
			return false
		}
		if m.Pos() > n.Pos() || m.End() < n.End() {
			return false
		}
		switch f := m.(type) {
		case *ast.FuncDecl:
			if f.Body != nil {
				best = f.Body
			}
		case *ast.FuncLit:
			best = f.Body
		}
		return true
	})
	return best
}

// assignmentsTo lists the right-hand sides assigned to name (including +=)
// in the function around ctxNode.
func (a *goAnalyzer) assignmentsTo(name string, ctxNode ast.Node) []ast.Expr {
	body := a.enclosingBody(ctxNode)
	if body == nil {
		return nil
	}
	var out []ast.Expr
	ast.Inspect(body, func(n ast.Node) bool {
		switch s := n.(type) {
		case *ast.AssignStmt:
			if len(s.Lhs) == len(s.Rhs) {
				for i, l := range s.Lhs {
					if id, ok := l.(*ast.Ident); ok && id.Name == name {
						rhs := s.Rhs[i]
						if s.Tok == token.ADD_ASSIGN {
							if !a.isConst(rhs) {
								out = append(out, &ast.BinaryExpr{X: &ast.BasicLit{Kind: token.STRING, Value: `""`}, Op: token.ADD, Y: rhs})
							}
							continue
						}
						out = append(out, rhs)
					}
				}
			}
		case *ast.ValueSpec:
			for i, id := range s.Names {
				if id.Name == name && i < len(s.Values) {
					out = append(out, s.Values[i])
				}
			}
		}
		return true
	})
	return out
}

// checkFunc runs the request-taint rule (path traversal) on one function.
func (a *goAnalyzer) checkFunc(_ string, ft *ast.FuncType, body *ast.BlockStmt) {
	if ft == nil || body == nil || ft.Params == nil {
		return
	}
	reqs := map[string]bool{}
	for _, f := range ft.Params.List {
		if st, ok := f.Type.(*ast.StarExpr); ok {
			if p, name := a.pkgFunc(st.X); p == "net/http" && name == "Request" {
				for _, n := range f.Names {
					reqs[n.Name] = true
				}
			}
		}
	}
	if len(reqs) == 0 {
		return
	}
	// Sanitised functions: Clean/Abs/Rel followed by a prefix check, or IsLocal.
	hasClean, hasPrefix, hasLocal := false, false, false
	ast.Inspect(body, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			p, fn := a.pkgFunc(c.Fun)
			switch {
			case (p == "path/filepath" || p == "path") && (fn == "Clean" || fn == "Abs" || fn == "Rel" || fn == "EvalSymlinks"):
				hasClean = true
			case p == "strings" && (fn == "HasPrefix" || fn == "Contains" || fn == "CutPrefix"):
				hasPrefix = true
			case p == "path/filepath" && (fn == "IsLocal" || fn == "Localize"):
				hasLocal = true
			}
		}
		return true
	})
	if (hasClean && hasPrefix) || hasLocal {
		return
	}
	tainted := map[string]bool{}
	for range 3 { // propagate through local assignments
		ast.Inspect(body, func(n ast.Node) bool {
			switch s := n.(type) {
			case *ast.AssignStmt:
				for _, r := range s.Rhs {
					if a.taintedExpr(r, reqs, tainted) {
						for _, l := range s.Lhs {
							if id, ok := l.(*ast.Ident); ok && id.Name != "_" {
								tainted[id.Name] = true
							}
						}
					}
				}
			case *ast.ValueSpec:
				for _, r := range s.Values {
					if a.taintedExpr(r, reqs, tainted) {
						for _, id := range s.Names {
							tainted[id.Name] = true
						}
					}
				}
			}
			return true
		})
	}
	ast.Inspect(body, func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		p, fn := a.pkgFunc(c.Fun)
		key := p + "." + fn
		switch key {
		case "path/filepath.Join", "path.Join":
			for _, arg := range c.Args {
				if a.taintedExpr(arg, reqs, tainted) {
					a.report(ruleGoTraversal, c, path.Base(p)+".Join")
					break
				}
			}
		case "os.Open", "os.OpenFile", "os.ReadFile", "os.Create", "os.Remove", "os.RemoveAll", "os.WriteFile", "io/ioutil.ReadFile", "net/http.ServeFile":
			i := 0
			if key == "net/http.ServeFile" {
				i = 2
			}
			if i < len(c.Args) {
				if inner, ok := ast.Unparen(c.Args[i]).(*ast.CallExpr); ok {
					if ip, ifn := a.pkgFunc(inner.Fun); (ip == "path/filepath" || ip == "path") && ifn == "Join" {
						return true // reported at the Join
					}
				}
				if a.taintedExpr(c.Args[i], reqs, tainted) {
					a.report(ruleGoTraversal, c, path.Base(p)+"."+fn)
				}
			}
		}
		return true
	})
}

var goRequestInput = map[string]bool{"URL": true, "Form": true, "PostForm": true, "MultipartForm": true, "Header": true, "FormValue": true, "PostFormValue": true, "PathValue": true, "Cookie": true, "Body": true, "FormFile": true, "RequestURI": true}

// taintedExpr reports whether e carries request input; filepath.Base
// sanitises (it cannot contain a separator).
func (a *goAnalyzer) taintedExpr(e ast.Expr, reqs, tainted map[string]bool) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if found {
			return false
		}
		switch x := n.(type) {
		case *ast.CallExpr:
			if p, fn := a.pkgFunc(x.Fun); (p == "path/filepath" || p == "path") && fn == "Base" {
				return false
			}
			// mux.Vars(r), chi.URLParam(r, "x"), and the like.
			if _, fn := a.pkgFunc(x.Fun); fn == "Vars" || fn == "URLParam" || fn == "Param" {
				for _, arg := range x.Args {
					if id, ok := arg.(*ast.Ident); ok && reqs[id.Name] {
						found = true
					}
				}
			}
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok && reqs[id.Name] && goRequestInput[x.Sel.Name] {
				found = true
			}
		case *ast.Ident:
			if tainted[x.Name] {
				found = true
			}
		}
		return true
	})
	return found
}

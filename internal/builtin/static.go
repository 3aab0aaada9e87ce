package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/builtin/secretscan"
	"github.com/purko-io/mcp-hub/internal/pyparse"
)

// StaticAnalysisToolName is the name under which the hub exposes the
// static-analysis builtin; clients and the registry refer to it by this name.
const StaticAnalysisToolName = "static-analysis"

// Defaults for StaticOptions. They bound the work one call can cause, so a
// client cannot pin the hub with a huge or pathological input.
const (
	DefaultStaticMaxInputBytes = 512 * 1024
	DefaultStaticParseTimeout  = 5 * time.Second
)

// StaticOptions bounds the static-analysis tool. The zero value is usable:
// every zero field takes its default, because the tool runs untrusted input
// inside the hub process and must never be unbounded.
type StaticOptions struct {
	// MaxInputBytes is the largest `code` argument accepted (default 512 KiB).
	MaxInputBytes int
	// ParseTimeout bounds parsing of one input (default 5s).
	ParseTimeout time.Duration
}

func (o StaticOptions) withDefaults() StaticOptions {
	if o.MaxInputBytes <= 0 {
		o.MaxInputBytes = DefaultStaticMaxInputBytes
	}
	if o.ParseTimeout <= 0 {
		o.ParseTimeout = DefaultStaticParseTimeout
	}
	return o
}

// Severity levels reported by the rules.
const (
	sevHigh   = "HIGH"
	sevMedium = "MEDIUM"
	sevLow    = "LOW"
)

// Finding is one problem reported by the static-analysis tool. It is
// exported so callers (and tests) can decode the tool's JSON result into it.
type Finding struct {
	Severity string `json:"severity"`
	Issue    string `json:"issue"`
	Rule     string `json:"rule"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	CWE      string `json:"cwe"`
}

// StaticReport is the JSON document the static-analysis tool returns as its
// single text content; exported so consumers decode a stable shape.
type StaticReport struct {
	Findings []Finding `json:"findings"`
	Total    int       `json:"total"`
	Language string    `json:"language"`
	Notes    []string  `json:"notes"`
}

// ruleInfo describes a rule once, so every finding of a rule carries the
// same severity, CWE and wording.
type ruleInfo struct {
	ID       string
	Severity string
	CWE      string
	Issue    string
}

// findingSink collects findings, de-duplicating identical ones.
type findingSink struct {
	list []Finding
	seen map[string]bool
}

func (s *findingSink) add(r ruleInfo, line, col int, detail string) {
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	key := fmt.Sprintf("%s:%d:%d", r.ID, line, col)
	if s.seen[key] {
		return
	}
	s.seen[key] = true
	issue := r.Issue
	if detail != "" {
		issue += ": " + detail
	}
	s.list = append(s.list, Finding{Severity: r.Severity, Issue: issue, Rule: r.ID, Line: line, Column: col, CWE: r.CWE})
}

// StaticAnalysis returns the definition and handler of the hub's builtin
// `static-analysis` tool. It parses Python (tree-sitter, as WebAssembly) or Go (go/parser)
// and walks the syntax tree, so string contents and comments never trigger
// code rules, unlike the regex scan it replaces. The handler never panics
// and never returns nil: bad input yields an error result naming the
// offending argument.
func StaticAnalysis(opts StaticOptions) (mcp.Tool, func(ctx context.Context, args map[string]any) *mcp.CallToolResult) {
	opts = opts.withDefaults()
	secrets := secretscan.Default()
	python := pyparse.New() // compiled at the first Python input
	tool := mcp.NewTool(StaticAnalysisToolName,
		mcp.WithDescription("Static security analysis of a Python or Go snippet. The code is parsed, not grepped: "+
			"rules modelled on Bandit (Python) and gosec (Go) walk the syntax tree, and gitleaks' default rules look for "+
			"leaked credentials. Returns JSON {findings:[{severity,issue,rule,line,column,cwe}],total,language,notes}."),
		mcp.WithString("code", mcp.Required(), mcp.Description(fmt.Sprintf("Source code to analyse (at most %d bytes).", opts.MaxInputBytes))),
		mcp.WithString("language", mcp.Enum("python", "go"), mcp.Description("Language of the code; detected from filename and content when omitted.")),
		mcp.WithString("filename", mcp.Description("Optional file name; its extension helps detect the language and test files are treated as such.")),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	handler := func(ctx context.Context, args map[string]any) (res *mcp.CallToolResult) {
		defer func() {
			if p := recover(); p != nil {
				res = mcp.NewToolResultError(fmt.Sprintf("static-analysis: internal error: %v", p))
			}
			if res == nil {
				res = mcp.NewToolResultError("static-analysis: internal error: no result")
			}
		}()
		if ctx == nil {
			ctx = context.Background()
		}
		return runStatic(ctx, opts, secrets, python, args)
	}
	return tool, handler
}

func argString(args map[string]any, name string, required bool) (string, bool, *mcp.CallToolResult) {
	v, ok := args[name]
	if !ok || v == nil {
		if required {
			return "", false, mcp.NewToolResultError(fmt.Sprintf("argument %q is required", name))
		}
		return "", false, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", false, mcp.NewToolResultError(fmt.Sprintf("argument %q must be a string, got %T", name, v))
	}
	return s, true, nil
}

func runStatic(ctx context.Context, opts StaticOptions, secrets *secretscan.Scanner, python *pyparse.Parser, args map[string]any) *mcp.CallToolResult {
	code, _, errRes := argString(args, "code", true)
	if errRes != nil {
		return errRes
	}
	if len(code) > opts.MaxInputBytes {
		return mcp.NewToolResultError(fmt.Sprintf("argument \"code\" is %d bytes, over the limit of %d bytes", len(code), opts.MaxInputBytes))
	}
	if !utf8.ValidString(code) {
		return mcp.NewToolResultError("argument \"code\" is not valid UTF-8")
	}
	lang, hasLang, errRes := argString(args, "language", false)
	if errRes != nil {
		return errRes
	}
	filename, _, errRes := argString(args, "filename", false)
	if errRes != nil {
		return errRes
	}
	lang = strings.ToLower(strings.TrimSpace(lang))
	if hasLang && lang != "" {
		switch lang {
		case "python", "py":
			lang = "python"
		case "go", "golang":
			lang = "go"
		default:
			return mcp.NewToolResultError(fmt.Sprintf("argument \"language\" must be one of python, go; got %q", lang))
		}
	} else {
		lang = detectLanguage(filename, code)
		if lang == "" {
			return mcp.NewToolResultError("argument \"language\" is needed: could not detect python or go from filename or content")
		}
	}

	pctx, cancel := context.WithTimeout(ctx, opts.ParseTimeout)
	defer cancel()

	var (
		sink  findingSink
		notes []string
		err   error
	)
	switch lang {
	case "python":
		notes, err = analyzePython(pctx, python, code, filename, &sink)
	case "go":
		notes, err = analyzeGo(pctx, code, filename, &sink)
	}
	if err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("argument \"code\": %v", err))
	}
	notes = append(notes, scanSecrets(pctx, secrets, code, &sink)...)

	findings := sink.list
	if findings == nil {
		findings = []Finding{}
	}
	sort.SliceStable(findings, func(i, j int) bool {
		if findings[i].Line != findings[j].Line {
			return findings[i].Line < findings[j].Line
		}
		if findings[i].Column != findings[j].Column {
			return findings[i].Column < findings[j].Column
		}
		return findings[i].Rule < findings[j].Rule
	})
	if notes == nil {
		notes = []string{}
	}
	rep := StaticReport{Findings: findings, Total: len(findings), Language: lang, Notes: notes}
	b, err := json.Marshal(rep)
	if err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("static-analysis: encoding result: %v", err))
	}
	return mcp.NewToolResultText(string(b))
}

var (
	reGoPackage  = regexp.MustCompile(`(?m)^\s*package\s+[A-Za-z_]\w*\s*$`)
	reGoFunc     = regexp.MustCompile(`(?m)^\s*func\s*(\([^)]*\)\s*)?[A-Za-z_]\w*\s*\(`)
	reGoImport   = regexp.MustCompile(`(?m)^\s*import\s+(\(|"|\w+\s+")`)
	reGoShortVar = regexp.MustCompile(`\w\s*:=\s*`)
	rePyDef      = regexp.MustCompile(`(?m)^\s*(async\s+)?def\s+\w+\s*\(.*\)\s*(->\s*[^:]+)?:\s*(#.*)?$`)
	rePyImport   = regexp.MustCompile(`(?m)^\s*(import\s+[\w.]+(\s+as\s+\w+)?(\s*,\s*[\w.]+)*\s*$|from\s+[\w.]+\s+import\s+)`)
	rePyBlock    = regexp.MustCompile(`(?m)^\s*(class\s+\w+.*|if\s+.+|elif\s+.+|else|try|except.*|for\s+.+\s+in\s+.+|while\s+.+|with\s+.+)\s*:\s*(#.*)?$`)
	rePyMisc     = regexp.MustCompile(`(?m)(\bself\b|\bNone\b|\bTrue\b|\bFalse\b|^\s*print\(|^\s*#|^\s*@\w+)`)
)

// detectLanguage picks the language from the filename extension first and
// falls back to content heuristics; "" means undecided.
func detectLanguage(filename, code string) string {
	switch strings.ToLower(path.Ext(strings.ReplaceAll(filename, "\\", "/"))) {
	case ".py", ".pyw", ".pyi":
		return "python"
	case ".go":
		return "go"
	}
	goScore, pyScore := 0, 0
	if reGoPackage.MatchString(code) {
		goScore += 5
	}
	goScore += 2 * len(reGoFunc.FindAllStringIndex(code, 20))
	if reGoImport.MatchString(code) {
		goScore += 2
	}
	if reGoShortVar.MatchString(code) {
		goScore++
	}
	if strings.Contains(code, "{\n") || strings.Contains(code, "}\n") {
		goScore++
	}
	pyScore += 2 * len(rePyDef.FindAllStringIndex(code, 20))
	pyScore += 2 * len(rePyImport.FindAllStringIndex(code, 20))
	pyScore += len(rePyBlock.FindAllStringIndex(code, 20))
	if rePyMisc.MatchString(code) {
		pyScore++
	}
	switch {
	case goScore == 0 && pyScore == 0:
		return ""
	case goScore > pyScore:
		return "go"
	case pyScore > goScore:
		return "python"
	}
	return ""
}

// secretName matches identifiers that conventionally hold credentials.
var secretName = regexp.MustCompile(`(?i)(passw(or)?d|passwd|passphrase|\bpwd\b|_pwd\b|^pwd|secret|token|api_?key|apikey|access_?key|private_?key|auth_?key|client_?secret|credential)`)

// secretNameExcluded matches names that mention a secret but hold metadata
// about it (a URL, a file path, a header name), not the secret itself.
var secretNameExcluded = regexp.MustCompile(`(?i)(url|uri|endpoint|path|file|dir|name|field|env|var|header|type|len|length|size|prefix|label|key_?id|format|regex|pattern|expir|ttl|count|policy|param|placeholder|prompt|hint|_?key_?name)$`)

// looksLikeSecretName reports whether an identifier names a credential.
func looksLikeSecretName(name string) bool {
	return secretName.MatchString(name) && !secretNameExcluded.MatchString(name)
}

// looksLikeSecretValue rejects obvious non-secrets (empty, placeholders,
// references to environment variables) for the name-based secret rules.
func looksLikeSecretValue(v string) bool {
	t := strings.TrimSpace(v)
	if len(t) < 4 {
		return false
	}
	low := strings.ToLower(t)
	switch low {
	case "none", "null", "nil", "todo", "changeme", "xxx", "xxxx", "****", "<password>", "your_password", "your-password", "password", "secret", "token":
		return false
	}
	if strings.HasPrefix(t, "${") || strings.HasPrefix(t, "$(") || (strings.HasPrefix(t, "{{") && strings.HasSuffix(t, "}}")) || (strings.HasPrefix(t, "<") && strings.HasSuffix(t, ">")) {
		return false
	}
	if strings.Trim(t, "*xX.-_ ") == "" {
		return false
	}
	return true
}

var reTodo = regexp.MustCompile(`\b(TODO|FIXME)\b`)

package builtin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res == nil {
		t.Fatal("nil result")
	}
	if len(res.Content) != 1 {
		t.Fatalf("want 1 content, got %d", len(res.Content))
	}
	tc, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want TextContent", res.Content[0])
	}
	return tc.Text
}

func analyse(t *testing.T, h func(context.Context, map[string]any) *mcp.CallToolResult, args map[string]any) StaticReport {
	t.Helper()
	res := h(context.Background(), args)
	txt := resultText(t, res)
	if res.IsError {
		t.Fatalf("unexpected error result: %s", txt)
	}
	var rep StaticReport
	if err := json.Unmarshal([]byte(txt), &rep); err != nil {
		t.Fatalf("bad JSON %q: %v", txt, err)
	}
	return rep
}

func rulesOf(rep StaticReport) map[string]bool {
	m := map[string]bool{}
	for _, f := range rep.Findings {
		m[f.Rule] = true
	}
	return m
}

type ruleCase struct {
	rule     string
	lang     string
	filename string
	fire     string // code that must trigger rule
	quiet    string // code that must not trigger rule
}

var ruleCases = []ruleCase{
	// Python
	{rule: "PY001", lang: "python", fire: "x = eval(user_input)\n", quiet: "x = \"eval(1)\"\n# eval(user_input)\nliteral_eval(x)\n"},
	{rule: "PY001", lang: "python", fire: "exec(code)\n", quiet: "executor.exec_job(code)\n"},
	{rule: "PY002", lang: "python", fire: "try:\n    f()\nexcept:\n    log()\n", quiet: "try:\n    f()\nexcept ValueError:\n    log()\n"},
	{rule: "PY003", lang: "python", fire: "try:\n    f()\nexcept Exception:\n    pass\n", quiet: "try:\n    f()\nexcept KeyError:\n    pass\nexcept Exception as e:\n    log(e)\n"},
	{rule: "PY004", lang: "python", fire: "import pickle\nobj = pickle.loads(data)\n", quiet: "import json\nobj = json.loads(data)\ns = 'pickle.loads(data)'\n"},
	{rule: "PY004", lang: "python", fire: "from marshal import loads as l\nl(data)\n", quiet: "import pickle\npickle.dumps(obj)\n"},
	{rule: "PY005", lang: "python", fire: "import yaml\nd = yaml.load(open('c.yml'))\n", quiet: "import yaml\nd = yaml.load(f, Loader=yaml.SafeLoader)\ne = yaml.safe_load(f)\n"},
	{rule: "PY006", lang: "python", fire: "import subprocess\nsubprocess.run(cmd, shell=True)\n", quiet: "import subprocess\nsubprocess.run(['ls', '-l'], shell=False)\nsubprocess.run(['ls'])\n"},
	{rule: "PY007", lang: "python", fire: "import os\nos.system('rm -rf ' + path)\n", quiet: "import os\n# os.system('ls')\nos.path.join(a, b)\n"},
	{rule: "PY007", lang: "python", fire: "from os import popen\npopen(cmd)\n", quiet: "print('os.popen(cmd)')\n"},
	{rule: "PY008", lang: "python", fire: "import requests\nrequests.get(url, verify=False)\n", quiet: "import requests\nrequests.get(url, verify=True, timeout=5)\n"},
	{rule: "PY009", lang: "python", fire: "import hashlib\nh = hashlib.md5(data)\n", quiet: "import hashlib\nh = hashlib.sha256(data)\nk = hashlib.md5(data, usedforsecurity=False)\n"},
	{rule: "PY009", lang: "python", fire: "import hashlib\nh = hashlib.new('sha1')\n", quiet: "import hashlib\nh = hashlib.new('sha512')\n"},
	{rule: "PY010", lang: "python", fire: "import tempfile\np = tempfile.mktemp()\n", quiet: "import tempfile\nfd, p = tempfile.mkstemp()\n"},
	{rule: "PY011", lang: "python", fire: "cur.execute(\"SELECT * FROM u WHERE id = '%s'\" % uid)\n", quiet: "cur.execute(\"SELECT * FROM u WHERE id = %s\", (uid,))\n"},
	{rule: "PY011", lang: "python", fire: "q = f\"DELETE FROM t WHERE n = {name}\"\ncur.execute(q)\n", quiet: "q = \"DELETE FROM t WHERE n = ?\"\ncur.execute(q, (name,))\n"},
	{rule: "PY011", lang: "python", fire: "cur.execute(\"SELECT * FROM t WHERE a = \" + a)\n", quiet: "cur.execute(\"SELECT * FROM t \" \"WHERE a = 1\")\n"},
	{rule: "PY012", lang: "python", filename: "app/auth.py", fire: "def check(u):\n    assert u.is_admin\n", quiet: "def check(u):\n    if not u.is_admin:\n        raise PermissionError()\n"},
	{rule: "PY012", lang: "python", filename: "tests/test_auth.py", fire: "", quiet: "def test_x():\n    assert f() == 1\n"},
	{rule: "PY013", lang: "python", fire: "DB_PASSWORD = 'hunter2-prod'\n", quiet: "DB_PASSWORD = os.environ['DB_PASSWORD']\nPASSWORD_FIELD = 'password'\nmsg = \"password = 'hunter2-prod'\"\n"},
	{rule: "PY013", lang: "python", fire: "connect(user='a', password='s3cr3t!x')\n", quiet: "connect(user='a', password=get_pw())\n"},
	{rule: "PY014", lang: "python", fire: "app.run(host='0.0.0.0', port=80)\n", quiet: "app.run(host='127.0.0.1', port=80)\nlog('listening on 0.0.0.0')\n"},
	{rule: "PY014", lang: "python", fire: "s.bind(('0.0.0.0', 8080))\n", quiet: "s.bind(('localhost', 8080))\n"},
	{rule: "PY015", lang: "python", fire: "x = 1  # TODO: remove\n", quiet: "x = 'TODO: this is a string'\n"},
	{rule: "PY016", lang: "python", fire: "import ssl\nctx = ssl._create_unverified_context()\n", quiet: "import ssl\nctx = ssl.create_default_context()\n"},
	// Go
	{rule: "GO001", lang: "go", fire: "package p\nimport (\"database/sql\"; \"fmt\")\nfunc f(db *sql.DB, id string) {\n\tdb.Query(fmt.Sprintf(\"SELECT * FROM u WHERE id = '%s'\", id))\n}\n",
		quiet: "package p\nimport \"database/sql\"\nfunc f(db *sql.DB, id string) {\n\tdb.Query(\"SELECT * FROM u WHERE id = $1\", id)\n}\n"},
	{rule: "GO001", lang: "go", fire: "package p\nfunc f(db DB, name string) {\n\tq := \"DELETE FROM t WHERE n = '\" + name + \"'\"\n\tdb.ExecContext(ctx, q)\n}\n",
		quiet: "package p\nconst tbl = \"t\"\nfunc f(db DB) {\n\tq := \"DELETE FROM \" + tbl\n\tdb.ExecContext(ctx, q)\n}\n"},
	{rule: "GO002", lang: "go", fire: "package p\nimport \"os/exec\"\nfunc f(s string) { exec.Command(\"sh\", \"-c\", s).Run() }\n",
		quiet: "package p\nimport \"os/exec\"\nfunc f(s string) { exec.Command(\"git\", \"log\", s).Run() }\n"},
	{rule: "GO002", lang: "go", fire: "package p\nimport \"os/exec\"\nfunc f(bin string) { exec.Command(bin).Run() }\n",
		quiet: "package p\nimport \"os/exec\"\nconst tool = \"ls\"\nfunc f() { exec.Command(tool).Run() }\n"},
	{rule: "GO003", lang: "go", fire: "package p\nimport \"crypto/tls\"\nvar c = &tls.Config{InsecureSkipVerify: true}\n",
		quiet: "package p\nimport \"crypto/tls\"\nvar c = &tls.Config{InsecureSkipVerify: false, MinVersion: tls.VersionTLS12}\n// InsecureSkipVerify: true\n"},
	{rule: "GO004", lang: "go", fire: "package p\nimport \"crypto/md5\"\nvar _ = md5.New\n", quiet: "package p\nimport \"crypto/sha256\"\nvar _ = sha256.New\nvar s = \"crypto/md5\"\n"},
	{rule: "GO005", lang: "go", fire: "package p\nimport \"crypto/sha1\"\nfunc h(b []byte) [20]byte { return sha1.Sum(b) }\n", quiet: "package p\nimport \"crypto/sha256\"\nfunc h(b []byte) [32]byte { return sha256.Sum256(b) }\n"},
	{rule: "GO006", lang: "go", fire: "package p\nimport \"math/rand\"\nfunc newToken() int64 { return rand.Int63() }\n",
		quiet: "package p\nimport \"math/rand\"\nfunc jitter() int { return rand.Intn(100) }\n"},
	{rule: "GO006", lang: "go", fire: "package p\nimport \"math/rand\"\nfunc f(b []byte) { rand.Read(b) }\n",
		quiet: "package p\nimport \"crypto/rand\"\nfunc f(b []byte) error { _, err := rand.Read(b); return err }\n"},
	{rule: "GO007", lang: "go", fire: "package p\nimport \"os\"\nfunc f() { os.Chmod(\"x\", 0o600) }\n",
		quiet: "package p\nimport \"os\"\nfunc f() error { return os.Chmod(\"x\", 0o600) }\n"},
	{rule: "GO007", lang: "go", fire: "package p\nimport \"os\"\nfunc f(b []byte) { _ = os.WriteFile(\"x\", b, 0o600) }\n",
		quiet: "package p\nimport \"os\"\nfunc f(b []byte) error { if err := os.WriteFile(\"x\", b, 0o600); err != nil { return err }; return nil }\n"},
	{rule: "GO008", lang: "go", fire: "package p\nimport \"os\"\nfunc f(b []byte) error { return os.WriteFile(\"x\", b, 0644) }\n",
		quiet: "package p\nimport \"os\"\nfunc f(b []byte) error { return os.WriteFile(\"x\", b, 0600) }\n"},
	{rule: "GO008", lang: "go", fire: "package p\nimport \"os\"\nfunc f() error { return os.MkdirAll(\"d\", 0777) }\n",
		quiet: "package p\nimport \"os\"\nconst dirPerm = 0o750\nfunc f() error { return os.MkdirAll(\"d\", dirPerm) }\n"},
	{rule: "GO009", lang: "go", fire: "package p\nimport (\"net/http\"; \"os\"; \"path/filepath\")\nfunc h(w http.ResponseWriter, r *http.Request) {\n\tname := r.URL.Query().Get(\"f\")\n\tb, _ := os.ReadFile(filepath.Join(\"/srv\", name))\n\tw.Write(b)\n}\n",
		quiet: "package p\nimport (\"net/http\"; \"os\"; \"path/filepath\"; \"strings\")\nfunc h(w http.ResponseWriter, r *http.Request) {\n\tp := filepath.Clean(filepath.Join(\"/srv\", r.FormValue(\"f\")))\n\tif !strings.HasPrefix(p, \"/srv/\") { return }\n\tb, _ := os.ReadFile(p)\n\tw.Write(b)\n}\n"},
	{rule: "GO010", lang: "go", fire: "package p\nimport \"unsafe\"\nvar n = unsafe.Sizeof(0)\n", quiet: "package p\n// import \"unsafe\"\nvar n = len(\"unsafe\")\n"},
	{rule: "GO011", lang: "go", fire: "package lib\nimport \"os\"\nfunc f() { os.Exit(1) }\n", quiet: "package main\nimport \"os\"\nfunc main() { os.Exit(1) }\n"},
	{rule: "GO012", lang: "go", fire: "package p\nconst dbPassword = \"hunter2-prod\"\n", quiet: "package p\nimport \"os\"\nvar dbPassword = os.Getenv(\"DB_PASSWORD\")\nconst passwordHeader = \"X-Password\"\nvar msg = \"password = hunter2\"\n"},
	{rule: "GO012", lang: "go", fire: "package p\nvar c = Config{APIKey: \"sk_live_abcdef123\"}\n", quiet: "package p\nvar c = Config{APIKey: key}\n"},
	{rule: "GO013", lang: "go", fire: "package p\nimport \"net/http\"\nfunc f() { http.ListenAndServe(\":8080\", nil) }\n",
		quiet: "package p\nimport (\"net/http\"; \"time\")\nvar s = &http.Server{Addr: \":8080\", ReadHeaderTimeout: 5 * time.Second}\n"},
	{rule: "GO014", lang: "go", fire: "package p\nimport \"crypto/tls\"\nvar c = &tls.Config{MinVersion: tls.VersionTLS10}\n", quiet: "package p\nimport \"crypto/tls\"\nvar c = &tls.Config{MinVersion: tls.VersionTLS13}\n"},
	{rule: "GO015", lang: "go", fire: "package p\nimport \"net\"\nfunc f() { net.Listen(\"tcp\", \"0.0.0.0:9000\") }\n", quiet: "package p\nimport \"net\"\nfunc f() { net.Listen(\"tcp\", \"127.0.0.1:9000\") }\n"},
	{rule: "GO016", lang: "go", fire: "package p\nimport \"html/template\"\nfunc f(s string) template.HTML { return template.HTML(s) }\n", quiet: "package p\nimport \"html/template\"\nfunc f() template.HTML { return template.HTML(\"<b>hi</b>\") }\n"},
	// gitleaks (both languages)
	{rule: "SEC001", lang: "python", fire: "AWS = 'AKIAZ3MSJV5WKQ7TYRXB'\n", quiet: "AWS = os.environ['AWS_ACCESS_KEY_ID']\n"},
	{rule: "SEC001", lang: "go", fire: "package p\n// token: ghp_Yq4mX2Vb9Lk8Rt7Wn3Zp6Hs1Dj5Fc0Ga2Ee4\nvar x = 1\n", quiet: "package p\nvar token = os.Getenv(\"GITHUB_TOKEN\")\n"},
}

func TestStaticRules(t *testing.T) {
	_, h := StaticAnalysis(StaticOptions{})
	for _, tc := range ruleCases {
		t.Run(tc.rule+"/fire", func(t *testing.T) {
			if tc.fire == "" {
				t.Skip("no firing case for this variant")
			}
			rep := analyse(t, h, map[string]any{"code": tc.fire, "language": tc.lang, "filename": tc.filename})
			if !rulesOf(rep)[tc.rule] {
				t.Errorf("%s did not fire on:\n%s\nreport: %+v", tc.rule, tc.fire, rep)
			}
		})
		t.Run(tc.rule+"/quiet", func(t *testing.T) {
			rep := analyse(t, h, map[string]any{"code": tc.quiet, "language": tc.lang, "filename": tc.filename})
			if rulesOf(rep)[tc.rule] {
				t.Errorf("%s fired on:\n%s\nreport: %+v", tc.rule, tc.quiet, rep)
			}
		})
	}
}

func TestStaticRuleCoverage(t *testing.T) {
	rules := map[string]bool{}
	for _, tc := range ruleCases {
		if tc.fire != "" {
			rules[tc.rule] = true
		}
	}
	if len(rules) < 25 {
		t.Fatalf("only %d rules have firing cases, want >= 25", len(rules))
	}
}

// Strings and comments must never trigger code rules.
func TestStaticStringsAndCommentsAreInert(t *testing.T) {
	_, h := StaticAnalysis(StaticOptions{})
	py := "x = \"eval(1)\"\n# os.system('rm -rf /')\ny = '''\nimport pickle\npickle.loads(d)\nsubprocess.run(c, shell=True)\n'''\nz = 'requests.get(u, verify=False)'\n"
	rep := analyse(t, h, map[string]any{"code": py, "language": "python"})
	if rep.Total != 0 {
		t.Errorf("python strings/comments produced findings: %+v", rep.Findings)
	}
	goSrc := "package main\n// exec.Command(\"sh\", \"-c\", x)\nvar s = `import \"unsafe\"; os.Exit(1); InsecureSkipVerify: true`\n/* db.Query(fmt.Sprintf(\"%s\", x)) */\nfunc main() {}\n"
	rep = analyse(t, h, map[string]any{"code": goSrc, "language": "go"})
	if rep.Total != 0 {
		t.Errorf("go strings/comments produced findings: %+v", rep.Findings)
	}
}

func TestStaticResultShape(t *testing.T) {
	tool, h := StaticAnalysis(StaticOptions{})
	if tool.Name != "static-analysis" || tool.Description == "" {
		t.Fatalf("bad tool: %+v", tool)
	}
	if tool.Annotations.ReadOnlyHint == nil || !*tool.Annotations.ReadOnlyHint {
		t.Error("readOnlyHint must be true")
	}
	if len(tool.InputSchema.Required) != 1 || tool.InputSchema.Required[0] != "code" {
		t.Errorf("required = %v, want [code]", tool.InputSchema.Required)
	}
	for _, p := range []string{"code", "language", "filename"} {
		if _, ok := tool.InputSchema.Properties[p]; !ok {
			t.Errorf("schema lacks %q", p)
		}
	}
	code := "import os\n\nos.system(x)  # TODO\neval(y)\n"
	rep := analyse(t, h, map[string]any{"code": code})
	if rep.Language != "python" || rep.Total != len(rep.Findings) || rep.Total != 3 {
		t.Fatalf("report: %+v", rep)
	}
	want := []struct {
		rule      string
		line, col int
	}{{"PY007", 3, 1}, {"PY015", 3, 15}, {"PY001", 4, 1}}
	for i, w := range want {
		f := rep.Findings[i]
		if f.Rule != w.rule || f.Line != w.line || f.Column != w.col || f.CWE == "" || f.Severity == "" || f.Issue == "" {
			t.Errorf("finding %d = %+v, want %s at %d:%d", i, f, w.rule, w.line, w.col)
		}
	}
	// notes must be an array, findings too, even when empty.
	txt := resultText(t, h(context.Background(), map[string]any{"code": "x = 1\n", "language": "python"}))
	if !strings.Contains(txt, `"findings":[]`) || !strings.Contains(txt, `"notes":[]`) {
		t.Errorf("empty report shape: %s", txt)
	}
}

func TestStaticBadInput(t *testing.T) {
	_, h := StaticAnalysis(StaticOptions{MaxInputBytes: 64})
	cases := []struct {
		args map[string]any
		want string
	}{
		{nil, "code"},
		{map[string]any{}, "code"},
		{map[string]any{"code": 42}, "code"},
		{map[string]any{"code": strings.Repeat("x = 1\n", 20), "language": "python"}, "code"},
		{map[string]any{"code": "x", "language": "rust"}, "language"},
		{map[string]any{"code": "x", "language": 3}, "language"},
		{map[string]any{"code": "x", "filename": []int{1}}, "filename"},
		{map[string]any{"code": "???"}, "language"},
		{map[string]any{"code": "\xff\xfe", "language": "go"}, "code"},
	}
	for _, c := range cases {
		res := h(context.Background(), c.args)
		if res == nil || !res.IsError {
			t.Errorf("%v: want error result, got %+v", c.args, res)
			continue
		}
		if txt := resultText(t, res); !strings.Contains(txt, c.want) {
			t.Errorf("%v: error %q does not name %q", c.args, txt, c.want)
		}
	}
}

func TestStaticDetection(t *testing.T) {
	cases := []struct{ filename, code, want string }{
		{"a.py", "", "python"},
		{"dir/x.go", "", "go"},
		{"", "package main\n\nfunc main() {\n}\n", "go"},
		{"", "import os\n\ndef f(x):\n    return x\n", "python"},
		{"", "def handler(event, context):\n    if event:\n        return None\n", "python"},
		{"", "func f(a int) int {\n\treturn a\n}\n", "go"},
		{"notes.txt", "hello world", ""},
	}
	for _, c := range cases {
		if got := detectLanguage(c.filename, c.code); got != c.want {
			t.Errorf("detect(%q, %q) = %q, want %q", c.filename, c.code, got, c.want)
		}
	}
}

// Syntax errors still yield the findings that can be found, plus a note.
func TestStaticSyntaxErrors(t *testing.T) {
	_, h := StaticAnalysis(StaticOptions{})
	rep := analyse(t, h, map[string]any{"code": "import os\nos.system(cmd)\ndef broken(:\n    pass\neval(x)\n", "language": "python"})
	if !rulesOf(rep)["PY007"] || len(rep.Notes) == 0 {
		t.Errorf("python syntax error: %+v", rep)
	}
	rep = analyse(t, h, map[string]any{"code": "package p\nimport \"unsafe\"\nfunc f( {\n}\n", "language": "go"})
	if !rulesOf(rep)["GO010"] || len(rep.Notes) == 0 {
		t.Errorf("go syntax error: %+v", rep)
	}
	// A Go fragment without package clause is analysed as such.
	rep = analyse(t, h, map[string]any{"code": "cmd := exec.Command(\"bash\", \"-c\", userInput)\ncmd.Run()\n", "language": "go"})
	if !rulesOf(rep)["GO002"] && len(rep.Notes) == 0 {
		t.Errorf("go fragment: %+v", rep)
	}
	if len(rep.Findings) > 0 && rep.Findings[0].Line != 1 {
		t.Errorf("fragment line numbers must refer to the input: %+v", rep.Findings)
	}
}

func TestStaticParseTimeout(t *testing.T) {
	_, h := StaticAnalysis(StaticOptions{ParseTimeout: time.Nanosecond})
	for _, lang := range []string{"python", "go"} {
		code := strings.Repeat("x = [1, 2, (3 + 4) * 5]\n", 20000)
		if lang == "go" {
			code = "package p\n" + strings.Repeat("var x = []int{1, 2, (3 + 4) * 5}\n", 10000)
		}
		res := h(context.Background(), map[string]any{"code": code, "language": lang})
		txt := resultText(t, res)
		if !res.IsError || !strings.Contains(txt, "code") || !strings.Contains(txt, "timed out") {
			t.Errorf("%s: want timeout error naming code, got %v %s", lang, res.IsError, txt[:min(len(txt), 200)])
		}
	}
}

func TestStaticConcurrent(t *testing.T) {
	_, h := StaticAnalysis(StaticOptions{})
	done := make(chan bool)
	for i := range 8 {
		go func() {
			code, lang := "import os\nos.system(x)\n", "python"
			if i%2 == 1 {
				code, lang = "package p\nimport \"unsafe\"\n", "go"
			}
			res := h(context.Background(), map[string]any{"code": code, "language": lang})
			done <- res != nil && !res.IsError
		}()
	}
	for range 8 {
		if !<-done {
			t.Error("concurrent call failed")
		}
	}
}

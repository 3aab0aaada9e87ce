package console

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/clientconfig"
)

func get(t *testing.T, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

// The page loads nothing from elsewhere, and everything it names is embedded.
func TestPageRefersOnlyToEmbeddedAssets(t *testing.T) {
	res, page := get(t, "/")
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Security-Policy") != CSP {
		t.Fatalf("GET /: %d, CSP %q", res.StatusCode, res.Header.Get("Content-Security-Policy"))
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(page, -1)
	if len(refs) < 2 {
		t.Fatalf("the page names %d assets, want its script and style at least", len(refs))
	}
	for _, m := range refs {
		ref := m[1]
		switch {
		case strings.HasPrefix(ref, "/console/"):
			if res, _ := get(t, ref); res.StatusCode != http.StatusOK || res.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("%s: %d, X-Content-Type-Options %q", ref, res.StatusCode, res.Header.Get("X-Content-Type-Options"))
			}
		case strings.HasPrefix(ref, "/api/"), ref == "/metrics", strings.HasPrefix(ref, "data:"):
		case strings.HasPrefix(ref, "#"): // a place on the page itself
			if !strings.Contains(page, `id="`+ref[1:]+`"`) {
				t.Errorf("the page links to %s, which it does not hold", ref)
			}
		default:
			t.Errorf("the page refers to %q, outside the hub", ref)
		}
	}
}

// scripts are the page's scripts: console.js and the Activity card's
// charts.js.
func scripts() []string { return []string{"console.js", "charts.js"} }

// The script builds the page from text nodes only: what the hub lists
// (tool descriptions, errors, diffs: an upstream's text) is never HTML.
func TestScriptNeverParsesHTML(t *testing.T) {
	for _, name := range scripts() {
		_, js := get(t, "/console/"+name)
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
			if strings.Contains(js, bad) {
				t.Errorf("%s uses %s", name, bad)
			}
		}
		if !strings.Contains(js, "sessionStorage") || strings.Contains(js, "localStorage") || strings.Contains(js, "document.cookie") {
			t.Errorf("%s must keep the token in sessionStorage only", name)
		}
	}
}

// The Connect panel's snippets are clientconfig's, for the URL the page
// asks about, with a placeholder for a token; bad questions are refused.
func TestConnectSnippets(t *testing.T) {
	for _, tc := range []struct {
		query, want, wantPath string
		status                int
	}{
		{"url=http://127.0.0.1:8080/mcp&auth=token&os=linux", `"Authorization": "Bearer <token>"`, "~/.cursor/mcp.json", 200},
		{"url=https://hub.example.com/mcp&auth=oauth&os=darwin", `"url": "https://hub.example.com/mcp"`, "~/Library/Application Support/Code/User/mcp.json", 200},
		{"url=http://h:1/mcp&os=windows", `"serverUrl": "http://h:1/mcp"`, `%APPDATA%\Zed\settings.json`, 200},
		{"url=ftp://h/mcp", "want http:// or https://", "", 400},
		{"url=http://h/mcp&auth=basic", "auth: want", "", 400},
		{"url=http://h/mcp&os=plan9", "os: want", "", 400},
	} {
		res, body := get(t, "/console/connect.json?"+tc.query)
		if res.StatusCode != tc.status || !strings.Contains(body, strings.ReplaceAll(tc.want, `"`, `\"`)) {
			t.Errorf("%s: %d, want %d and %s in\n%s", tc.query, res.StatusCode, tc.status, tc.want, body)
		}
		if tc.wantPath != "" && !strings.Contains(body, strings.ReplaceAll(tc.wantPath, `\`, `\\`)) {
			t.Errorf("%s: no path %s in\n%s", tc.query, tc.wantPath, body)
		}
		if res.Header.Get("Content-Security-Policy") != CSP {
			t.Errorf("%s: no CSP", tc.query)
		}
	}
	_, body := get(t, "/console/connect.json?url=http://127.0.0.1:8080/mcp&auth=token")
	var got struct {
		Clients []struct{ ID, Snippet, Command string }
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Clients) != len(clientconfig.Clients()) {
		t.Fatalf("%d clients, want %d", len(got.Clients), len(clientconfig.Clients()))
	}
	for _, c := range got.Clients {
		ch, _ := clientconfig.Plan(c.ID, clientconfig.Hub{URL: "http://127.0.0.1:8080/mcp", Token: TokenPlaceholder}, clientconfig.Env{Home: "~", GOOS: "linux"})
		if c.Snippet != ch.Snippet {
			t.Errorf("%s: the console's snippet differs from the CLI's:\n%s\n%s", c.ID, c.Snippet, ch.Snippet)
		}
		if c.Command != "mcp-hub connect "+c.ID+" --hub http://127.0.0.1:8080" {
			t.Errorf("%s: command %q", c.ID, c.Command)
		}
	}
}

// Under the CSP (script-src 'self', style-src 'self') inline code would
// not run: the page holds none, neither scripts nor styles nor handlers.
func TestPageHoldsNoInlineCode(t *testing.T) {
	_, page := get(t, "/")
	for _, m := range regexp.MustCompile(`(?is)<script([^>]*)>(.*?)</script>`).FindAllStringSubmatch(page, -1) {
		if !strings.Contains(m[1], ` src="/console/`) || strings.TrimSpace(m[2]) != "" {
			t.Errorf("index.html holds a script that is not an embedded file: %q", m[0])
		}
	}
	for _, re := range []string{
		`(?i)<style`,
		`(?i)\sstyle\s*=`,
		`(?i)\son[a-z]+\s*=`,
		`(?i)javascript:`,
	} {
		if m := regexp.MustCompile(re).FindString(page); m != "" {
			t.Errorf("index.html holds inline code (%s): %q", re, m)
		}
	}
	for _, name := range scripts() {
		_, js := get(t, "/console/"+name)
		for _, bad := range []string{`setAttribute("on`, "setAttribute('on", ".style.", `"style"`, "cssText"} {
			if strings.Contains(js, bad) {
				t.Errorf("%s sets inline handlers or styles (%s)", name, bad)
			}
		}
	}
}

// Every element the script looks up by id is on the page.
func TestScriptFindsItsElements(t *testing.T) {
	_, page := get(t, "/")
	_, js := get(t, "/console/console.js")
	ids := regexp.MustCompile(`\$\("#([A-Za-z0-9_-]+)`).FindAllStringSubmatch(js, -1)
	if len(ids) < 20 {
		t.Fatalf("found %d lookups by id in console.js", len(ids))
	}
	for _, m := range ids {
		if !strings.Contains(page, `id="`+m[1]+`"`) {
			t.Errorf("console.js looks up #%s, which index.html does not hold", m[1])
		}
	}
}

// The Approvals panel: its count in the top bar and the panel's heading,
// the list read from /api/mcp/approvals again on the stream's approvals
// event, decisions that name the digest of the arguments shown, and the
// webhook's link (/console/#approval=ID) leading to the call's box.
func TestApprovalsPanel(t *testing.T) {
	_, page := get(t, "/")
	for _, want := range []string{`id="approvals-card"`, `id="approvals-count"`, `href="#approvals-card"`, `id="approvals-empty"`} {
		if !strings.Contains(page, want) {
			t.Errorf("index.html holds no %s", want)
		}
	}
	if strings.Index(page, `id="approvals-card"`) > strings.Index(page, `id="servers-h"`) {
		t.Error("the Approvals panel comes after the servers: held calls wait for a person, they go first")
	}
	_, js := get(t, "/console/console.js")
	for _, want := range []string{`api("/api/mcp/approvals")`, `"/api/mcp/approvals/" + encodeURIComponent(`,
		`argumentsSha256: b.p.argumentsSha256`, `name === "approvals"`, `#approval=`, `"hashchange"`, `visibilityState`} {
		if !strings.Contains(js, want) {
			t.Errorf("console.js holds no %s", want)
		}
	}
	// The console's /console/ answers the webhook's link with the page.
	res, body := get(t, "/console/")
	if res.StatusCode != http.StatusOK || !strings.Contains(body, `id="approvals-card"`) || res.Header.Get("Content-Security-Policy") != CSP {
		t.Errorf("GET /console/: %d, CSP %q", res.StatusCode, res.Header.Get("Content-Security-Policy"))
	}
}

// The My connections panel: hidden until /api/mcp/connections answers (a
// hub that keeps no user grants answers 404 and it stays hidden), a
// Revoke button per row that DELETEs the connection, shows the hub's
// note and reads the list again.
func TestConnectionsPanel(t *testing.T) {
	_, page := get(t, "/")
	for _, want := range []string{`id="connections-card" hidden`, `id="connections-h">My connections<`, `id="connections-msg"`, `id="connections-empty"`} {
		if !strings.Contains(page, want) {
			t.Errorf("index.html holds no %s", want)
		}
	}
	_, js := get(t, "/console/console.js")
	for _, want := range []string{`api("/api/mcp/connections")`, `if (res.status === 404) { $("#connections-card").hidden = true; return; }`,
		`"/api/mcp/connections/" + encodeURIComponent(server), { method: "DELETE" }`, `d.revokedAtServer`, `d.note`, `loadConnections();`} {
		if !strings.Contains(js, want) {
			t.Errorf("console.js holds no %s", want)
		}
	}
}

// The tool bench (the Tools card): its search and filters on the page,
// its stylesheet served, runs sent with the tab's token (api) to the REST
// face, Remove offered only for servers registered through the API, and
// the hub's 401 said as "token needed" rather than "reconnecting…".
func TestToolBench(t *testing.T) {
	_, page := get(t, "/")
	for _, want := range []string{`id="tools-card"`, `id="tool-search" type="search"`, `aria-keyshortcuts="/"`, `id="tool-server"`,
		`<option value="destructive">`, `id="tools-fold"`, `id="tools-shown" class="muted" role="status"`, `id="token-state"`} {
		if !strings.Contains(page, want) {
			t.Errorf("index.html holds no %s", want)
		}
	}
	main, bench := strings.Index(page, `href="/console/console.css"`), strings.Index(page, `href="/console/toolbench.css"`)
	if main < 0 || bench < main {
		t.Error("index.html must link toolbench.css after console.css, whose variables it uses")
	}
	res, css := get(t, "/console/toolbench.css")
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/css") || !strings.Contains(css, ".tb-collapsed") {
		t.Errorf("GET /console/toolbench.css: %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	_, js := get(t, "/console/console.js")
	for _, want := range []string{`api("/api/mcp/tools/" + encodeURIComponent(r.name) + "/run"`, `hdr["X-Autonomy-Level"]`,
		`x.registered`, `!removable.has(s.name) ? null`, `if (res.status === 401) needToken();`, `"token needed"`,
		`new AbortController()`, `JSON.parse(text, keepNumbers)`, `r.tr.hidden = !ok;`} {
		if !strings.Contains(js, want) {
			t.Errorf("console.js holds no %s", want)
		}
	}
}

// The Activity card: hidden until GET /api/mcp/stats answers (a caller
// that is not an admin gets 403 and never sees it), its window switch,
// charts drawn as SVG elements (no markup parsed), read again while the
// page is shown, and every element charts.js looks up on the page.
func TestActivityCard(t *testing.T) {
	_, page := get(t, "/")
	for _, want := range []string{`<script src="/console/charts.js" defer></script>`, `id="activity-card" hidden`, `id="activity-h">Activity<`,
		`id="activity-window"`, `<option value="24h">`, `id="activity-charts"`, `id="activity-legend"`} {
		if !strings.Contains(page, want) {
			t.Errorf("index.html holds no %s", want)
		}
	}
	_, js := get(t, "/console/charts.js")
	for _, want := range []string{`"/api/mcp/stats?window=" + encodeURIComponent(win)`, `if (res.status === 403 || res.status === 404) { $("#activity-card").hidden = true; return; }`,
		`createElementNS(SVG_NS`, `"data-chart": c.key`, `class: "series"`, `visibilityState`, `credentials: "omit"`} {
		if !strings.Contains(js, want) {
			t.Errorf("charts.js holds no %s", want)
		}
	}
	ids := regexp.MustCompile(`\$\("#([A-Za-z0-9_-]+)`).FindAllStringSubmatch(js, -1)
	if len(ids) < 5 {
		t.Fatalf("found %d lookups by id in charts.js", len(ids))
	}
	for _, m := range ids {
		if !strings.Contains(page, `id="`+m[1]+`"`) {
			t.Errorf("charts.js looks up #%s, which index.html does not hold", m[1])
		}
	}
}

package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// benchTools is how many plain tools the bulk upstream of TestToolBench
// serves: a catalog of several hundred tools, as the bench must handle.
const benchTools = 300

// benchToken is the token of TestToolBench's caller, a restricted one:
// read-only tools run, write tools are refused.
const benchToken = "console-toolbench-7c41"

// bulkUpstream serves benchTools read-only tools (by their read verbs: the
// hub does not take an untrusted server's readOnlyHint), one of them with a
// long description, and bulk_preview, whose arguments are of every kind a form
// has a field for and whose result is its arguments as structured content.
func bulkUpstream(t *testing.T) string {
	t.Helper()
	s := server.NewMCPServer("bulk", "1", server.WithToolCapabilities(true))
	echo := func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ran " + r.Params.Name), nil
	}
	for i := range benchTools {
		desc := fmt.Sprintf("Bulk tool number %d of the bench.", i)
		if i == 7 {
			desc = "A tool whose description goes on: " + strings.Repeat("it says more than a row should show at once, ", 6) + "and ends here with its last word."
		}
		s.AddTool(mcp.NewTool(fmt.Sprintf("bulk_show_%03d", i), mcp.WithDescription(desc), mcp.WithReadOnlyHintAnnotation(true)), echo)
	}
	s.AddTool(mcp.NewTool("bulk_preview", mcp.WithDescription("echo the arguments as structured content"), mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithString("mode", mcp.Required(), mcp.Enum("fast", "slow"), mcp.Description("how to run")),
		mcp.WithInteger("count", mcp.DefaultNumber(3), mcp.Description("how many times")),
		mcp.WithBoolean("dry", mcp.Description("only say what would happen")),
		mcp.WithArray("tags", mcp.WithStringItems(), mcp.Description("labels"))),
		func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultStructured(r.GetArguments(), "ran bulk_preview"), nil
		})
	mux := http.NewServeMux()
	mux.Handle("/mcp", server.NewStreamableHTTPServer(s))
	up := httptest.NewServer(mux)
	t.Cleanup(up.Close) // after the hub's stop, registered later
	return up.URL + "/mcp"
}

// visibleRows is the JavaScript count of the tool rows shown (not hidden
// by the search or the filters, not in a folded group).
const visibleRows = `[...document.querySelectorAll('#tools tr[data-tool]')].filter(r => r.offsetParent !== null).length`

// TestToolBench: the Tools card as a bench, in chromium, against a hub
// with three upstreams (alpha and beta from the config file, bulk with
// several hundred tools) and a restricted caller. Without a token the page
// says the hub needs one; with it, the search and filters narrow the
// list, the tools are grouped by server, Try it builds a form from a
// tool's input schema and runs the call as the caller (answered by the
// upstream, or refused by the caller's autonomy, both audited in the
// recent calls), and no config-file server has a Remove button.
func TestToolBench(t *testing.T) {
	_, alphaURL := startUpstream(t, "alpha")
	_, betaURL := startUpstream(t, "beta")
	cfg := filepath.Join(t.TempDir(), "hub.yaml")
	writeConfig(t, cfg, map[string]string{"alpha": alphaURL, "beta": betaURL, "bulk": bulkUpstream(t)}, "alpha", "beta", "bulk")
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("auth:\n  tokens:\n  - name: bench\n    token: {env: MCPHUB_CONSOLE_BENCH}\n    maxLevel: restricted\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	hub := hubtest.StartHub(t, hubtest.HubOptions{ConfigFile: cfg, Env: []string{"MCPHUB_CONSOLE_BENCH=" + benchToken}, Wait: hubtest.Connected})
	ctx := browser(t)

	// 1. No token: the page says so, with the form open and focused,
	// rather than "reconnecting…"; a token the hub refuses says that.
	if err := within(ctx, 30*time.Second, chromedp.Navigate(hub.Base+"/")); err != nil {
		t.Fatalf("open the console: %v", err)
	}
	waitPage(t, ctx, "the token needed state",
		`(() => { const p = document.querySelector('#live'), s = document.querySelector('#token-state');
		  return p.innerText === 'token needed' && p.classList.contains('pill-warn') && !document.querySelector('#token-bar').hidden
		    && !s.hidden && s.innerText === 'This hub needs a token.' && document.activeElement.id === 'token-input'; })()`)
	if err := within(ctx, 30*time.Second, chromedp.Evaluate[chromedp.Void](`sessionStorage.setItem('mcp-hub-token', 'not-the-token')`),
		chromedp.Navigate(hub.Base+"/")); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "the refused token state",
		`document.querySelector('#live').innerText === 'token needed' && document.querySelector('#token-state').innerText.includes('refused the token')`)
	openConsole(t, ctx, hub.Base, benchToken, "/")
	if shown, err := evaluate[bool](ctx, `!document.querySelector('#token-state').hidden`); err != nil || shown {
		t.Fatalf("the token needed line is shown with a good token (%v)", err)
	}

	// 2. Grouped by server, every tool listed; no Remove on servers of the
	// config file.
	total := benchTools + 1 + 4
	waitPage(t, ctx, "the groups of alpha, beta and bulk with their counts",
		`(() => { const g = (n) => document.querySelector('#tools tbody[data-group="' + n + '"] .tb-count');
		  return !!g('alpha') && g('alpha').innerText === '2 tools' && !!g('beta') && g('beta').innerText === '2 tools'
		    && !!g('bulk') && g('bulk').innerText === '`+fmt.Sprint(benchTools+1)+` tools'; })()`)
	allShown, err := evaluate[int](ctx, visibleRows)
	if err != nil || allShown < total {
		t.Fatalf("%d tool rows shown (%v), want every tool, at least %d", allShown, err, total)
	}
	waitPage(t, ctx, "the servers of the config file", serverRow("alpha", "connected", 2)+" && "+serverRow("bulk", "connected", benchTools+1))
	for _, name := range []string{"alpha", "beta", "bulk"} {
		if n, err := evaluate[int](ctx, `document.querySelectorAll('#servers tr[data-server="`+name+`"] button').length`); err != nil || n != 0 {
			t.Errorf("server %s of the config file has %d buttons (%v), want no Remove", name, n, err)
		}
	}

	// 3. Search from the keyboard: "/" goes to the search box, each word
	// narrows (name, description, server), Escape empties it.
	if err := within(ctx, 10*time.Second, chromedp.KeyEvent("/")); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "the search box focused by /", `document.activeElement.id === 'tool-search'`)
	search := func(text string, want int, what string) {
		t.Helper()
		if err := within(ctx, 10*time.Second, chromedp.Evaluate[chromedp.Void](`document.querySelector('#tool-search').value = ''`),
			chromedp.SendKeys(chromedp.CSS("#tool-search"), text)); err != nil {
			t.Fatalf("type %q: %v", text, err)
		}
		waitPage(t, ctx, fmt.Sprintf("%d rows for %q (%s)", want, text, what), fmt.Sprintf(`%s === %d`, visibleRows, want))
	}
	search("lookup", 2, "by name")
	search("change something", 2, "by description, every word")
	search("beta", 2, "by server")
	search("bulk_show_04", 10, "among several hundred")
	waitPage(t, ctx, "the count of matches", `document.querySelector('#tools-shown').innerText.startsWith('10 of ')
		&& document.querySelector('#tools tbody[data-group="bulk"] .tb-count').innerText === '10 of `+fmt.Sprint(benchTools+1)+`'
		&& document.querySelector('#tools tbody[data-group="alpha"]').hidden`)
	search("no such tool anywhere", 0, "nothing")
	waitPage(t, ctx, "the empty result said", `!document.querySelector('#tools-empty').hidden && document.querySelector('#tools-empty').innerText === 'No tool matches.'`)
	if err := within(ctx, 10*time.Second, chromedp.KeyEvent(kb.Escape)); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "every tool again after Escape", fmt.Sprintf(`%s === %d && document.querySelector('#tool-search').value === ''`, visibleRows, allShown))
	ms, err := evaluate[float64](ctx, `(() => { const s = document.querySelector('#tool-search'), t0 = performance.now();
		for (const q of ['b', 'bu', 'bul', 'bulk', 'bulk_', 'bulk_s', '']) { s.value = q; s.dispatchEvent(new Event('input')); }
		return performance.now() - t0; })()`)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("7 searches over %d tools: %.1f ms", allShown, ms)

	// Filters: the server and the access, and a folded group.
	pick := func(sel, value string) {
		t.Helper()
		if _, err := evaluate[bool](ctx, `(() => { const s = document.querySelector('`+sel+`'); s.value = '`+value+`';
			s.dispatchEvent(new Event('change')); return s.value === '`+value+`'; })()`); err != nil {
			t.Fatal(err)
		}
	}
	pick("#tool-access", "destructive")
	waitPage(t, ctx, "the destructive tools alpha_update and beta_update",
		visibleRows+` === 2 && !!document.querySelector('#tools tr[data-tool="alpha_update"]').offsetParent`)
	pick("#tool-server", "alpha")
	waitPage(t, ctx, "alpha's destructive tool", visibleRows+` === 1`)
	pick("#tool-access", "")
	waitPage(t, ctx, "alpha's tools", visibleRows+` === 2`)
	pick("#tool-server", "")
	fold := `document.querySelector('#tools tbody[data-group="bulk"] .tb-toggle').click()`
	if _, err := evaluate[bool](ctx, `(() => { `+fold+`; return true; })()`); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "bulk folded", fmt.Sprintf(`%s === %d && document.querySelector('#tools tbody[data-group="bulk"] .tb-toggle').getAttribute('aria-expanded') === 'false'`,
		visibleRows, allShown-benchTools-1))
	if _, err := evaluate[bool](ctx, `(() => { `+fold+`; return true; })()`); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "bulk unfolded", fmt.Sprintf(`%s === %d`, visibleRows, allShown))

	// A long description is cut, and shown whole on "more".
	long := `document.querySelector('#tools tr[data-tool="bulk_show_007"] .tb-desc')`
	waitPage(t, ctx, "the long description cut", long+`.innerText.includes('…') && !`+long+`.innerText.includes('last word')`)
	if _, err := evaluate[bool](ctx, `(() => { `+long+`.querySelector('.tb-more').click(); return true; })()`); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "the long description whole", long+`.innerText.includes('ends here with its last word.')`)

	// 4. Try it from the keyboard: the search, Enter opens the form of the
	// first match with its field focused, Enter runs it; the upstream's
	// answer, the status and the time are shown, and the call is audited.
	search("alpha_lookup", 1, "one tool")
	if err := within(ctx, 10*time.Second, chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	form := `document.querySelector('#tools tr[data-try="alpha_lookup"]')`
	waitPage(t, ctx, "alpha_lookup's form, its query field focused",
		`(() => { const f = `+form+`; return !!f && document.activeElement === f.querySelector('[data-field="query"] input'); })()`)
	if err := within(ctx, 10*time.Second, chromedp.SendKeys(chromedp.CSS(`tr[data-try="alpha_lookup"] [data-field="query"] input`), "needle"+kb.Enter)); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "the upstream's answer in the result",
		`(() => { const r = `+form+`.querySelector('.tb-result'); return r.dataset.verdict === 'ok' && r.dataset.status === '200'
		  && r.querySelector('.tb-text').innerText === 'alpha found needle' && /^\d+ ms$/.test(r.querySelector('.tb-ms').innerText); })()`)
	waitPage(t, ctx, "the run of alpha_lookup, allowed, in the recent calls",
		`(() => { const r = document.querySelector('#calls tr.call[data-tool="alpha_lookup"]');
		  return !!r && r.dataset.decision === 'allowed' && r.innerText.includes('bench'); })()`)

	// 5. A write tool, which the caller's level does not allow: refused
	// before the upstream, the denial shown and audited.
	search("alpha_update", 1, "the write tool")
	if _, err := evaluate[bool](ctx, `(() => { document.querySelector('#tools tr[data-tool="alpha_update"] .tb-try-btn').click(); return true; })()`); err != nil {
		t.Fatal(err)
	}
	denied := `document.querySelector('#tools tr[data-try="alpha_update"]')`
	waitPage(t, ctx, "alpha_update's form, which takes no arguments", `!!`+denied+` && `+denied+`.innerText.includes('takes no arguments')`)
	if _, err := evaluate[bool](ctx, `(() => { `+denied+`.querySelector('.tb-run').click(); return true; })()`); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "the denial in the result",
		`(() => { const r = `+denied+`.querySelector('.tb-result'); return r.dataset.verdict === 'denied' && r.dataset.status === '403'
		  && r.querySelector('.tb-why').innerText.includes("write tool 'alpha_update' not allowed"); })()`)
	waitPage(t, ctx, "the refused run of alpha_update, denied, in the recent calls",
		`(() => { const r = document.querySelector('#calls tr.call[data-tool="alpha_update"]'); return !!r && r.dataset.decision === 'denied'; })()`)

	// 6. A form of every kind of field: the enum a select, the required
	// one marked, the default in the integer, the array as JSON; the raw
	// JSON holds what the fields hold and goes back into them.
	search("bulk_preview", 1, "the rich tool")
	if _, err := evaluate[bool](ctx, `(() => { document.querySelector('#tools tr[data-tool="bulk_preview"] .tb-try-btn').click(); return true; })()`); err != nil {
		t.Fatal(err)
	}
	rich := `document.querySelector('#tools tr[data-try="bulk_preview"]')`
	waitPage(t, ctx, "bulk_preview's form with a field of each kind",
		`(() => { const f = `+rich+`; if (!f) return false; const q = (s) => f.querySelector(s);
		  return !!q('[data-field="mode"] select[required]') && !!q('[data-field="mode"] .tb-req') && q('[data-field="mode"] .tb-hint').innerText === 'how to run'
		    && q('[data-field="count"] input[type="number"]').value === '3' && !!q('[data-field="dry"] input[type="checkbox"]')
		    && !!q('[data-field="tags"] textarea') && !q('[data-field="count"] .tb-req'); })()`)
	if _, err := evaluate[bool](ctx, `(() => { const f = `+rich+`;
		const m = f.querySelector('[data-field="mode"] select'); m.value = [...m.options].find(o => o.text === 'slow').value;
		f.querySelector('[data-field="tags"] textarea').value = '["a", "b"]';
		f.querySelector('.tb-raw-btn').click(); return true; })()`); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "the raw JSON of the fields",
		`(() => { const t = `+rich+`.querySelector('.tb-raw'); if (t.hidden) return false; const a = JSON.parse(t.value);
		  return a.mode === 'slow' && a.count === 3 && JSON.stringify(a.tags) === '["a","b"]' && !('dry' in a); })()`)
	if _, err := evaluate[bool](ctx, `(() => { const f = `+rich+`; f.querySelector('.tb-raw').value = '{"mode": "fast", "count": 5, "dry": true}';
		f.querySelector('.tb-raw-btn').click(); return true; })()`); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "the fields filled from the raw JSON",
		`(() => { const f = `+rich+`; return f.querySelector('.tb-raw').hidden && f.querySelector('[data-field="count"] input').value === '5'
		  && f.querySelector('[data-field="dry"] input').checked && f.querySelector('[data-field="tags"] textarea').value === ''
		  && f.querySelector('[data-field="mode"] select').selectedOptions[0].text === 'fast'; })()`)
	if _, err := evaluate[bool](ctx, `(() => { `+rich+`.querySelector('.tb-run').click(); return true; })()`); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "the structured content of bulk_preview",
		`(() => { const r = `+rich+`.querySelector('.tb-result'); if (r.dataset.verdict !== 'ok') return false;
		  const s = JSON.parse(r.querySelector('.tb-structured').innerText);
		  return s.mode === 'fast' && s.count === 5 && s.dry === true && !('tags' in s); })()`)

	// The page stays within a phone's width with the forms open; the
	// picture (docs/console-toolbench.png with MCPHUB_SCREENSHOTS=1) shows
	// the bench with bulk folded and two runs.
	phoneFits(t, ctx)
	if _, err := evaluate[bool](ctx, `(() => { const s = document.querySelector('#tool-search'); s.value = ''; s.dispatchEvent(new Event('input'));
		`+fold+`; document.querySelector('#tools-card').scrollIntoView(); return true; })()`); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "bulk folded and every other tool shown", fmt.Sprintf(`%s === %d`, visibleRows, allShown-benchTools-1))
	screenshot(t, ctx, "console-toolbench.png", 1280, 800, false)
}

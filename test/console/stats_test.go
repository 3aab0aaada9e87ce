package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	stdpng "image/png"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// The tokens of TestStatsChartsInTheConsole: an admin looking at the
// charts, and an agent whose write calls wait for a person and whose
// arguments pass a personal-data filter.
const (
	statsAdminToken = "console-stats-admin-71c4"
	statsAgentToken = "console-stats-agent-3b9e"
)

// seriesColours are the colours charts.js gives the hub's series and the
// first two servers' (alpha, beta: by name).
func seriesColours() map[string]color.RGBA {
	return map[string]color.RGBA{
		"hub":   {0x1c, 0x23, 0x30, 0xff},
		"alpha": {0x2f, 0x5b, 0xea, 0xff},
		"beta":  {0xe8, 0x59, 0x0c, 0xff},
	}
}

// statsSeries is a series of GET /api/mcp/stats.
type statsSeries struct {
	Name                                         string
	Calls, Refused, Errors, Guardrail, Approvals []int
}

func statsTotal(n []int) int {
	t := 0
	for _, v := range n {
		t += v
	}
	return t
}

// TestStatsChartsInTheConsole: calls through the hub to two upstreams (an
// agent's call redacted by its content filter, and its write call held and
// denied) are counted in GET /api/mcp/stats, and the console's Activity
// card draws them: four charts, each with a series for the hub and one
// per server, a legend, the 24 h window on demand, at the card's width on
// a phone. A screenshot of the charts shows each series' colour.
func TestStatsChartsInTheConsole(t *testing.T) {
	_, alphaURL := startUpstream(t, "alpha")
	_, betaURL := startUpstream(t, "beta")
	hub := hubtest.StartHub(t, hubtest.HubOptions{
		Config: "servers:\n  - name: alpha\n    url: " + alphaURL + "\n  - name: beta\n    url: " + betaURL + "\n" +
			"auth:\n  tokens:\n" +
			"  - name: ops\n    token: {env: MCPHUB_STATS_ADMIN}\n    maxLevel: full\n    admin: true\n" +
			"  - name: agent\n    token: {env: MCPHUB_STATS_AGENT}\n    maxLevel: supervised\n" +
			"    guardrails: {humanApprovalRequired: true, contentFilters: [pii], contentFilterMode: redact}\n",
		Env:  []string{"MCPHUB_STATS_ADMIN=" + statsAdminToken, "MCPHUB_STATS_AGENT=" + statsAgentToken},
		Wait: hubtest.Connected,
	})

	ops, agent := mcpClient(t, hub, statsAdminToken), mcpClient(t, hub, statsAgentToken)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	callTool := func(c interface {
		CallTool(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error)
	}, name, query string) *mcp.CallToolResult {
		t.Helper()
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: map[string]any{"query": query}}})
		if err != nil {
			t.Fatalf("call %s: %v", name, err)
		}
		return res
	}
	for _, name := range []string{"alpha_lookup", "alpha_lookup", "alpha_lookup", "beta_lookup", "beta_lookup"} {
		if res := callTool(ops, name, "x"); res.IsError {
			t.Fatalf("%s: %+v", name, res)
		}
	}
	if res := callTool(agent, "beta_lookup", "mail olga.kowalska@fabrikam.de"); res.IsError {
		t.Fatalf("the agent's beta_lookup: %+v", res)
	}
	held := make(chan *mcp.CallToolResult, 1)
	go func() { // returns once the call is denied below
		res, _ := agent.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "alpha_update"}})
		held <- res
	}()
	id := ""
	for deadline := time.Now().Add(30 * time.Second); id == ""; time.Sleep(50 * time.Millisecond) {
		for _, h := range listApprovals(t, hub.Base, statsAdminToken) {
			if h.Tool == "alpha_update" {
				id = h.ID
			}
		}
		if id == "" && time.Now().After(deadline) {
			t.Fatal("the hub holds no alpha_update call")
		}
	}
	decide(t, hub.Base, statsAdminToken, id, "not during the test")
	if res := <-held; res == nil || !res.IsError {
		t.Fatalf("the denied alpha_update: %+v, want a BLOCKED result", res)
	}

	// The counts, as the REST API gives them.
	if status, body := rest(t, http.MethodGet, hub.Base+"/api/mcp/stats", statsAgentToken, nil); status != http.StatusForbidden {
		t.Fatalf("GET /api/mcp/stats as an agent: %d %s, want 403", status, body)
	}
	status, body := rest(t, http.MethodGet, hub.Base+"/api/mcp/stats?window=1h", statsAdminToken, nil)
	var stats struct {
		Hub     statsSeries
		Servers []statsSeries
	}
	if status != http.StatusOK || json.Unmarshal(body, &stats) != nil {
		t.Fatalf("GET /api/mcp/stats: %d %s", status, body)
	}
	perServer := map[string]int{}
	for _, s := range stats.Servers {
		perServer[s.Name] = statsTotal(s.Calls)
	}
	if h := stats.Hub; statsTotal(h.Calls) != 7 || statsTotal(h.Guardrail) != 1 || statsTotal(h.Approvals) != 1 || statsTotal(h.Refused) != 1 || statsTotal(h.Errors) != 0 {
		t.Fatalf("hub: %d calls, %d guardrail, %d approvals, %d refused, %d errors; want 7, 1, 1, 1, 0", statsTotal(h.Calls), statsTotal(h.Guardrail), statsTotal(h.Approvals), statsTotal(h.Refused), statsTotal(h.Errors))
	}
	if fmt.Sprint(perServer) != "map[alpha:4 beta:3]" {
		t.Fatalf("calls per server %v, want alpha 4, beta 3", perServer)
	}

	// The charts: four, each with the hub's series and one per server.
	bctx := browser(t)
	openConsole(t, bctx, hub.Base, statsAdminToken, "/")
	const charts = `[...document.querySelectorAll('#activity-charts svg[data-chart]')]`
	drawn := `(() => { const c = ` + charts + `; return !document.querySelector('#activity-card').hidden && c.length === 4 &&
		c.every(svg => { const g = [...svg.querySelectorAll('g.series')];
			return g.length === 3 && g.filter(s => s.dataset.hub).length === 1 && g.every(s => s.querySelector('path, circle')); }); })()`
	waitPage(t, bctx, "four charts of the hub's series and alpha's and beta's", drawn)
	names, err := evaluate[string](bctx, `[...document.querySelectorAll('#activity-charts svg[data-chart="calls"] g.series')].map(g => g.dataset.series).join(',')
		+ ' ' + [...document.querySelectorAll('#activity-legend .key')].map(k => k.innerText.trim()).join(',')`)
	if err != nil || names != "*,alpha,beta all calls,alpha,beta" {
		t.Fatalf("series %q (%v), want the hub's, then alpha's and beta's over it, and a legend of the three", names, err)
	}
	if sum, err := evaluate[string](bctx, `document.querySelector('#activity-sum').innerText`); err != nil || !strings.HasPrefix(sum, "7 calls") {
		t.Fatalf("the summary says %q (%v), want 7 calls", sum, err)
	}
	png := chartsPicture(t, bctx, "stats-desktop.png")
	for name, c := range seriesColours() {
		if n := pixelsNear(png, c); n < 15 {
			t.Errorf("the charts' picture has %d pixels of %s's colour %v: its line is not drawn", n, name, c)
		}
	}

	// The day's window, on demand, live (no reload).
	if _, err := evaluate[int](bctx, `window.statsTestMark = 7`); err != nil {
		t.Fatal(err)
	}
	if _, err := evaluate[bool](bctx, `(() => { const s = document.querySelector('#activity-window'); s.value = '24h';
		s.dispatchEvent(new Event('change')); return true; })()`); err != nil {
		t.Fatal(err)
	}
	waitPage(t, bctx, "the last 24 h", drawn+` && document.querySelector('#activity-sum').innerText.includes('24 h') && window.statsTestMark === 7`)

	// A phone: the charts take the card's width, the page no more.
	if err := within(bctx, 30*time.Second, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	waitPage(t, bctx, "the charts drawn again at a phone's width", `(() => { const c = `+charts+`;
		return c.length === 4 && c.every(svg => +svg.getAttribute('width') <= 360 && svg.getBoundingClientRect().right <= 390)
			&& document.documentElement.scrollWidth <= 390; })()`)
	if n := pixelsNear(chartsPicture(t, bctx, "stats-phone.png"), seriesColours()["alpha"]); n < 15 {
		t.Errorf("the phone's picture has %d pixels of alpha's colour", n)
	}
}

// chartsPicture takes a PNG of the Activity charts and checks it is not
// blank: many colours, not one background. With MCPHUB_SCREENSHOTS=1 it
// goes to docs/name, else to the test's temporary directory.
func chartsPicture(t *testing.T, ctx context.Context, name string) image.Image {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	b, err := chromedp.Run(sctx, chromedp.Screenshot(chromedp.CSS("#activity-charts")))
	if err != nil {
		t.Fatalf("screenshot of the charts: %v", err)
	}
	if err := os.WriteFile(filepath.Join(screenshotDir(t), name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := stdpng.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the charts' screenshot is no PNG: %v", err)
	}
	colours := map[color.RGBA]bool{}
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			colours[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)] = true
		}
	}
	if bounds.Dx() < 200 || bounds.Dy() < 150 || len(colours) < 10 {
		t.Fatalf("the charts' screenshot is %dx%d with %d colours: blank", bounds.Dx(), bounds.Dy(), len(colours))
	}
	return img
}

// pixelsNear counts the pixels of img within a small distance of c (a
// line's middle; its edges are blended with the background).
func pixelsNear(img image.Image, c color.RGBA) int {
	near := func(a, b uint8) bool { return int(a)-int(b) < 40 && int(b)-int(a) < 40 }
	n := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			p := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			if near(p.R, c.R) && near(p.G, c.G) && near(p.B, c.B) {
				n++
			}
		}
	}
	return n
}

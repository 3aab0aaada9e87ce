package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// Benchmark 10: what the content filters cost a tools/call (issue 23). One
// hub, the fast upstream behind it, and two token callers: "plain", with
// no guardrails, and "filtered", with the pii and secrets content filters
// (redact mode), whose every tools/call result the hub scans and redacts.
// Both call get_page, whose answer is hubtest.ResultPage(true): a ~100 KB
// result with an e-mail address and an AWS key in it, so the redaction
// path runs, not only the scan. The two callers are measured in
// interleaved rounds in alternating order, for calls/s and the hub's CPU,
// and then in turns, call by call, in one loop: the cost is that loop's
// filtered p50 minus its plain p50, scaled to 100 KB of result.

const (
	// targetGuardrailsMsPer100KB: filtered p50 minus plain p50 at one
	// session, per 100 KB of result, in ms.
	targetGuardrailsMsPer100KB = 0.3
	// targetGuardrailsRatio: filtered p50 over plain p50 at one session.
	targetGuardrailsRatio = 1.10
	// pageTool is the fast upstream's ~100 KB tool.
	pageTool = "get_page"

	guardPlainEnv    = "MCPHUB_BENCH_PLAIN_TOKEN"
	guardFilteredEnv = "MCPHUB_BENCH_FILTERED_TOKEN"
	guardPlainToken  = "bench-plain-token-1"
	guardFilterToken = "bench-filtered-token-1"
	// guardEmail is the address in hubtest.ResultPage(true).
	guardEmail = "olga.kowalska@fabrikam.de"
	guardKey   = "AKIAZ3MSJV5WKQ7TYRXB"
)

// guardFilters are the filtered caller's content filters.
var guardFilters = []string{"pii", "secrets"}

// pageResult is get_page's answer, hubtest.ResultPage(true) decoded once,
// and the length of its JSON.
func pageResult() (*mcp.CallToolResult, int, error) {
	raw := hubtest.ResultPage(true)
	res, err := mcp.ParseCallToolResult(&raw)
	if err != nil {
		return nil, 0, fmt.Errorf("hubtest.ResultPage: %w", err)
	}
	return res, len(raw), nil
}

// GuardrailsRound is one round at one concurrency: both callers measured
// once, in Order, and the filtered one set against the plain one.
type GuardrailsRound struct {
	Order    []string `json:"order"`
	Plain    Result   `json:"plain"`
	Filtered Result   `json:"filtered"`
	// CostP50MsPer100KB is filtered p50 - plain p50, scaled to 100 KB of
	// result.
	CostP50MsPer100KB float64 `json:"costP50MsPer100KB"`
	P50Ratio          float64 `json:"p50Ratio"`        // filtered p50 / plain p50
	ThroughputRatio   float64 `json:"throughputRatio"` // filtered calls/s / plain calls/s
	// CPUCostUsPer100KB is the hub's CPU per call for the filtered caller
	// minus for the plain one, per 100 KB.
	CPUCostUsPer100KB float64 `json:"cpuCostUsPer100KB"`
	// Paired is the two callers' p50s from calls made in turns in one
	// loop; CostP50MsPer100KB and P50Ratio are read off it.
	Paired Paired `json:"paired"`
}

// Paired is one measurement of both callers in one loop of calls in
// turns (which goes first alternating): the two p50s come from the same
// moments of the machine. Measured one after the other, the plain p50
// moved by more than a millisecond from one round to the next on a busy
// 2-CPU VM, more than the cost measured.
type Paired struct {
	Pairs         int     `json:"pairs"`
	PlainP50Ms    float64 `json:"plainP50Ms"`
	FilteredP50Ms float64 `json:"filteredP50Ms"`
}

// GuardrailsResult is benchmark 10 at one concurrency: the rounds, the
// medians of each caller's figures and the medians of the rounds' costs
// and ratios.
type GuardrailsResult struct {
	Concurrency       int               `json:"concurrency"`
	Rounds            []GuardrailsRound `json:"rounds"`
	Plain             Result            `json:"plain"`
	Filtered          Result            `json:"filtered"`
	CostP50MsPer100KB float64           `json:"costP50MsPer100KB"`
	P50Ratio          float64           `json:"p50Ratio"`
	ThroughputRatio   float64           `json:"throughputRatio"`
	CPUCostUsPer100KB float64           `json:"cpuCostUsPer100KB"`
	Paired            Paired            `json:"paired"` // the rounds' medians
}

// GuardrailsBench is benchmark 10.
type GuardrailsBench struct {
	Filters   []string           `json:"filters"`
	PageBytes int                `json:"pageBytes"` // the result's JSON
	Results   []GuardrailsResult `json:"results"`
}

func (e *benchEnv) runGuardrails(ctx context.Context) (*GuardrailsBench, error) {
	cfg, progress := e.cfg, e.progress
	_, pageBytes, err := pageResult()
	if err != nil {
		return nil, err
	}
	up, upURL, err := e.startRole(ctx, "upstream")
	if err != nil {
		return nil, fmt.Errorf("start upstream: %w", err)
	}
	defer up.Kill()
	conf := fmt.Sprintf(`servers:
  - {name: fast, url: %q}
builtins: {staticAnalysis: {enabled: false}, triggerWorkflow: {enabled: false}}
auth:
  tokens:
    - name: filtered
      token: {env: %s}
      maxLevel: full
      guardrails: {contentFilters: [%s]}
    - name: plain
      token: {env: %s}
      maxLevel: full
`, upURL, guardFilteredEnv, strings.Join(guardFilters, ", "), guardPlainEnv)
	hub, err := hubtest.LaunchHub(ctx, hubtest.HubOptions{Bin: e.hubBin, LogLevel: "info", Config: conf, Wait: hubtest.Connected,
		Env: []string{guardFilteredEnv + "=" + guardFilterToken, guardPlainEnv + "=" + guardPlainToken}})
	if err != nil {
		return nil, fmt.Errorf("start hub: %w", err)
	}
	defer hub.Kill()
	hubURL := hub.MCPURL()
	if err := checkRedaction(ctx, hubURL); err != nil {
		return nil, err
	}

	out := &GuardrailsBench{Filters: guardFilters, PageBytes: pageBytes}
	per100KB := 100_000 / float64(pageBytes)
	// One session: the target is what the filters add to a call's p50. A
	// call of a 100 KB page takes milliseconds, many more on a busy machine
	// or under the race detector (the harness), so each measurement lasts
	// at least pageMinDuration whatever -duration says.
	levels := []int{1}
	cfg.Duration = max(cfg.Duration, pageMinDuration)
	cfg.Warmup = max(cfg.Warmup, pageMinDuration/4)
	callers := []struct{ name, token string }{{"plain", guardPlainToken}, {"filtered", guardFilterToken}}
	rounds := cfg.rounds()
	for _, n := range levels {
		r := GuardrailsResult{Concurrency: n}
		for rd := range rounds {
			var round GuardrailsRound
			// Alternate which caller goes first, so that neither always
			// runs on a cooler or busier machine.
			for i := range callers {
				c := callers[(i+rd)%len(callers)]
				progress("guardrails, concurrency %d, round %d of %d: %s", n, rd+1, rounds, c.name)
				res, err := measurePage(ctx, hubURL, c.name, c.token, hub.PID(), n, cfg)
				if err != nil {
					return nil, err
				}
				round.Order = append(round.Order, c.name)
				if c.name == "plain" {
					round.Plain = res
				} else {
					round.Filtered = res
				}
			}
			progress("guardrails, concurrency %d, round %d of %d: both in turns", n, rd+1, rounds)
			if round.Paired, err = measurePaired(ctx, hubURL, cfg); err != nil {
				return nil, err
			}
			round.CostP50MsPer100KB = (round.Paired.FilteredP50Ms - round.Paired.PlainP50Ms) * per100KB
			round.P50Ratio = ratio(round.Paired.FilteredP50Ms, round.Paired.PlainP50Ms)
			round.ThroughputRatio = ratio(round.Filtered.CallsPerSec, round.Plain.CallsPerSec)
			round.CPUCostUsPer100KB = (round.Filtered.CPUUsPerCall - round.Plain.CPUUsPerCall) * per100KB
			r.Rounds = append(r.Rounds, round)
		}
		r.summarize()
		out.Results = append(out.Results, r)
	}
	return out, nil
}

// pageMinDuration is the shortest measurement of page calls.
const pageMinDuration = 2 * time.Second

// summarize fills the medians from the rounds.
func (r *GuardrailsResult) summarize() {
	var plain, filtered []Result
	for _, rd := range r.Rounds {
		plain, filtered = append(plain, rd.Plain), append(filtered, rd.Filtered)
	}
	r.Plain, r.Filtered = medianResult(plain), medianResult(filtered)
	r.CostP50MsPer100KB = medianBy(r.Rounds, func(rd GuardrailsRound) float64 { return rd.CostP50MsPer100KB })
	r.P50Ratio = medianBy(r.Rounds, func(rd GuardrailsRound) float64 { return rd.P50Ratio })
	r.ThroughputRatio = medianBy(r.Rounds, func(rd GuardrailsRound) float64 { return rd.ThroughputRatio })
	r.CPUCostUsPer100KB = medianBy(r.Rounds, func(rd GuardrailsRound) float64 { return rd.CPUCostUsPer100KB })
	r.Paired = Paired{
		Pairs:         int(medianBy(r.Rounds, func(rd GuardrailsRound) float64 { return float64(rd.Paired.Pairs) })),
		PlainP50Ms:    medianBy(r.Rounds, func(rd GuardrailsRound) float64 { return rd.Paired.PlainP50Ms }),
		FilteredP50Ms: medianBy(r.Rounds, func(rd GuardrailsRound) float64 { return rd.Paired.FilteredP50Ms }),
	}
}

// measurePage measures get_page calls at n sessions of the caller with
// token, and the hub's CPU per call.
func measurePage(ctx context.Context, url, target, token string, hubPID, n int, cfg Config) (Result, error) {
	httpClient := newHTTPClient(1024)
	defer httpClient.CloseIdleConnections()
	m := newCPUMeter(hubPID)
	res, err := measureCalls(ctx, target, n, cfg, meterWindow(m), func(ctx context.Context, _ int) (callFunc, func(), error) {
		c, err := dial(ctx, url, httpClient, "Authorization", "Bearer "+token)
		if err != nil {
			return nil, nil, err
		}
		return toolCaller(c, pageTool, map[string]any{}), func() { c.Close() }, nil
	})
	if err != nil {
		return res, err
	}
	if res.CPUUsPerCall, err = m.usPer(0, res.Calls); err != nil {
		return res, fmt.Errorf("%s at %d sessions: hub %w", target, n, err)
	}
	return res, nil
}

// measurePaired calls get_page as the plain and the filtered caller in
// turns, one session each, for the warm-up and then cfg.Duration.
func measurePaired(ctx context.Context, url string, cfg Config) (Paired, error) {
	httpClient := newHTTPClient(2)
	defer httpClient.CloseIdleConnections()
	var calls [2]callFunc // plain, filtered
	for i, token := range []string{guardPlainToken, guardFilterToken} {
		c, err := dial(ctx, url, httpClient, "Authorization", "Bearer "+token)
		if err != nil {
			return Paired{}, err
		}
		defer c.Close()
		calls[i] = toolCaller(c, pageTool, map[string]any{})
	}
	var took [2][]time.Duration
	measured := time.Now().Add(cfg.Warmup)
	end := measured.Add(cfg.Duration)
	for k := 0; time.Now().Before(end); k++ {
		for j := range calls {
			i := (j + k) % len(calls)
			start := time.Now()
			if err := calls[i](ctx); err != nil {
				return Paired{}, fmt.Errorf("get_page in turns: %w", err)
			}
			if start.After(measured) {
				took[i] = append(took[i], time.Since(start))
			}
		}
	}
	for i := range took {
		slices.Sort(took[i])
	}
	return Paired{Pairs: min(len(took[0]), len(took[1])), PlainP50Ms: pct(took[0], 50), FilteredP50Ms: pct(took[1], 50)}, nil
}

// checkRedaction calls get_page once as each caller: the filtered answer
// must be redacted and the plain one not, or the benchmark measures
// nothing.
func checkRedaction(ctx context.Context, url string) error {
	call := func(token string) (string, error) {
		c, err := dial(ctx, url, newHTTPClient(1), "Authorization", "Bearer "+token)
		if err != nil {
			return "", err
		}
		defer c.Close()
		return pageText(ctx, c)
	}
	filtered, err := call(guardFilterToken)
	if err != nil {
		return fmt.Errorf("get_page as the filtered caller: %w", err)
	}
	for _, want := range []string{"[redacted: email]", "[redacted: aws-access-token]"} {
		if !strings.Contains(filtered, want) {
			return fmt.Errorf("get_page as the filtered caller: the answer has no %q: are the content filters on?", want)
		}
	}
	if strings.Contains(filtered, guardEmail) || strings.Contains(filtered, guardKey) {
		return errors.New("get_page as the filtered caller: the answer holds the e-mail address or the AWS key")
	}
	plain, err := call(guardPlainToken)
	if err != nil {
		return fmt.Errorf("get_page as the plain caller: %w", err)
	}
	if !strings.Contains(plain, guardEmail) {
		return errors.New("get_page as the plain caller: the answer lacks the e-mail address: the plain caller is filtered too")
	}
	return nil
}

// pageText calls get_page and returns the text of its answer.
func pageText(ctx context.Context, c *client.Client) (string, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = pageTool
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	for _, ct := range res.Content {
		if t, ok := mcp.AsTextContent(ct); ok {
			sb.WriteString(t.Text)
		}
	}
	if res.IsError {
		return "", fmt.Errorf("error result: %.300s", sb.String())
	}
	return sb.String(), nil
}

// addPageTool gives the fast upstream get_page: hubtest.ResultPage(true),
// decoded once, returned as it is.
func addPageTool(s *server.MCPServer) {
	page, _, err := pageResult()
	if err != nil {
		panic(err)
	}
	s.AddTool(mcp.NewTool(pageTool), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return page, nil
	})
}

// verdicts judges the cost at one session per 100 KB of result.
func (b *GuardrailsBench) verdicts(rounds int) []Verdict {
	var out []Verdict
	for _, r := range b.Results {
		if r.Concurrency != 1 {
			continue
		}
		for _, v := range []Verdict{
			judge("guardrails", "filtered - plain p50 per 100 KB, in turns", r.CostP50MsPer100KB, "<=", targetGuardrailsMsPer100KB, " ms"),
			judge("guardrails", "filtered / plain p50, in turns", r.P50Ratio, "<=", targetGuardrailsRatio, "x"),
		} {
			if rounds < minRounds {
				v = v.unjudged(fmt.Sprintf("%d rounds, fewer than %d", rounds, minRounds))
			}
			out = append(out, v)
		}
	}
	return out
}

func (b *GuardrailsBench) writeTable(w io.Writer) {
	fmt.Fprintf(w, "\n[10] guardrails: tools/call of a %.1f KB result as a caller with no filters (plain) and with the content filters %s (filtered, redact mode), %d interleaved rounds, medians\n",
		float64(b.PageBytes)/1000, strings.Join(b.Filters, ", "), roundsOfGuard(b.Results))
	fmt.Fprintf(w, "%-5s %-9s %9s %9s %11s %7s %12s\n", "conc", "target", "p50 ms", "p99 ms", "calls/s", "errors", "hub µs/call")
	for _, r := range b.Results {
		for _, res := range []Result{r.Plain, r.Filtered} {
			fmt.Fprintf(w, "%-5d %-9s %9.3f %9.3f %11.0f %7d %12.0f\n", res.Concurrency, res.Target, res.P50Ms, res.P99Ms, res.CallsPerSec, res.Errors, res.CPUUsPerCall)
		}
	}
	fmt.Fprintf(w, "\nper round (in the order run): in turns filtered-plain p50 per 100 KB and filtered/plain p50 (plain, filtered p50 ms, pairs); one after the other filtered-plain p50, filtered/plain calls/s, hub CPU filtered-plain per 100 KB\n")
	for _, r := range b.Results {
		for i, rd := range r.Rounds {
			fmt.Fprintf(w, "%-5d round %d (%s): %+.3f ms, %.2fx (%.3f, %.3f, %d); %+.3f ms, %.2fx, %+.0f µs\n", r.Concurrency, i+1, strings.Join(rd.Order, ", "),
				rd.CostP50MsPer100KB, rd.P50Ratio, rd.Paired.PlainP50Ms, rd.Paired.FilteredP50Ms, rd.Paired.Pairs,
				(rd.Filtered.P50Ms-rd.Plain.P50Ms)*100_000/float64(b.PageBytes), rd.ThroughputRatio, rd.CPUCostUsPer100KB)
		}
	}
	fmt.Fprintf(w, "\nmedians of the rounds (p50s one after the other; f-p p50 and f/p p50 in turns: filtered p50 - plain p50 per 100 KB of result, filtered p50 / plain p50)\n")
	fmt.Fprintf(w, "%-5s %13s %14s %14s %11s %16s\n", "conc", "plain p50 ms", "filtered p50", "f-p p50 ms", "f/p p50", "f/p calls/s")
	for _, r := range b.Results {
		fmt.Fprintf(w, "%-5d %13.3f %14.3f %14.3f %10.2fx %15.2fx\n", r.Concurrency, r.Plain.P50Ms, r.Filtered.P50Ms, r.CostP50MsPer100KB, r.P50Ratio, r.ThroughputRatio)
	}
}

func (b *GuardrailsBench) markdownLine() string {
	for _, r := range b.Results {
		if r.Concurrency == 1 {
			return fmt.Sprintf("guardrails: tools/call of a %.0f KB result, one session, content filters %s against none, calls in turns: p50 %.2f ms against %.2f ms, %+.3f ms per 100 KB (%.2fx p50); one after the other %.2fx calls/s",
				float64(b.PageBytes)/1000, strings.Join(b.Filters, " + "), r.Paired.FilteredP50Ms, r.Paired.PlainP50Ms, r.CostP50MsPer100KB, r.P50Ratio, r.ThroughputRatio)
		}
	}
	return "guardrails: not measured at one session"
}

// roundsOfGuard is the rounds each level ran.
func roundsOfGuard(rs []GuardrailsResult) int {
	if len(rs) == 0 {
		return 0
	}
	return len(rs[0].Rounds)
}

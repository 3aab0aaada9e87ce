package soak

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// What the soak checks once the load has stopped.

// reviewSlack widens a kube-apiserver restart's window for the agent's
// refusals: a replica keeps a failed token review for 10 s
// (kubeauth.DefaultFailureTTL).
const reviewSlack = 15 * time.Second

// flakyErrorSlack widens each flap's window: the hub may see the
// upstream's end a little before the test's clock says it stopped it.
const flakyErrorSlack = 2 * time.Second

// inWindow says whether c overlapped one of ws.
func inWindow(ws []window, c *call, slack time.Duration) bool {
	for _, w := range ws {
		if w.overlaps(c.start, c.end, slack) {
			return true
		}
	}
	return false
}

// checkOutcomes: every call ended as its caller, tool and the faults of
// its time allow, and what it returned is what the tool answers (filtered
// for callers with filters).
func (s *soak) checkOutcomes(calls []*call) {
	s.mu.Lock()
	flaps, restarts := slices.Clone(s.flaps), slices.Clone(s.apiRestarts)
	s.mu.Unlock()
	var bad []string
	kinds := map[string]int{}
	runs := map[int64][]*call{}
	for _, c := range calls {
		if c.run != 0 {
			runs[c.run] = append(runs[c.run], c)
		}
		if err := s.expect(c, flaps, restarts); err != nil {
			kinds[c.caller+" "+c.tool+" "+c.outcome]++
			bad = append(bad, fmt.Sprintf("%s %s %s on %s (%s..%s): %s: got %s %q", c.id, c.caller, c.tool, c.face,
				c.start.Format("15:04:05.000"), c.end.Format("15:04:05.000"), err, c.outcome, trim(c.reply.text)))
		}
	}
	if len(kinds) > 0 {
		s.t.Logf("calls that ended otherwise than allowed, by caller, tool and outcome: %s", fmtCounts(kinds))
	}
	// A budget run: the first `budget` calls ran, the rest were refused,
	// whichever replica each landed on.
	for run, cs := range runs {
		if len(cs) != budgetRun {
			continue // the load stopped mid-run
		}
		for i, c := range cs {
			want := outOK
			if i >= budget {
				want = outBudget
			}
			if c.outcome != want {
				bad = append(bad, fmt.Sprintf("budget run %d call %d of %d on %s: %s %q, want %s", run, i+1, budgetRun, c.face, c.outcome, trim(c.reply.text), want))
			}
		}
	}
	reportFirst(s.t, "calls that ended otherwise than allowed", bad)
}

// checkCoverage: the soak did what it says: every caller kind made calls
// that ran on every face, and each kind of refusal, fault and filter
// happened.
func (s *soak) checkCoverage(calls []*call) {
	ran := map[string]int{}
	seen := map[string]int{}
	for _, c := range calls {
		if c.outcome == outOK {
			ran[c.caller+" on "+c.face]++
		}
		switch {
		case c.outcome == outBudget:
			seen["a budget's refusal"]++
		case c.outcome == outLimited:
			seen["a rate limit's refusal"]++
		case c.outcome == outDenied:
			seen["an autonomy denial"]++
		case c.outcome == outApprovalDenied:
			seen["a write an approver denied"]++
		case c.outcome == outOK && c.decision == "approved":
			seen["a write an approver approved"]++
		case c.outcome == outOK && c.secret != "" && strings.Contains(c.reply.text, "[redacted"):
			seen["a result redacted"]++
		case c.outcome == outOK && c.tool == toolHuge:
			seen["a huge result cut"]++
		case c.outcome == outUpstream && c.server == "flaky":
			seen["an error of the flaky upstream while it was down"]++
		case c.outcome == outUpstream && c.tool == toolMalformed:
			seen["a malformed answer"]++
		case c.outcome == outToolError:
			seen["a tool's error result"]++
		}
	}
	var missing []string
	for _, k := range callerKinds {
		for _, f := range faces {
			if ran[k+" on "+f] == 0 {
				missing = append(missing, "a call of "+k+" on "+f+" that ran")
			}
		}
	}
	for _, want := range []string{"a budget's refusal", "a rate limit's refusal", "an autonomy denial", "a write an approver denied", "a write an approver approved",
		"a result redacted", "a huge result cut", "an error of the flaky upstream while it was down", "a malformed answer", "a tool's error result"} {
		if seen[want] == 0 {
			missing = append(missing, want)
		}
	}
	reportFirst(s.t, "what the soak never did", missing)
}

// expect is nil when c ended as allowed.
func (s *soak) expect(c *call, flaps, restarts []window) error {
	if c.end.IsZero() {
		return fmt.Errorf("never ended")
	}
	if c.caller == callerAgent && c.outcome == outUnauthorized && inWindow(restarts, c, reviewSlack) {
		return nil // its token could not be reviewed while the kube-apiserver was down
	}
	if c.outcome == outUpstream && c.server == "flaky" && inWindow(flaps, c, flakyErrorSlack) {
		return nil // the flaky upstream was down
	}
	if c.outcome == outLimited {
		if c.caller == callerOps {
			return nil // over its rate limit
		}
		return fmt.Errorf("only the admin has a rate limit")
	}
	text := c.reply.text
	switch {
	case c.caller == callerBudget:
		if c.outcome != outOK && c.outcome != outBudget {
			return fmt.Errorf("want ok or the budget's refusal")
		}
		return nil
	case c.caller == callerAnon && c.tool == toolNote:
		if c.outcome != outDenied {
			return fmt.Errorf("a restricted caller's write, want denied")
		}
		return nil
	case c.caller == callerBot && c.tool == toolNote:
		switch {
		case c.decision == "denied" && c.outcome == outApprovalDenied:
			return nil
		case c.decision == "approved" && c.outcome == outOK && text == "wrote "+c.id:
			return nil
		}
		return fmt.Errorf("a held write the approver %q", c.decision)
	case c.server == "hostile":
		return expectHostile(c)
	}
	if c.outcome != outOK {
		return fmt.Errorf("want ok")
	}
	switch c.tool {
	case toolEcho:
		want := fmt.Sprintf("echo %s: %s", c.id, c.text)
		if c.secret != "" && (c.caller == callerBot || c.caller == callerAgent) {
			if strings.Contains(text, c.secret) || !strings.Contains(text, "[redacted") || !strings.HasPrefix(text, "echo "+c.id+": ") {
				return fmt.Errorf("want %q with its secret redacted", want)
			}
			return nil
		}
		if text != want {
			return fmt.Errorf("want %q", want)
		}
	case toolNote:
		if text != "wrote "+c.id {
			return fmt.Errorf("want %q", "wrote "+c.id)
		}
	case "test_simple_text":
		if text == "" {
			return fmt.Errorf("want text")
		}
	}
	return nil
}

// expectHostile: the hostile upstream's tools end their own way; a
// malformed or failed answer also counts against its circuit breaker,
// which may then fail its other calls fast for a while (an injected
// fault too, as the error says).
func expectHostile(c *call) error {
	text := c.reply.text
	switch c.tool {
	case toolMalformed, toolBroken:
		if c.outcome != outUpstream {
			return fmt.Errorf("want an upstream error")
		}
		return nil
	}
	if c.outcome == outUpstream && breakerOrDown(text) {
		return nil
	}
	switch c.tool {
	case toolFails:
		if c.outcome != outToolError || text != "soak: bad input "+c.id {
			return fmt.Errorf("want the tool's error result")
		}
	case toolSlow:
		if c.outcome != outOK || text != "slow "+c.id {
			return fmt.Errorf("want %q", "slow "+c.id)
		}
	case toolFlood:
		if c.outcome != outOK || text != "flooded "+c.id {
			return fmt.Errorf("want %q", "flooded "+c.id)
		}
	case toolHuge:
		if c.outcome != outOK || !strings.HasPrefix(text, "huge "+c.id+" 0123456789abcdef") || len(text) > 20000+1000 {
			return fmt.Errorf("want the start of the huge answer, cut to about 20000 characters (got %d)", len(text))
		}
	}
	return nil
}

// breakerOrDown says whether an upstream error says the server was not
// there to call: its breaker open, or reconnecting.
func breakerOrDown(text string) bool {
	t := strings.ToLower(text)
	return strings.Contains(t, "unavailable") || strings.Contains(t, "breaker") || strings.Contains(t, "not connected") || strings.Contains(t, "reconnect")
}

func trim(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// checkAudit: the replicas' audit lines of tool calls (each carries its
// call's trace id) hold every call of the soak that reached a replica
// exactly once, on the face it came by, by its caller, with the outcome
// its caller saw; none of a call that did not, and none the soak did not
// make. Each replica's count of calls in /metrics is its number of audit
// lines. Held calls each have a request and one decision line.
func (s *soak) checkAudit(calls []*call, logs [][]logLine) {
	t := s.t
	byTrace := map[string][]logLine{}
	perReplica := make([]int, replicas)
	approvalEvents := map[string]int{}
	for i, lines := range logs {
		for _, l := range lines {
			switch l.Audit {
			case "tools/call":
				byTrace[l.TraceID] = append(byTrace[l.TraceID], l)
				perReplica[i]++
			case "approval":
				approvalEvents[l.Event]++
			}
		}
	}
	var bad []string
	traces := map[string][]*call{}
	for _, c := range calls {
		traces[c.trace] = append(traces[c.trace], c)
	}
	for trace, cs := range traces {
		lines := byTrace[trace]
		delete(byTrace, trace)
		var want []*call
		for _, c := range cs {
			if reachesPipeline(c.outcome) {
				want = append(want, c)
			}
		}
		if len(lines) != len(want) {
			c := cs[0]
			bad = append(bad, fmt.Sprintf("trace %s (%s: %s %s on %s at %s, %s %q; %d calls, %d reached a replica): %d audit lines",
				trace, c.id, c.caller, c.tool, c.face, c.start.Format("15:04:05.000"), c.outcome, trim(c.reply.text), len(cs), len(want), len(lines)))
			continue
		}
		// Outcomes agree as multisets (a run's lines may interleave
		// across replicas).
		var got, exp []string
		for i, l := range lines {
			c := want[i]
			if l.Caller != auditCaller(c.caller) || l.Face != auditFace[c.face] || !strings.HasSuffix(l.Tool, c.tool) {
				bad = append(bad, fmt.Sprintf("%s: audit line of %s %s on %s says caller %q face %q tool %q", c.id, c.caller, c.tool, c.face, l.Caller, l.Face, l.Tool))
			}
			got = append(got, l.Outcome)
			exp = append(exp, c.outcome)
		}
		sort.Strings(got)
		sort.Strings(exp)
		for i := range got {
			if !auditAgrees(got[i], exp[i]) {
				bad = append(bad, fmt.Sprintf("%s %s on %s: the caller saw %v, the audit says %v", cs[0].id, cs[0].tool, cs[0].face, exp, got))
				break
			}
		}
	}
	var stray []string
	for _, lines := range byTrace { // every tools/call of the replicas is one of the soak's
		for _, l := range lines {
			stray = append(stray, fmt.Sprintf("replica %d: %s", l.replica, trim(l.raw)))
		}
	}
	reportFirst(t, "calls the audit does not hold exactly once as their callers saw them", bad)
	reportFirst(t, "audit lines of calls the soak did not make (or without a trace id)", stray)

	for i := range s.f.hubs {
		n, err := s.f.metricSum(i, "mcphub_tool_calls_total")
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
			continue
		}
		if int(n) != perReplica[i] {
			t.Errorf("replica %d counts %d tool calls in /metrics and has %d audit lines of them", i, int(n), perReplica[i])
		}
	}

	// Every write of the bot's was held and decided, but those its
	// upstream was down for (failed before they could wait).
	s.mu.Lock()
	verdicts := map[string]int{}
	for _, v := range s.approvals {
		verdicts[v]++
	}
	s.mu.Unlock()
	writes, decided := 0, 0
	for _, c := range calls {
		if c.caller == callerBot && c.tool == toolNote {
			writes++
			if c.decision != "" {
				decided++
			}
		}
	}
	if approvalEvents["requested"] != decided || approvalEvents["approved"] != verdicts["approved"] || approvalEvents["denied"] != verdicts["denied"] ||
		decided != verdicts["approved"]+verdicts["denied"] {
		t.Errorf("approvals: the bot made %d writes, %d of them decided; the approver approved %d and denied %d; the audit has %v",
			writes, decided, verdicts["approved"], verdicts["denied"], approvalEvents)
	}
	s.mu.Lock()
	reportFirst(t, "the approver's failures", s.decideFails)
	s.mu.Unlock()
}

// auditCaller is the caller an audit line names for a caller kind.
func auditCaller(kind string) string {
	if kind == callerAgent {
		return "agent " + namespace + "/" + agentName + " (pod " + namespace + "/" + agentPodName + ")"
	}
	return kind
}

// checkJournals: the upstreams got every call that ran exactly once, none
// that was refused, and never a secret a caller's filters hide.
func (s *soak) checkJournals(calls []*call) {
	t := s.t
	seen := map[string]int{}
	texts := map[string][]string{}
	for _, path := range []string{s.f.flakyJournal, s.f.hostileJrnl} {
		entries, err := readJournal(path)
		if err != nil {
			t.Errorf("journal %s: %v", path, err)
			continue
		}
		for _, e := range entries {
			seen[e.tool+" "+e.id]++
			texts[e.id] = append(texts[e.id], e.text)
		}
	}
	var bad []string
	ids := map[string]bool{}
	for _, c := range calls {
		if c.server == "everything" {
			continue
		}
		ids[c.tool+" "+c.id] = true
		n := seen[c.tool+" "+c.id]
		switch {
		case n > 1:
			bad = append(bad, fmt.Sprintf("%s %s (%s on %s, %s) reached the upstream %d times", c.id, c.tool, c.caller, c.face, c.outcome, n))
		case n == 1 && (c.outcome == outDenied || c.outcome == outApprovalDenied || c.outcome == outBudget || c.outcome == outLimited):
			bad = append(bad, fmt.Sprintf("%s %s (%s on %s) was refused (%s) and reached the upstream", c.id, c.tool, c.caller, c.face, c.outcome))
		case n == 0 && (c.outcome == outOK || c.outcome == outToolError):
			bad = append(bad, fmt.Sprintf("%s %s (%s on %s) answered %s and never reached the upstream", c.id, c.tool, c.caller, c.face, c.outcome))
		}
		if c.secret != "" && (c.caller == callerBot || c.caller == callerAgent) {
			for _, text := range texts[c.id] {
				if strings.Contains(text, c.secret) {
					bad = append(bad, fmt.Sprintf("%s: the upstream got %s's unfiltered argument %q", c.id, c.caller, text))
				}
			}
		}
	}
	for key, n := range seen {
		if !ids[key] {
			bad = append(bad, fmt.Sprintf("the upstream got %q %d times; the soak never made it", key, n))
		}
	}
	reportFirst(t, "calls the upstreams did not get exactly as allowed", bad)
}

// checkLogErrors: every error a replica logged is explained by an injected
// fault of its time: the flaky or hostile upstream, the kube-apiserver's
// restart.
func (s *soak) checkLogErrors(logs [][]logLine) {
	s.mu.Lock()
	flaps, restarts := slices.Clone(s.flaps), slices.Clone(s.apiRestarts)
	s.mu.Unlock()
	var bad []string
	explained := map[string]int{}
	for _, lines := range logs {
		for _, l := range lines {
			if l.Level != "error" && l.Level != "fatal" && l.Level != "panic" {
				continue
			}
			if why := explain(l, flaps, restarts); why != "" {
				explained[why]++
				continue
			}
			bad = append(bad, fmt.Sprintf("replica %d: %s", l.replica, trim(l.raw)))
		}
	}
	if len(explained) > 0 {
		s.t.Logf("errors in the replicas' logs, each explained by an injected fault: %s", fmtCounts(explained))
	}
	reportFirst(s.t, "errors in the replicas' logs that no injected fault explains", bad)
}

// explain names the injected fault that explains an error line, or "".
func explain(l logLine, flaps, restarts []window) string {
	at := l.at()
	within := func(ws []window, slack time.Duration) bool {
		for _, w := range ws {
			if !at.Before(w.from.Add(-slack)) && !at.After(w.to.Add(slack)) {
				return true
			}
		}
		return false
	}
	text := l.raw
	leaseTimeout := (strings.Contains(text, "resource lock") || strings.Contains(text, "leases/")) && strings.Contains(text, "context deadline exceeded")
	switch {
	case l.Server == "hostile" || strings.Contains(text, `"hostile"`):
		return "hostile upstream"
	case (l.Server == "flaky" || strings.Contains(text, "flaky")) && within(flaps, 3*time.Second):
		return "flaky upstream down"
	case within(restarts, 5*time.Second):
		return "kube-apiserver restart"
	case leaseTimeout:
		// client-go's leader election could not renew the Lease within
		// its deadline: the kube-apiserver (on this machine, under this
		// load) answered too late; the hub stops writing status, and
		// stands again.
		return "kube-apiserver too slow for a lease renewal"
	}
	return ""
}

// checkFaults: every fault was injected and recovered from, and every
// caller could connect.
func (s *soak) checkFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	reportFirst(s.t, "faults the fleet did not recover from in time", s.faultErrors)
	var bad []string
	refused := 0
	for _, e := range s.dialErrors {
		// The agent's token cannot be reviewed while the kube-apiserver
		// is down.
		if e.caller == callerAgent && (strings.Contains(e.err, "bearer token refused") || strings.Contains(e.err, "503")) && inWindow(s.apiRestarts, &call{start: e.at, end: e.at}, reviewSlack) {
			refused++
			continue
		}
		bad = append(bad, fmt.Sprintf("%s %s %s on %s: %s", e.at.Format(time.RFC3339), e.caller, e.face, e.base, e.err))
	}
	if refused > 0 {
		s.t.Logf("the agent's connections refused while the kube-apiserver was down (its token could not be reviewed): %d", refused)
	}
	reportFirst(s.t, "connections callers could not open", bad)
	if len(s.flaps) == 0 || s.reloads == 0 || len(s.apiRestarts) == 0 {
		s.t.Errorf("faults injected: %d flaps, %d reloads, %d kube-apiserver restarts; want each at least once", len(s.flaps), s.reloads, len(s.apiRestarts))
	}
}

// heldCall is one held call as GET /api/mcp/approvals lists it.
type heldCall struct {
	ID              string `json:"id"`
	ArgumentsSHA256 string `json:"argumentsSha256"`
	Args            struct {
		ID string `json:"id"`
	} `json:"arguments"`
}

func listApprovals(base, token string) ([]heldCall, error) {
	status, body, err := rest(http.MethodGet, base+"/api/mcp/approvals", token, "")
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("GET /api/mcp/approvals: %d %s", status, trim(body))
	}
	var l struct{ Approvals []heldCall }
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		return nil, err
	}
	return l.Approvals, nil
}

func decideApproval(base, token string, h heldCall, verdict string) error {
	body := `{"decision":"approve","argumentsSha256":"` + h.ArgumentsSHA256 + `"}`
	if verdict == "denied" {
		body = `{"decision":"deny","reason":"soak: denied ` + h.Args.ID + `"}`
	}
	status, answer, err := rest(http.MethodPost, base+"/api/mcp/approvals/"+h.ID, token, body)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("decide %s (%s): %d %s", h.ID, h.Args.ID, status, trim(answer))
	}
	return nil
}

func rest(method, u, token, body string) (int, string, error) {
	req, _ := http.NewRequest(method, u, bytes.NewReader([]byte(body)))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// resources is one replica's RSS and goroutines at rest: the median of a
// few samples.
type resources struct {
	inUse      float64 // bytes: VmRSS less the free heap the Go runtime keeps mapped (go_memstats_heap_idle_bytes - go_memstats_heap_released_bytes)
	rss        float64 // bytes, VmRSS
	anon, file float64 // bytes, RssAnon and RssFile: the process's own memory and the pages of its binary (and other files) it maps
	goroutines float64
	sessions   float64        // mcphub_sessions, all classes
	heap       float64        // go_memstats_heap_inuse_bytes, for the log
	stacks     map[string]int // goroutines by stack (--pprof), to say which grew
}

// collectGarbage makes every replica collect its garbage (pprof's heap
// profile with gc=1), so that what it holds at rest is what it keeps, not
// the garbage of the last calls. Twice: what sync.Pools held survives one
// collection (in their victim caches), and the pools hold what the last
// calls happened to leave, not what the hub keeps.
func collectGarbage(t *testing.T, f *fleet) {
	for i, addr := range f.pprof {
		for range 2 {
			if _, err := getText("http://" + addr + "/debug/pprof/heap?gc=1"); err != nil {
				t.Errorf("replica %d: collect garbage: %v", i, err)
				break
			}
		}
	}
}

// sampleFleet samples every replica five times, a second apart, and
// returns each one's medians.
func sampleFleet(t *testing.T, f *fleet, when string) []resources {
	const samples = 5
	raw := make([][]resources, len(f.hubs))
	for k := range samples {
		if k > 0 {
			time.Sleep(time.Second)
		}
		for i := range f.hubs {
			var r resources
			var err error
			var m map[string]float64
			if m, err = f.metrics(i, "go_goroutines", "go_memstats_heap_inuse_bytes", "go_memstats_heap_idle_bytes", "go_memstats_heap_released_bytes"); err == nil {
				r.rss, r.anon, r.file, err = procRSS(f.hubs[i].PID())
				r.goroutines, r.heap = m["go_goroutines"], m["go_memstats_heap_inuse_bytes"]
				if err == nil {
					r.sessions, err = f.metricSum(i, "mcphub_sessions")
				}
				r.inUse = r.rss - (m["go_memstats_heap_idle_bytes"] - m["go_memstats_heap_released_bytes"])
			}
			if err != nil {
				t.Errorf("sample replica %d %s: %v", i, when, err)
				continue
			}
			raw[i] = append(raw[i], r)
		}
	}
	out := make([]resources, len(f.hubs))
	var b strings.Builder
	for i, rs := range raw {
		out[i] = resources{inUse: median(rs, func(r resources) float64 { return r.inUse }), rss: median(rs, func(r resources) float64 { return r.rss }), goroutines: median(rs, func(r resources) float64 { return r.goroutines }),
			heap: median(rs, func(r resources) float64 { return r.heap }), anon: median(rs, func(r resources) float64 { return r.anon }),
			file: median(rs, func(r resources) float64 { return r.file }), sessions: median(rs, func(r resources) float64 { return r.sessions })}
		fmt.Fprintf(&b, " replica %d: RSS %.1f MiB in use of %.1f MiB (anonymous %.1f, file %.1f), %.0f goroutines, %.0f sessions, heap in use %.1f MiB;", i, out[i].inUse/(1<<20),
			out[i].rss/(1<<20), out[i].anon/(1<<20), out[i].file/(1<<20), out[i].goroutines, out[i].sessions, out[i].heap/(1<<20))
		out[i].stacks = goroutineStacks(f.pprof[i])
	}
	t.Logf("at rest %s:%s", when, strings.TrimSuffix(b.String(), ";"))
	return out
}

func median(rs []resources, v func(resources) float64) float64 {
	if len(rs) == 0 {
		return 0
	}
	vals := make([]float64, len(rs))
	for i, r := range rs {
		vals[i] = v(r)
	}
	sort.Float64s(vals)
	return vals[len(vals)/2]
}

// checkResources: each replica's RSS in use and goroutines at rest at the
// end are within tolerance of their level at rest after the warm-up.
//
// RSS in use is VmRSS less the free heap the Go runtime keeps mapped for
// its next allocations. The hub runs at GOGC=400 and the runtime returns
// free heap to the OS only above 1.1 times its heap goal: at rest, after a
// collection, VmRSS still holds the highest the heap reached under load,
// which says how many huge answers happened to be in flight at once, not
// what the hub keeps. VmRSS itself is logged.
func checkResources(t *testing.T, before, after []resources) {
	for i := range before {
		if i >= len(after) {
			break
		}
		b, a := before[i], after[i]
		t.Logf("replica %d: RSS in use %.1f -> %.1f MiB (%+.1f%%), goroutines %.0f -> %.0f (%+.1f%%); VmRSS %.1f -> %.1f MiB (%+.1f%%; anonymous %.1f -> %.1f, file %.1f -> %.1f), heap in use %.1f -> %.1f MiB",
			i, b.inUse/(1<<20), a.inUse/(1<<20), pct(b.inUse, a.inUse), b.goroutines, a.goroutines, pct(b.goroutines, a.goroutines),
			b.rss/(1<<20), a.rss/(1<<20), pct(b.rss, a.rss), b.anon/(1<<20), a.anon/(1<<20), b.file/(1<<20), a.file/(1<<20), b.heap/(1<<20), a.heap/(1<<20))
		if b.inUse <= 0 || a.inUse > b.inUse*(1+tolerance) {
			t.Errorf("replica %d: RSS in use grew from %.1f MiB after the warm-up to %.1f MiB at the end (limit +%.0f%%)", i, b.inUse/(1<<20), a.inUse/(1<<20), tolerance*100)
		}
		if grew := stackGrowth(b.stacks, a.stacks); b.goroutines == 0 || a.goroutines > b.goroutines*(1+tolerance) {
			t.Errorf("replica %d: goroutines grew from %.0f after the warm-up to %.0f at the end (limit +%.0f%%); the stacks that grew:\n%s",
				i, b.goroutines, a.goroutines, tolerance*100, grew)
		} else if grew != "" {
			t.Logf("replica %d: the stacks with more goroutines at the end:\n%s", i, grew)
		}
	}
}

func pct(before, after float64) float64 {
	if before == 0 {
		return 0
	}
	return (after/before - 1) * 100
}

// checkSessionsEnd: once every caller has closed its connections, every
// replica ends every session within http.sessionIdleTimeout (a DELETE
// may have landed on a replica that does not hold the session).
func (s *soak) checkSessionsEnd(closed time.Time) {
	err := s.waitFor(sessionIdle+20*time.Second, func() error {
		var left []string
		for i := range s.f.hubs {
			n, err := s.f.metricSum(i, "mcphub_sessions")
			if err != nil {
				return err
			}
			if n != 0 {
				left = append(left, fmt.Sprintf("replica %d: %.0f", i, n))
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("sessions left: %s", strings.Join(left, ", "))
		}
		return nil
	})
	if err != nil {
		s.t.Errorf("%v after every caller closed its connections (http.sessionIdleTimeout %v)", err, sessionIdle)
		return
	}
	s.t.Logf("every replica had ended every session %v after the callers closed their connections", time.Since(closed).Round(time.Second))
}

// goroutineStacks reads a replica's goroutines by stack from its pprof
// listener (nil when it cannot).
func goroutineStacks(addr string) map[string]int {
	body, err := getText("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return nil
	}
	out := map[string]int{}
	for block := range strings.SplitSeq(body, "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		var n int
		if len(lines) < 2 || !strings.Contains(lines[0], " @ ") {
			continue
		}
		if _, err := fmt.Sscanf(lines[0], "%d @", &n); err != nil {
			continue
		}
		var frames []string
		for _, l := range lines[1:] {
			fields := strings.Fields(l)
			if len(fields) >= 3 && fields[0] == "#" {
				fn := fields[2]
				if i := strings.LastIndex(fn, "+0x"); i > 0 {
					fn = fn[:i]
				}
				frames = append(frames, fn)
			}
		}
		out[strings.Join(frames, " < ")] += n
	}
	return out
}

// stackGrowth lists the stacks with more goroutines in after than in
// before, most first.
func stackGrowth(before, after map[string]int) string {
	type grew struct {
		stack string
		n     int
	}
	var gs []grew
	for st, n := range after {
		if d := n - before[st]; d > 0 {
			gs = append(gs, grew{st, d})
		}
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].n > gs[j].n })
	var b strings.Builder
	for _, g := range gs[:min(len(gs), 10)] {
		fmt.Fprintf(&b, "  +%d %s\n", g.n, trim(g.stack))
	}
	return b.String()
}

// procRSS reads a process's resident memory from /proc: VmRSS, RssAnon
// and RssFile, in bytes.
func procRSS(pid int) (rss, anon, file float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var kb float64
		if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%f kB", &kb); err != nil {
			continue
		}
		switch name {
		case "VmRSS":
			rss = kb * 1024
		case "RssAnon":
			anon = kb * 1024
		case "RssFile":
			file = kb * 1024
		}
	}
	if rss == 0 {
		return 0, 0, 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
	}
	return rss, anon, file, nil
}

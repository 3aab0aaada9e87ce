// Package soak runs the hub as a fleet for minutes under every kind of
// caller on every face while its surroundings fail, and checks that it
// stays whole: three replicas behind a round-robin balancer, callers with
// hub tokens (one whose writes wait for a person, an admin who approves
// them, one with a call budget per agent run), anonymous callers and an
// agent pod's ServiceAccount token, on Streamable HTTP (2025-11-25,
// 2025-03-26 and stateless 2026-07-28), legacy SSE, WebSocket and REST;
// content filters, budgets and approvals on; a stable upstream, one that
// is stopped and started again by its PID every 20 s, and a hostile one
// (slow, huge, flooding, malformed, failing answers) discovered from an
// MCPServer on a real kube-apiserver, which is stopped and started again;
// the replicas' config files rewritten every 30 s.
//
// At the end: every call ended as its caller, tool and the faults of its
// time allow; the replicas' audit holds each call exactly once, with the
// outcome its caller saw; no upstream ran a call twice, and none that was
// refused; no error in the replicas' logs that the injected faults do not
// explain; each replica's RSS and goroutines within 10% of their level
// after the warm-up.
//
// SOAK_DURATION sets the length of the load (default 2m; `make soak` runs
// 10m).
package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(envRole); role != "" {
		if err := runUpstream(role); err != nil {
			fmt.Fprintln(os.Stderr, "soak upstream:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Timing of the load and the faults.
const (
	defaultDuration = 2 * time.Minute
	thinkTime       = 1500 * time.Millisecond // a worker's mean pause between two plans
	reconnectEvery  = 40                      // calls on one connection before the worker opens a new one
	flapEvery       = 20 * time.Second
	flapDown        = 2 * time.Second
	reloadEvery     = 30 * time.Second
	apiserverDown   = 5 * time.Second
	settle          = 6 * time.Second // load stopped, before the resources are sampled
	callTimeout     = 150 * time.Second
	// tolerance is how far RSS and goroutines may grow from their level
	// after the warm-up.
	tolerance = 0.10
)

// soak is one run.
type soak struct {
	t      *testing.T
	f      *fleet
	ledger *ledger

	// gate: workers and faults hold it shared while they act; the
	// controller takes it to stop the load (to sample the replicas at
	// rest).
	gate sync.RWMutex

	mu          sync.Mutex
	flaps       []window // the flaky upstream down, until every replica has it again
	apiRestarts []window // the kube-apiserver down, until every replica is ready again
	reloads     int
	spare       bool // whether the config files list the spare server
	dialErrors  []dialError
	faultErrors []string
	approvals   map[string]string // approval id -> verdict given
	decideFails []string
}

// dialError is a connection a caller could not open.
type dialError struct {
	at                      time.Time
	caller, face, base, err string
}

// window is a time an injected fault lasted.
type window struct{ from, to time.Time }

func (w window) overlaps(from, to time.Time, slack time.Duration) bool {
	return !to.Before(w.from.Add(-slack)) && !from.After(w.to.Add(slack))
}

func TestSoak(t *testing.T) {
	duration := defaultDuration
	if s := os.Getenv("SOAK_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < time.Minute {
			t.Fatalf("SOAK_DURATION=%q: want a duration of at least 1m", s)
		}
		duration = d
	}
	began := time.Now()
	f := startFleet(t)
	s := &soak{t: t, f: f, ledger: newLedger(rand.Uint32()), approvals: map[string]string{}}
	t.Logf("fleet up in %v: %d replicas %s behind %s", time.Since(began).Round(time.Millisecond), replicas, f.peers, f.lb.Base)

	warmup := max(duration/5, 45*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i, kind := range callerKinds {
		for j, face := range faces {
			// A legacy SSE session and a WebSocket are bound to the
			// replica that holds their connection: those callers talk
			// to one replica (spread over the three), the others to
			// the balancer. (Through the balancer a WebSocket would
			// land on any replica, and each replica's goroutines at
			// rest would depend on where its sockets happened to be.)
			replica := -1
			if face == faceSSE || face == faceWS {
				replica = (i + j) % replicas
			}
			wg.Go(func() { s.worker(ctx, kind, face, replica, uint64(i*100+j)) })
		}
	}
	wg.Go(func() { s.approver(ctx) })
	wg.Go(func() { s.flapper(ctx) })
	wg.Go(func() { s.reloader(ctx) })
	wg.Go(func() { s.restarter(ctx, duration) })

	start := time.Now()
	sleepCtx(ctx, warmup)
	before := s.sampleAtRest("after the warm-up")
	sleepCtx(ctx, duration-time.Since(start))
	after := s.sampleAtRest("at the end")
	cancel()
	wg.Wait()
	loadTime := time.Since(start)
	s.checkSessionsEnd(time.Now())

	calls := s.ledger.snapshot()
	logs := make([][]logLine, replicas)
	for i, h := range f.hubs {
		out := h.Output()
		if strings.HasPrefix(out, "…") {
			t.Errorf("replica %d's output was cut (over hubtest's bound): the audit cannot be checked whole", i)
		}
		logs[i] = parseLog(i, out)
	}
	s.summary(calls, loadTime)
	s.checkCoverage(calls)
	s.checkOutcomes(calls)
	s.checkAudit(calls, logs)
	s.checkJournals(calls)
	s.checkLogErrors(logs)
	s.checkFaults()
	checkResources(t, before, after)
	if t.Failed() || os.Getenv("SOAK_KEEP_LOGS") != "" {
		keepLogs(t, f, calls)
	}
}

// keepLogs writes every replica's whole output and the upstreams'
// journals to a directory that outlives the test, and says where.
func keepLogs(t *testing.T, f *fleet, calls []*call) {
	dir, err := os.MkdirTemp("", "mcp-hub-soak-")
	if err != nil {
		t.Log(err)
		return
	}
	for i, h := range f.hubs {
		_ = os.WriteFile(fmt.Sprintf("%s/replica-%d.log", dir, i), []byte(h.Output()), 0o600)
	}
	for _, p := range []string{f.flakyJournal, f.hostileJrnl} {
		if b, err := os.ReadFile(p); err == nil {
			_ = os.WriteFile(dir+"/"+p[strings.LastIndexByte(p, '/')+1:], b, 0o600)
		}
	}
	var b strings.Builder
	for _, c := range calls {
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%q\n", c.id, c.trace, c.caller, c.face, c.replica, c.tool,
			c.start.Format("15:04:05.000"), c.end.Format("15:04:05.000"), c.outcome, c.decision, c.reply.text)
	}
	_ = os.WriteFile(dir+"/calls.tsv", []byte(b.String()), 0o600)
	t.Logf("the replicas' logs, the upstreams' journals and the calls (calls.tsv) are in %s", dir)
}

// sleepCtx sleeps d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// worker is one caller on one face: it makes plans of calls, one after
// another, with pauses between them, and opens a new connection now and
// then.
func (s *soak) worker(ctx context.Context, kind, face string, replica int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(time.Now().UnixNano())))
	base := s.f.lb.Base
	if replica >= 0 {
		base = s.f.hubs[replica].Base
	}
	token := s.f.token(kind)
	var c conn
	defer func() {
		if c != nil {
			c.close()
		}
	}()
	calls := 0
	// Start spread out, not all at once.
	sleepCtx(ctx, time.Duration(rng.Int64N(int64(thinkTime))))
	for ctx.Err() == nil {
		s.gate.RLock()
		if ctx.Err() != nil {
			s.gate.RUnlock()
			return
		}
		if c == nil || calls >= reconnectEvery {
			if c != nil {
				c.close()
				c = nil
			}
			dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			var err error
			c, err = dial(dctx, base, face, token)
			cancel()
			if err != nil {
				s.mu.Lock()
				s.dialErrors = append(s.dialErrors, dialError{time.Now(), kind, face, base, err.Error()})
				s.mu.Unlock()
				c = nil
				s.gate.RUnlock()
				sleepCtx(ctx, time.Second)
				continue
			}
			calls = 0
		}
		for _, st := range s.plan(kind, rng) {
			s.do(c, kind, face, replica, st)
			calls++
		}
		s.gate.RUnlock()
		think := float64(thinkTime) * (0.5 + rng.Float64())
		if kind == callerBudget {
			think *= 3 // a run is budgetRun calls
		}
		sleepCtx(ctx, time.Duration(think))
	}
}

// step is one call of a plan.
type step struct {
	tool, server string
	text         string // the text argument ("" for the everything server's tools, which take none)
	secret       string // what of text filters must hide
	run          int64
	runTrace     string
}

// plan is what kind does next: one call, or a budget run.
func (s *soak) plan(kind string, rng *rand.Rand) []step {
	if kind == callerBudget {
		run, trace := s.ledger.newRun()
		steps := make([]step, budgetRun)
		for i := range steps {
			steps[i] = step{tool: "test_simple_text", server: "everything", run: run, runTrace: trace}
		}
		return steps
	}
	menu := menus[kind]
	total := 0
	for _, e := range menu {
		total += e.weight
	}
	n := rng.IntN(total)
	for _, e := range menu {
		if n -= e.weight; n < 0 {
			return []step{e.make(rng)}
		}
	}
	panic("unreachable")
}

// menu entries: a kind of call and how often a caller makes it.
type entry struct {
	weight int
	make   func(rng *rand.Rand) step
}

var (
	echoPlain = func(rng *rand.Rand) step {
		return step{tool: toolEcho, server: "flaky", text: fmt.Sprintf("hello %d", rng.IntN(1e6))}
	}
	echoPII = func(rng *rand.Rand) step {
		mail := fmt.Sprintf("olga.kowalska%d@fabrikam.de", rng.IntN(1e6))
		return step{tool: toolEcho, server: "flaky", text: "write to " + mail + " today", secret: mail}
	}
	echoSecret = func(rng *rand.Rand) step {
		const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
		b := make([]byte, 36)
		for i := range b {
			b[i] = alnum[rng.IntN(len(alnum))]
		}
		token := "ghp_" + string(b)
		return step{tool: toolEcho, server: "flaky", text: "export GITHUB_TOKEN=" + token, secret: token}
	}
	note       = func(*rand.Rand) step { return step{tool: toolNote, server: "flaky", text: "a note"} }
	simple     = func(*rand.Rand) step { return step{tool: "test_simple_text", server: "everything"} }
	image      = func(*rand.Rand) step { return step{tool: "test_image_content", server: "everything"} }
	hostileOK  = func(rng *rand.Rand) step { return hostile([]string{toolSlow, toolHuge, toolFlood}[rng.IntN(3)]) }
	hostileBad = func(rng *rand.Rand) step {
		return hostile([]string{toolMalformed, toolBroken, toolFails}[rng.IntN(3)])
	}
	menus = map[string][]entry{
		callerBot:   {{4, echoPlain}, {2, echoPII}, {1, echoSecret}, {2, note}, {2, simple}, {2, hostileOK}, {1, hostileBad}},
		callerOps:   {{4, echoPlain}, {1, echoPII}, {2, note}, {2, simple}, {1, image}, {2, hostileOK}, {1, hostileBad}},
		callerAnon:  {{3, echoPlain}, {3, simple}, {1, note}, {1, func(*rand.Rand) step { return hostile(toolHuge) }}},
		callerAgent: {{2, echoPlain}, {2, echoPII}, {2, simple}, {1, note}, {1, hostileOK}},
	}
)

func hostile(tool string) step { return step{tool: tool, server: "hostile", text: "x"} }

// do makes one call and records it.
func (s *soak) do(c conn, kind, face string, replica int, st step) {
	rec, traceparent := s.ledger.begin(&call{caller: kind, face: face, replica: replica, tool: st.tool, server: st.server,
		text: st.text, secret: st.secret, run: st.run}, st.runTrace)
	var args map[string]any
	if st.server != "everything" {
		args = map[string]any{"id": rec.id, "text": st.text}
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	s.ledger.finish(rec, c.call(ctx, st.tool, args, traceparent))
}

// sampleAtRest stops the load (every worker ends its plan, every fault
// its recovery), lets the replicas settle, samples them, and lets the
// load go on.
//
// The replicas are compared at rest with the same catalog (everything,
// flaky, hostile: the spare server, which the reloads toggle, is taken
// out first) and the same connections open: each worker's, and no idle
// keep-alive connection of the soak's.
func (s *soak) sampleAtRest(when string) []resources {
	s.gate.Lock()
	defer s.gate.Unlock()
	if s.spare {
		s.spare = false
		s.reloadAll()
	}
	httpTransport.CloseIdleConnections()
	s.f.lb.CloseIdleConnections()
	time.Sleep(settle / 2)
	collectGarbage(s.t, s.f)
	time.Sleep(settle / 2)
	return sampleFleet(s.t, s.f, when)
}

// reloadAll writes every replica's config file with s.spare and waits
// until each one follows.
func (s *soak) reloadAll() {
	spare := s.spare
	for i := range s.f.hubs {
		s.f.writeConfig(i, spare)
	}
	for i := range s.f.hubs {
		err := s.waitFor(30*time.Second, func() error {
			if spare {
				return s.f.serversState(i, []string{"everything", "flaky", "hostile", "spare"})
			}
			return s.f.serversState(i, nil, "spare")
		})
		if err != nil {
			s.noteFault("config reload (spare %v) at %s: %v", spare, time.Now().Format(time.RFC3339), err)
		}
	}
	s.mu.Lock()
	s.reloads++
	s.mu.Unlock()
}

// approver decides every held call as the admin, through the balancer:
// it approves, and denies one in four (by the call's number).
func (s *soak) approver(ctx context.Context) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		held, err := listApprovals(s.f.lb.Base, opsToken)
		if err != nil {
			s.noteDecideFail("list: " + err.Error())
			continue
		}
		for _, h := range held {
			s.mu.Lock()
			_, done := s.approvals[h.ID]
			s.mu.Unlock()
			if done {
				continue
			}
			var seq int64
			if _, err := fmt.Sscanf(h.Args.ID, "c%d", &seq); err != nil {
				s.noteDecideFail(fmt.Sprintf("held call %s with arguments id %q", h.ID, h.Args.ID))
				continue
			}
			verdict := "approved"
			if seq%4 == 0 {
				verdict = "denied"
			}
			if err := decideApproval(s.f.lb.Base, opsToken, h, verdict); err != nil {
				s.noteDecideFail(err.Error())
				continue
			}
			s.mu.Lock()
			s.approvals[h.ID] = verdict
			s.mu.Unlock()
			if !s.ledger.decide(h.Args.ID, verdict) {
				s.noteDecideFail("decided a call the soak never made: " + h.Args.ID)
			}
		}
	}
}

func (s *soak) noteDecideFail(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.decideFails = append(s.decideFails, time.Now().Format(time.RFC3339)+" "+msg)
}

func (s *soak) noteFault(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faultErrors = append(s.faultErrors, fmt.Sprintf(format, args...))
}

// flapper stops the flaky upstream by its PID every flapEvery and starts
// it again flapDown later; the fault lasts until every replica has it
// connected again.
func (s *soak) flapper(ctx context.Context) {
	for {
		sleepCtx(ctx, flapEvery)
		if ctx.Err() != nil {
			return
		}
		s.gate.RLock()
		from := time.Now()
		s.f.stopFlaky()
		time.Sleep(flapDown)
		s.f.startFlaky()
		for i := range s.f.hubs {
			if err := s.waitFor(60*time.Second, func() error { return s.f.serversState(i, []string{"flaky"}) }); err != nil {
				s.noteFault("the flaky upstream back at %s: replica %d: %v", time.Now().Format(time.RFC3339), i, err)
			}
		}
		s.mu.Lock()
		s.flaps = append(s.flaps, window{from, time.Now()})
		s.mu.Unlock()
		s.gate.RUnlock()
	}
}

// reloader rewrites every replica's config file every reloadEvery,
// adding or removing the spare server, and checks that each replica
// follows.
func (s *soak) reloader(ctx context.Context) {
	for {
		sleepCtx(ctx, reloadEvery)
		if ctx.Err() != nil {
			return
		}
		s.gate.RLock()
		s.spare = !s.spare // only this goroutine and sampleAtRest, under the gate, touch it
		s.reloadAll()
		s.gate.RUnlock()
	}
}

// restarter stops the kube-apiserver and starts it again, at 45% of the
// load and then every 4 minutes while a minute of load is left, and
// checks that every replica is ready again and sees an MCPServer created
// after the restart (deleted again once seen).
func (s *soak) restarter(ctx context.Context, duration time.Duration) {
	begin := time.Now()
	for n, at := 1, time.Duration(float64(duration)*0.45); at < duration-time.Minute || n == 1; n, at = n+1, at+4*time.Minute {
		sleepCtx(ctx, at-time.Since(begin))
		if ctx.Err() != nil {
			return
		}
		s.gate.RLock()
		err := s.restartOnce(n)
		s.gate.RUnlock()
		if err != nil {
			s.noteFault("kube-apiserver restart %d: %v", n, err)
			return
		}
	}
}

// restartOnce is restart n.
func (s *soak) restartOnce(n int) error {
	stopped, ready, err := s.f.restartAPIServer(apiserverDown)
	if err != nil {
		return err
	}
	for i, h := range s.f.hubs {
		if err := s.waitFor(90*time.Second, func() error {
			body, err := getText(h.Base + "/readyz")
			if err == nil && strings.TrimSpace(body) != "ok" {
				err = fmt.Errorf("/readyz %q", strings.TrimSpace(body))
			}
			return err
		}); err != nil {
			s.noteFault("replica %d after kube-apiserver restart %d: %v", i, n, err)
		}
	}
	name := fmt.Sprintf("kprobe-%d", n)
	if err := s.f.createMCPServer(name, s.f.probeURL); err != nil {
		return err
	}
	for i := range s.f.hubs {
		if err := s.waitFor(90*time.Second, func() error { return s.f.serversState(i, []string{name}) }); err != nil {
			s.noteFault("replica %d after kube-apiserver restart %d: the MCPServer created after it: %v", i, n, err)
		}
	}
	// Deleted again, so that the replicas are sampled with the catalog
	// they had after the warm-up.
	if err := s.f.deleteMCPServer(name); err != nil {
		return err
	}
	for i := range s.f.hubs {
		if err := s.waitFor(90*time.Second, func() error { return s.f.serversState(i, nil, name) }); err != nil {
			s.noteFault("replica %d after kube-apiserver restart %d: the MCPServer deleted: %v", i, n, err)
		}
	}
	s.mu.Lock()
	s.apiRestarts = append(s.apiRestarts, window{stopped, time.Now()})
	s.mu.Unlock()
	s.t.Logf("kube-apiserver restart %d: down %v, ready again %v after it was stopped; every replica ready, and an MCPServer created after it listed and deleted again, %v after that",
		n, apiserverDown, ready.Sub(stopped).Round(time.Millisecond), time.Since(ready).Round(time.Millisecond))
	return nil
}

// waitFor polls cond every 200 ms until it holds or timeout passes.
func (s *soak) waitFor(timeout time.Duration, cond func() error) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return hubtest.Poll(ctx, 200*time.Millisecond, cond)
}

// summary logs what the soak did.
func (s *soak) summary(calls []*call, load time.Duration) {
	t := s.t
	byFace := map[string]map[string]int{}
	outcomes := map[string]int{}
	byTool := map[string]map[string]int{}
	for _, c := range calls {
		if byFace[c.caller] == nil {
			byFace[c.caller] = map[string]int{}
		}
		byFace[c.caller][c.face]++
		outcomes[c.outcome]++
		if byTool[c.tool] == nil {
			byTool[c.tool] = map[string]int{}
		}
		byTool[c.tool][c.outcome]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d calls in %v (%.1f/s)\ncalls by caller and face:\n%-10s", len(calls), load.Round(time.Second), float64(len(calls))/load.Seconds(), "")
	for _, f := range faces {
		fmt.Fprintf(&b, " %15s", f)
	}
	for _, k := range callerKinds {
		fmt.Fprintf(&b, "\n%-10s", k)
		for _, f := range faces {
			fmt.Fprintf(&b, " %15d", byFace[k][f])
		}
	}
	fmt.Fprintf(&b, "\noutcomes: %s\nby tool:", fmtCounts(outcomes))
	tools := make([]string, 0, len(byTool))
	for tool := range byTool {
		tools = append(tools, tool)
	}
	sort.Strings(tools)
	for _, tool := range tools {
		fmt.Fprintf(&b, "\n  %-18s %s", tool, fmtCounts(byTool[tool]))
	}
	s.mu.Lock()
	verdicts := map[string]int{}
	for _, v := range s.approvals {
		verdicts[v]++
	}
	fmt.Fprintf(&b, "\ninjected: %d flaps of the flaky upstream, %d config reloads, %d kube-apiserver restarts; approvals decided: %s",
		len(s.flaps), s.reloads, len(s.apiRestarts), fmtCounts(verdicts))
	s.mu.Unlock()
	fmt.Fprintf(&b, "\nbalancer spread over the replicas: %v", s.f.lb.Spread())
	api, etcd := s.f.cluster.PIDs()
	if s.f.apiserver != nil {
		api = s.f.apiserver.PID()
	}
	fmt.Fprintf(&b, "\nCPU used (s) since each started: this test %.0f, replicas", cpuSeconds(os.Getpid()))
	for _, h := range s.f.hubs {
		fmt.Fprintf(&b, " %.0f", cpuSeconds(h.PID()))
	}
	fmt.Fprintf(&b, ", kube-apiserver (since its last start) %.0f, etcd %.0f", cpuSeconds(api), cpuSeconds(etcd))
	t.Log(b.String())
}

// cpuSeconds is the CPU time a process has used (user and system), 0
// when it cannot be read.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command (which may hold spaces), from the third:
	// utime and stime are the 14th and 15th, in clock ticks (100/s).
	rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	var ut, st float64
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	return (ut + st) / 100
}

func fmtCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

// reportFirst fails t with the first few of problems, and their count.
func reportFirst(t *testing.T, what string, problems []string) {
	t.Helper()
	if len(problems) == 0 {
		return
	}
	shown := problems[:min(len(problems), 15)]
	t.Errorf("%s: %d, the first %d:\n  %s", what, len(problems), len(shown), strings.Join(shown, "\n  "))
}

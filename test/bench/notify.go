package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Notification latency (issue 6): an upstream tool sends progress and log
// messages while it runs, each stamped with its send time, and the client
// records when each one reaches it. Upstream and client share the machine's
// clock, so receive time minus send time is the notification's latency.
// The target: p99 within 5 ms through the hub, and none lost.

// notifyTool is the upstream's tool that sends notifications while it runs.
const notifyTool = "bench_notify"

const (
	targetNotifyP99 = 5.0 // ms, through the hub, progress and log messages each

	defaultNotifyCalls = 200
	notifyProgress     = 10                     // progress notifications per call
	notifyLogs         = 10                     // log messages per call
	notifyGap          = time.Millisecond       // between two notifications
	notifyTail         = 5 * time.Millisecond   // before the result: mcp-go may drop a notification sent right before it
	notifyGrace        = 100 * time.Millisecond // after the last call, for stragglers
)

// NotifyStats is the latency of one kind of notification at one target.
type NotifyStats struct {
	Expected   int     `json:"expected"`
	Received   int     `json:"received"`
	Lost       int     `json:"lost"`       // expected - received
	Duplicates int     `json:"duplicates"` // received more than once
	P50Ms      float64 `json:"p50Ms"`
	P99Ms      float64 `json:"p99Ms"`
	MaxMs      float64 `json:"maxMs"`
}

// NotifyResult is one target's notification latency.
type NotifyResult struct {
	Target   string      `json:"target"` // direct, proxy or hub
	Calls    int         `json:"calls"`  // measured calls (warm-up calls excluded)
	Errors   int         `json:"errors"` // failed calls
	Stray    int         `json:"stray"`  // notifications naming no call of this client
	Progress NotifyStats `json:"progress"`
	Log      NotifyStats `json:"log"`
}

// NotifyLatency compares the hub with the direct baseline (and a bare
// reverse proxy) for notifications sent during a call.
type NotifyLatency struct {
	Calls           int          `json:"calls"`
	ProgressPerCall int          `json:"progressPerCall"`
	LogsPerCall     int          `json:"logsPerCall"`
	GapMs           float64      `json:"gapMs"`
	Direct          NotifyResult `json:"direct"`
	Proxy           NotifyResult `json:"proxy"`
	Hub             NotifyResult `json:"hub"`
	TargetP99Ms     float64      `json:"targetP99Ms"`
	// MeetsTarget: through the hub, progress and log p99 are within
	// TargetP99Ms and nothing was lost.
	MeetsTarget bool `json:"meetsTarget"`
}

// addNotifyTool gives the upstream its notifying tool: arguments call (an id
// echoed in every notification), progress and logs (how many of each), gapUs
// (microseconds between two notifications) and tailMs (wait before the
// result). Progress is sent only when the request has a progress token; each
// notification carries sentAt, the upstream's time.Now().UnixNano() as a
// decimal string (a JSON number would lose nanoseconds on the way).
func addNotifyTool(s *server.MCPServer) {
	s.AddTool(mcp.NewTool(notifyTool,
		mcp.WithNumber("call"), mcp.WithNumber("progress"), mcp.WithNumber("logs"),
		mcp.WithNumber("gapUs"), mcp.WithNumber("tailMs"),
	), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		call := r.GetInt("call", 0)
		np := min(max(r.GetInt("progress", notifyProgress), 0), 10000)
		nl := min(max(r.GetInt("logs", notifyLogs), 0), 10000)
		gap := time.Duration(min(max(r.GetInt("gapUs", int(notifyGap/time.Microsecond)), 0), 1e6)) * time.Microsecond
		tail := time.Duration(min(max(r.GetInt("tailMs", int(notifyTail/time.Millisecond)), 0), 1000)) * time.Millisecond
		var token mcp.ProgressToken
		if r.Params.Meta != nil {
			token = r.Params.Meta.ProgressToken
		}
		var failed int
		sleep := func() bool {
			t := time.NewTimer(gap)
			defer t.Stop()
			select {
			case <-t.C:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for i := 0; i < max(np, nl); i++ {
			if i < np && token != nil {
				now := strconv.FormatInt(time.Now().UnixNano(), 10)
				if err := s.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
					"progressToken": token, "progress": i + 1, "total": np,
					"message": "sentAt=" + now, "sentAt": now, "seq": i,
				}); err != nil {
					failed++
				}
				if !sleep() {
					break
				}
			}
			if i < nl {
				now := strconv.FormatInt(time.Now().UnixNano(), 10)
				if err := s.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "bench",
					map[string]any{"call": call, "seq": i, "sentAt": now})); err != nil {
					failed++
				}
				if !sleep() {
					break
				}
			}
		}
		time.Sleep(tail)
		return mcp.NewToolResultText(fmt.Sprintf("call %d: %d progress, %d log messages, %d not sent", call, np, nl, failed)), nil
	})
}

// notifySample is one received notification.
type notifySample struct {
	log       bool
	call, seq int
	latency   time.Duration
}

// notifyCollector records the notifications one client receives.
type notifyCollector struct {
	mu      sync.Mutex
	samples []notifySample
	stray   int
}

func (nc *notifyCollector) handle(n mcp.JSONRPCNotification) {
	now := time.Now().UnixNano()
	f := n.Params.AdditionalFields
	s := notifySample{call: -1}
	var sent string
	switch mcp.MCPMethod(n.Method) {
	case mcp.MethodNotificationProgress:
		tok, _ := f["progressToken"].(string)
		if c, ok := strings.CutPrefix(tok, "bench-"); ok {
			s.call, _ = strconv.Atoi(c)
		}
		sent, _ = f["sentAt"].(string)
		s.seq = intOf(f["seq"])
	case mcp.MethodNotificationMessage:
		s.log = true
		d, _ := f["data"].(map[string]any)
		if d != nil {
			s.call = intOf(d["call"])
			s.seq = intOf(d["seq"])
			sent, _ = d["sentAt"].(string)
		}
	default:
		return // list changes and the like are not measured
	}
	at, err := strconv.ParseInt(sent, 10, 64)
	nc.mu.Lock()
	defer nc.mu.Unlock()
	if err != nil || s.call < 0 || s.seq < 0 {
		nc.stray++
		return
	}
	s.latency = time.Duration(now - at)
	nc.samples = append(nc.samples, s)
}

func intOf(v any) int {
	if f, ok := v.(float64); ok {
		return int(f)
	}
	return -1
}

// measureNotify calls notifyTool calls times, one call at a time on one
// session (an upstream's log messages belong to no request, so the hub
// relays them to the caller only while that caller's call is the only one
// in flight), after a few warm-up calls.
func measureNotify(ctx context.Context, url, target string, calls int) (NotifyResult, error) {
	httpClient := &http.Client{Transport: &http.Transport{MaxIdleConns: 16, MaxIdleConnsPerHost: 16, IdleConnTimeout: time.Minute}}
	defer httpClient.CloseIdleConnections()
	nc := &notifyCollector{}
	c, err := dialNotify(ctx, url, httpClient, nc.handle)
	if err != nil {
		return NotifyResult{}, fmt.Errorf("%s notification session: %w", target, err)
	}
	defer c.Close()
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = c.SetLevel(lctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelInfo}})
	cancel()
	if err != nil {
		return NotifyResult{}, fmt.Errorf("%s logging/setLevel: %w", target, err)
	}
	warm := max(1, min(10, calls/4))
	res := NotifyResult{Target: target, Calls: calls}
	for i := 0; i < warm+calls && ctx.Err() == nil; i++ {
		req := mcp.CallToolRequest{}
		req.Params.Name = notifyTool
		req.Params.Arguments = map[string]any{"call": i, "progress": notifyProgress, "logs": notifyLogs,
			"gapUs": int(notifyGap / time.Microsecond), "tailMs": int(notifyTail / time.Millisecond)}
		req.Params.Meta = &mcp.Meta{ProgressToken: fmt.Sprintf("bench-%d", i)}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		r, err := c.CallTool(cctx, req)
		cancel()
		if i >= warm && (err != nil || r.IsError) {
			res.Errors++
		}
	}
	select {
	case <-time.After(notifyGrace):
	case <-ctx.Done():
	}
	if ctx.Err() != nil {
		return NotifyResult{}, ctx.Err()
	}
	nc.mu.Lock()
	defer nc.mu.Unlock()
	res.Stray = nc.stray
	var prog, logs []time.Duration
	seen := map[[3]int]bool{}
	for _, s := range nc.samples {
		if s.call >= warm+calls {
			res.Stray++
			continue
		}
		if s.call < warm {
			continue
		}
		kind, st := 0, &res.Progress
		if s.log {
			kind, st = 1, &res.Log
		}
		k := [3]int{kind, s.call, s.seq}
		if seen[k] {
			st.Duplicates++
			continue
		}
		seen[k] = true
		if s.log {
			logs = append(logs, s.latency)
		} else {
			prog = append(prog, s.latency)
		}
	}
	res.Progress.fill(prog, calls*notifyProgress)
	res.Log.fill(logs, calls*notifyLogs)
	return res, nil
}

func (st *NotifyStats) fill(lat []time.Duration, expected int) {
	slices.Sort(lat)
	st.Expected, st.Received, st.Lost = expected, len(lat), expected-len(lat)
	if len(lat) > 0 {
		st.P50Ms = ms(lat[len(lat)/2])
		st.P99Ms = ms(lat[min(len(lat)-1, len(lat)*99/100)])
		st.MaxMs = ms(lat[len(lat)-1])
	}
}

// dialNotify opens a 2025-11-25 session (the revision with
// logging/setLevel and sessions) that also listens on the GET stream, so a
// notification sent outside the call's stream is received too.
func dialNotify(ctx context.Context, url string, hc *http.Client, onNotify func(mcp.JSONRPCNotification)) (*client.Client, error) {
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})) // no "listening to server forever"
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(hc), transport.WithContinuousListening(), transport.WithHTTPLogger(quiet))
	if err != nil {
		return nil, err
	}
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	c.OnNotification(onNotify)
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := c.Initialize(ictx, mcp.InitializeRequest{}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// runNotify measures notification latency directly, through the bare
// proxy and through the hub.
func runNotify(ctx context.Context, calls int, direct, proxy, hub string, progress func(string, ...any)) (*NotifyLatency, error) {
	n := &NotifyLatency{Calls: calls, ProgressPerCall: notifyProgress, LogsPerCall: notifyLogs,
		GapMs: float64(notifyGap) / float64(time.Millisecond), TargetP99Ms: targetNotifyP99}
	for _, t := range []struct {
		name, url string
		into      *NotifyResult
	}{{"direct", direct, &n.Direct}, {"proxy", proxy, &n.Proxy}, {"hub", hub, &n.Hub}} {
		progress("notification latency: %s, %d calls", t.name, calls)
		res, err := measureNotify(ctx, t.url, t.name, calls)
		if err != nil {
			return nil, err
		}
		*t.into = res
	}
	h := n.Hub
	n.MeetsTarget = h.Errors == 0 && h.Progress.Received > 0 && h.Log.Received > 0 &&
		h.Progress.P99Ms <= targetNotifyP99 && h.Log.P99Ms <= targetNotifyP99 &&
		h.Progress.Lost == 0 && h.Log.Lost == 0
	return n, nil
}

// writeTable prints the notification latencies.
func (n *NotifyLatency) writeTable(w io.Writer) {
	fmt.Fprintf(w, "\nnotification latency (ms, upstream send -> client receive): %d calls x (%d progress + %d log messages), %.0f ms apart, one session\n",
		n.Calls, n.ProgressPerCall, n.LogsPerCall, n.GapMs)
	fmt.Fprintf(w, "%-7s %9s %9s %9s %9s %9s %9s %11s %9s %7s\n", "target", "prog p50", "prog p99", "prog max", "log p50", "log p99", "log max", "lost p/log", "dup p/log", "errors")
	for _, r := range []NotifyResult{n.Direct, n.Proxy, n.Hub} {
		fmt.Fprintf(w, "%-7s %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %11s %9s %7d\n", r.Target,
			r.Progress.P50Ms, r.Progress.P99Ms, r.Progress.MaxMs, r.Log.P50Ms, r.Log.P99Ms, r.Log.MaxMs,
			fmt.Sprintf("%d/%d", r.Progress.Lost, r.Log.Lost), fmt.Sprintf("%d/%d", r.Progress.Duplicates, r.Log.Duplicates), r.Errors)
	}
	fmt.Fprintf(w, "hub - direct: progress p50 %+.3f p99 %+.3f, log p50 %+.3f p99 %+.3f\n",
		n.Hub.Progress.P50Ms-n.Direct.Progress.P50Ms, n.Hub.Progress.P99Ms-n.Direct.Progress.P99Ms,
		n.Hub.Log.P50Ms-n.Direct.Log.P50Ms, n.Hub.Log.P99Ms-n.Direct.Log.P99Ms)
	verdict := "MET"
	if !n.MeetsTarget {
		verdict = "NOT MET"
	}
	fmt.Fprintf(w, "target (issue 6): through the hub, progress and log p99 <= %.0f ms, none lost: %s\n", n.TargetP99Ms, verdict)
}

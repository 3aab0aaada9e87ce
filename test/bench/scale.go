package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// Benchmarks 3-6 share one upstream process that serves many upstreams
// (role "many"): /u0/mcp ... /u<N-1>/mcp, each its own mcp-go server with
// its own tools, half of them read-only by name and by annotation.
//
//	3: tools/list of the whole catalog through the hub (full and restricted)
//	4: memory of idle downstream sessions (idle.go)
//	5: tools/call spread over every upstream
//	6: start-up time (startup.go)

const (
	defaultScaleUpstreams = 100
	defaultScaleTools     = 100
	defaultFanout         = 64

	upstreamsEnv = "MCPHUB_BENCH_UPSTREAMS"
	toolsEnv     = "MCPHUB_BENCH_TOOLS"
)

// upstreamName is the hub's name for upstream i.
func upstreamName(i int) string { return fmt.Sprintf("svc%02d", i) }

// The tool catalog of one upstream: verbs x entities of a made-up service,
// read and write tools alternating, so any even count is half read-only.
var (
	services = []string{"Acme Tracker", "Northwind CRM", "Globex Billing", "Initech Docs", "Umbrella Monitoring",
		"Stark Deploy", "Wayne Storage", "Hooli Chat", "Soylent Inventory", "Vandelay Shipping"}
	entities = []string{"issue", "project", "milestone", "repository", "branch", "pull_request", "deployment", "incident",
		"alert", "dashboard", "customer", "invoice", "order", "product", "shipment", "document", "page", "channel",
		"message", "user", "team", "bucket", "volume", "snapshot", "cluster", "service", "secret", "ticket",
		"contract", "payment"}
	readVerbs  = []string{"get", "list", "search", "describe", "count"}
	writeVerbs = []string{"create", "update", "delete", "assign", "close"}
)

func plural(s string) string {
	if strings.HasSuffix(s, "y") {
		return s[:len(s)-1] + "ies"
	}
	return s + "s"
}

// scaleTools are upstream i's first n tools.
func scaleTools(i, n int) []mcp.Tool {
	svc := services[i%len(services)]
	var tools []mcp.Tool
	for k := 0; len(tools) < n; k++ {
		ent := entities[(i*7+k/10)%len(entities)]
		verb := k % 10 / 2
		if k%2 == 0 {
			tools = append(tools, readTool(readVerbs[verb], ent, svc))
		} else {
			tools = append(tools, writeTool(writeVerbs[verb], ent, svc))
		}
	}
	return tools
}

// readOnly marks a read tool. destructiveHint must be set to false too:
// mcp-go's NewTool defaults it to true, and the hub, trusting a server's
// annotations, lets destructiveHint=true win over readOnlyHint=true.
var readOnly mcp.ToolOption = func(t *mcp.Tool) {
	mcp.WithReadOnlyHintAnnotation(true)(t)
	mcp.WithDestructiveHintAnnotation(false)(t)
}

func readTool(verb, ent, svc string) mcp.Tool {
	e, es := strings.ReplaceAll(ent, "_", " "), strings.ReplaceAll(plural(ent), "_", " ")
	switch verb {
	case "get":
		return mcp.NewTool("get_"+ent,
			mcp.WithDescription(fmt.Sprintf("Get one %s from %s by its ID. Returns every field of the %s: identifiers, title, state, owner, labels and the created and updated timestamps. Use search_%s to find IDs by text.", e, svc, e, plural(ent))),
			mcp.WithString("id", mcp.Required(), mcp.Description("The "+e+"'s ID.")),
			readOnly, mcp.WithTitleAnnotation("Get "+e))
	case "list":
		return mcp.NewTool("list_"+plural(ent),
			mcp.WithDescription(fmt.Sprintf("List %s in %s, newest first, at most 100 per page. Filter by state; pass the cursor of the previous page to continue. Returns IDs and titles only: call get_%s for details.", es, svc, ent)),
			mcp.WithString("state", mcp.Enum("open", "closed", "all"), mcp.Description("Only "+es+" in this state; default open.")),
			mcp.WithNumber("limit", mcp.Description("Page size, 1-100.")),
			mcp.WithString("cursor", mcp.Description("Cursor from the previous page.")),
			readOnly, mcp.WithTitleAnnotation("List "+es))
	case "search":
		return mcp.NewTool("search_"+plural(ent),
			mcp.WithDescription(fmt.Sprintf("Full-text search over %s in %s. The query supports quoted phrases, field:value filters (state:, owner:, label:) and - to exclude a term. Results are ranked by relevance.", es, svc)),
			mcp.WithString("query", mcp.Required(), mcp.Description("Search query.")),
			mcp.WithNumber("limit", mcp.Description("Most results to return, 1-50.")),
			readOnly, mcp.WithTitleAnnotation("Search "+es))
	case "describe":
		return mcp.NewTool("describe_"+ent,
			mcp.WithDescription(fmt.Sprintf("Describe the schema of a %s in %s: its fields, their types, which are required and which can be changed later. Use it before creating or updating one.", e, svc)),
			readOnly, mcp.WithTitleAnnotation("Describe "+e))
	default: // count
		return mcp.NewTool("count_"+plural(ent),
			mcp.WithDescription(fmt.Sprintf("Count %s in %s that match a query, without returning them. Cheaper than list_%s when only the number matters.", es, svc, plural(ent))),
			mcp.WithString("query", mcp.Description("Same syntax as search; empty counts all.")),
			readOnly, mcp.WithTitleAnnotation("Count "+es))
	}
}

func writeTool(verb, ent, svc string) mcp.Tool {
	e := strings.ReplaceAll(ent, "_", " ")
	opts := []mcp.ToolOption{mcp.WithReadOnlyHintAnnotation(false), mcp.WithDestructiveHintAnnotation(verb == "delete"),
		mcp.WithTitleAnnotation(strings.ToUpper(verb[:1]) + verb[1:] + " " + e)}
	id := mcp.WithString("id", mcp.Required(), mcp.Description("The "+e+"'s ID."))
	switch verb {
	case "create":
		opts = append(opts, mcp.WithDescription(fmt.Sprintf("Create a %s in %s. A title is required; body, owner and labels are optional. Returns the new %s's ID and URL.", e, svc, e)),
			mcp.WithString("title", mcp.Required(), mcp.Description("Title, at most 256 characters.")),
			mcp.WithString("body", mcp.Description("Markdown body.")),
			mcp.WithArray("labels", mcp.WithStringItems(), mcp.Description("Labels to set.")))
	case "update":
		opts = append(opts, mcp.WithDescription(fmt.Sprintf("Update fields of a %s in %s. Only the fields given change. Returns the %s as it is after the change.", e, svc, e)),
			id, mcp.WithString("title", mcp.Description("New title.")),
			mcp.WithString("state", mcp.Enum("open", "closed"), mcp.Description("New state.")))
	case "delete":
		opts = append(opts, mcp.WithDescription(fmt.Sprintf("Delete a %s from %s permanently, with everything attached to it. This cannot be undone.", e, svc)), id)
	case "assign":
		opts = append(opts, mcp.WithDescription(fmt.Sprintf("Assign a %s in %s to a user or team, replacing the current assignee, who is notified.", e, svc)),
			id, mcp.WithString("assignee", mcp.Required(), mcp.Description("User or team handle.")))
	default: // close
		opts = append(opts, mcp.WithDescription(fmt.Sprintf("Close a %s in %s with an optional resolution and comment. A closed %s stays searchable.", e, svc, e)),
			id, mcp.WithString("resolution", mcp.Enum("done", "wontfix", "duplicate")), mcp.WithString("comment"))
	}
	return mcp.NewTool(verb+"_"+ent, opts...)
}

// manyHandler serves n upstreams with tools tools each, upstream i at
// /u<i>/mcp. Every tool answers at once with a short text.
func manyHandler(n, tools int) http.Handler {
	mux := http.NewServeMux()
	handler := func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(r.Params.Name + " ok " + r.GetString("id", "")), nil
	}
	for i := range n {
		s := server.NewMCPServer(upstreamName(i), "1", server.WithToolCapabilities(false))
		var st []server.ServerTool
		for _, t := range scaleTools(i, tools) {
			st = append(st, server.ServerTool{Tool: t, Handler: handler})
		}
		s.AddTools(st...)
		path := fmt.Sprintf("/u%d/mcp", i)
		mux.Handle(path, server.NewStreamableHTTPServer(s, server.WithEndpointPath(path)))
	}
	return mux
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// scaleSetup is the many-upstream process and a hub config listing it.
type scaleSetup struct {
	upstreams, tools int
	urls             []string // upstream i's /mcp URL
	names            []string // upstream i's name in the hub
	cfgPath          string
}

func (e *benchEnv) runScale(ctx context.Context, rep *Report) error {
	nUp, nTools := e.cfg.ScaleUpstreams, e.cfg.ScaleTools
	if nUp <= 0 {
		nUp = defaultScaleUpstreams
	}
	if nTools <= 0 {
		nTools = defaultScaleTools
	}
	e.progress("scale: one process serving %d upstreams x %d tools", nUp, nTools)
	up, upURL, err := e.startRole(ctx, "many", upstreamsEnv+"="+strconv.Itoa(nUp), toolsEnv+"="+strconv.Itoa(nTools))
	if err != nil {
		return fmt.Errorf("start the upstreams: %w", err)
	}
	defer up.Kill()
	s := &scaleSetup{upstreams: nUp, tools: nTools}
	var servers []map[string]any
	for i := range nUp {
		s.urls = append(s.urls, fmt.Sprintf("%s/u%d/mcp", upURL, i))
		s.names = append(s.names, upstreamName(i))
		servers = append(servers, map[string]any{"name": s.names[i], "url": s.urls[i], "transport": "streamable-http", "trustAnnotations": true})
	}
	if s.cfgPath, err = e.hubConfig("scale.yaml", servers); err != nil {
		return err
	}

	if e.cfg.selected(3) || e.cfg.selected(5) {
		args := []string{"--config", s.cfgPath}
		pprofAddr := ""
		if e.cfg.selected(3) {
			// Benchmark 3 reads the hub's heap, and with -profile profiles it.
			if pprofAddr, err = hubtest.FreeAddr(); err != nil {
				return err
			}
			args = append(args, "--pprof", pprofAddr)
		}
		hub, err := e.startHub(ctx, args...)
		if err != nil {
			return err
		}
		base := hub.Base
		listing, err := waitCatalog(ctx, base, s.names, time.Minute)
		if err != nil {
			hub.Kill()
			return err
		}
		if e.cfg.selected(3) {
			if rep.ToolsList, rep.ListProfile, err = e.runList(ctx, s, hub, pprofAddr); err != nil {
				hub.Kill()
				return fmt.Errorf("tools/list benchmark: %w", err)
			}
		}
		if e.cfg.selected(5) {
			if rep.Fanout, err = e.runFanout(ctx, s, base, listing); err != nil {
				hub.Kill()
				return fmt.Errorf("fan-out benchmark: %w", err)
			}
		}
		_ = hub.Stop(5 * time.Second)
	}
	if e.cfg.selected(4) {
		if rep.Idle, err = e.runIdle(ctx, s); err != nil {
			return fmt.Errorf("idle sessions benchmark: %w", err)
		}
	}
	if e.cfg.selected(6) {
		if rep.Startup, err = e.runStartup(ctx, s); err != nil {
			return fmt.Errorf("start-up benchmark: %w", err)
		}
	}
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "MET"
	}
	return "NOT MET"
}

// FanoutBench is benchmark 5: calls spread round-robin over every upstream
// and over each upstream's tools.
type FanoutBench struct {
	Upstreams       int     `json:"upstreams"`
	Concurrency     int     `json:"concurrency"`
	Direct          Result  `json:"direct"` // each session holds a session with every upstream
	Hub             Result  `json:"hub"`
	OverheadP50Ms   float64 `json:"overheadP50Ms"`
	OverheadP99Ms   float64 `json:"overheadP99Ms"`
	ThroughputRatio float64 `json:"throughputRatio"` // hub / direct
}

func (e *benchEnv) runFanout(ctx context.Context, s *scaleSetup, base string, listing *hubtest.Listing) (*FanoutBench, error) {
	n := e.cfg.FanoutConcurrency
	if n <= 0 {
		n = defaultFanout
	}
	// tools[i][j] is upstream i's tool j; published[i][j] its hub name.
	names := published(listing)
	tools := make([][]string, s.upstreams)
	published := make([][]string, s.upstreams)
	for i := range s.upstreams {
		for _, t := range scaleTools(i, s.tools) {
			p, ok := names[[2]string{s.names[i], t.Name}]
			if !ok {
				return nil, fmt.Errorf("the hub does not list %s's %s", s.names[i], t.Name)
			}
			tools[i] = append(tools[i], t.Name)
			published[i] = append(published[i], p)
		}
	}
	// pick is the k-th call's upstream and tool: every upstream in turn,
	// and each upstream's tools in turn.
	pick := func(k int64) (int, int) {
		return int(k % int64(s.upstreams)), int(k / int64(s.upstreams) % int64(s.tools))
	}
	hc := newHTTPClient(1024)
	defer hc.CloseIdleConnections()
	out := &FanoutBench{Upstreams: s.upstreams, Concurrency: n}
	var seq atomic.Int64
	e.progress("fan-out: %d sessions, each with a session to every one of %d upstreams, directly", n, s.upstreams)
	var err error
	out.Direct, err = measureCalls(ctx, "direct", n, e.cfg, window{}, func(ctx context.Context, _ int) (callFunc, func(), error) {
		cs := make([]*client.Client, s.upstreams)
		closeAll := func() {
			for _, c := range cs {
				if c != nil {
					c.Close()
				}
			}
		}
		for i := range cs {
			c, err := dial(ctx, s.urls[i], hc)
			if err != nil {
				closeAll()
				return nil, nil, fmt.Errorf("upstream %d: %w", i, err)
			}
			cs[i] = c
		}
		return func(ctx context.Context) error {
			u, t := pick(seq.Add(1))
			req := mcp.CallToolRequest{}
			req.Params.Name, req.Params.Arguments = tools[u][t], map[string]any{"id": "42"}
			return callTool(ctx, cs[u], req)
		}, closeAll, nil
	})
	if err != nil {
		return nil, err
	}
	e.progress("fan-out: %d sessions through the hub", n)
	seq.Store(0)
	out.Hub, err = measureCalls(ctx, "hub", n, e.cfg, window{}, func(ctx context.Context, _ int) (callFunc, func(), error) {
		c, err := dial(ctx, base+"/mcp", hc)
		if err != nil {
			return nil, nil, err
		}
		return func(ctx context.Context) error {
			u, t := pick(seq.Add(1))
			req := mcp.CallToolRequest{}
			req.Params.Name, req.Params.Arguments = published[u][t], map[string]any{"id": "42"}
			return callTool(ctx, c, req)
		}, func() { c.Close() }, nil
	})
	if err != nil {
		return nil, err
	}
	out.OverheadP50Ms, out.OverheadP99Ms = out.Hub.P50Ms-out.Direct.P50Ms, out.Hub.P99Ms-out.Direct.P99Ms
	out.ThroughputRatio = ratio(out.Hub.CallsPerSec, out.Direct.CallsPerSec)
	return out, nil
}

func (f *FanoutBench) writeTable(w io.Writer) {
	fmt.Fprintf(w, "\n[5] fan-out: tools/call round-robin over %d upstreams (and their tools), %d concurrent sessions\n", f.Upstreams, f.Concurrency)
	fmt.Fprintf(w, "%-7s %9s %9s %11s %7s\n", "target", "p50 ms", "p99 ms", "calls/s", "errors")
	for _, r := range []Result{f.Direct, f.Hub} {
		fmt.Fprintf(w, "%-7s %9.3f %9.3f %11.0f %7d\n", r.Target, r.P50Ms, r.P99Ms, r.CallsPerSec, r.Errors)
	}
	fmt.Fprintf(w, "hub - direct: p50 %+.3f ms, p99 %+.3f ms; throughput %.2fx\n", f.OverheadP50Ms, f.OverheadP99Ms, f.ThroughputRatio)
}

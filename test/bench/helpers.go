package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// Helpers shared by benchmarks 2-6: raw MCP sessions (no client library
// between the clock and the wire), the hub's JSON listing, hub configs,
// and process figures read from /proc.

// rawProtocol is the revision raw sessions speak: the one with sessions and
// the standalone GET stream an idle IDE session holds.
const rawProtocol = "2025-11-25"

// rawSession is one MCP session over Streamable HTTP, spoken with net/http.
type rawSession struct {
	hc      *http.Client
	url     string
	id      string   // Mcp-Session-Id
	headers []string // name, value pairs sent on every request
	seq     atomic.Int64
}

// rpcReply is one JSON-RPC response and what it cost.
type rpcReply struct {
	Result  json.RawMessage
	Elapsed time.Duration // request sent -> body read to the end
	Bytes   int           // body length
}

// openRaw initializes a session: initialize, then notifications/initialized.
func openRaw(ctx context.Context, hc *http.Client, url string, headers ...string) (*rawSession, error) {
	s := &rawSession{hc: hc, url: url, headers: headers}
	_, hdr, err := s.call(ctx, "initialize", map[string]any{
		"protocolVersion": rawProtocol,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "mcp-hub-bench", "version": "1"},
	})
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if s.id = hdr.Get("Mcp-Session-Id"); s.id == "" {
		return nil, errors.New("initialize: no Mcp-Session-Id")
	}
	resp, err := s.hc.Do(s.request(ctx, http.MethodPost, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)))
	if err != nil {
		return nil, fmt.Errorf("notifications/initialized: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("notifications/initialized: %s", resp.Status)
	}
	return s, nil
}

func (s *rawSession) request(ctx context.Context, method string, body []byte) *http.Request {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(ctx, method, s.url, rd)
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("MCP-Protocol-Version", rawProtocol)
	}
	for i := 0; i+1 < len(s.headers); i += 2 {
		req.Header.Set(s.headers[i], s.headers[i+1])
	}
	return req
}

// call sends one request and returns its result; the reply may be JSON or
// an SSE stream that carries it.
func (s *rawSession) call(ctx context.Context, method string, params any) (rpcReply, http.Header, error) {
	id := s.seq.Add(1)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return rpcReply{}, nil, err
	}
	req := s.request(ctx, http.MethodPost, body)
	t0 := time.Now()
	resp, err := s.hc.Do(req)
	if err != nil {
		return rpcReply{}, nil, err
	}
	data, err := io.ReadAll(resp.Body)
	elapsed := time.Since(t0)
	resp.Body.Close()
	if err != nil {
		return rpcReply{}, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return rpcReply{}, nil, fmt.Errorf("%s: %s: %.200s", method, resp.Status, data)
	}
	msg := data
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		if msg = sseReply(data, id); msg == nil {
			return rpcReply{}, nil, fmt.Errorf("%s: no reply in the event stream", method)
		}
	}
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg, &env); err != nil {
		return rpcReply{}, nil, fmt.Errorf("%s: %w", method, err)
	}
	if env.Error != nil {
		return rpcReply{}, nil, fmt.Errorf("%s: error %d: %s", method, env.Error.Code, env.Error.Message)
	}
	return rpcReply{Result: env.Result, Elapsed: elapsed, Bytes: len(data)}, resp.Header, nil
}

// sseReply finds the response with the given id among an event stream's
// data lines.
func sseReply(stream []byte, id int64) []byte {
	for line := range bytes.SplitSeq(stream, []byte("\n")) {
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:"))
		if !ok {
			continue
		}
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(data, &m) == nil && string(m.ID) == strconv.FormatInt(id, 10) {
			return bytes.TrimSpace(data)
		}
	}
	return nil
}

// listTools lists every tool, following nextCursor. The elapsed time is
// the sum of the pages' round trips; decoding them is left off the clock.
func (s *rawSession) listTools(ctx context.Context) (tools, pages, size int, elapsed time.Duration, err error) {
	cursor := ""
	for {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		r, _, err := s.call(ctx, "tools/list", params)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		pages++
		size += r.Bytes
		elapsed += r.Elapsed
		var page struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(r.Result, &page); err != nil {
			return 0, 0, 0, 0, fmt.Errorf("tools/list: %w", err)
		}
		tools += len(page.Tools)
		if cursor = page.NextCursor; cursor == "" {
			return tools, pages, size, elapsed, nil
		}
		if pages > 10000 {
			return 0, 0, 0, 0, errors.New("tools/list: more than 10000 pages")
		}
	}
}

// listen opens the session's standalone GET stream and returns it open.
func (s *rawSession) listen(ctx context.Context) (*http.Response, error) {
	resp, err := s.hc.Do(s.request(ctx, http.MethodGet, nil))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, fmt.Errorf("GET stream: %s %s: %s", resp.Status, resp.Header.Get("Content-Type"), data)
	}
	return resp, nil
}

// published maps (server, original tool name) to the name the hub
// publishes; the listing must have tools as objects.
func published(l *hubtest.Listing) map[[2]string]string {
	m := map[[2]string]string{}
	for _, sv := range l.Servers {
		tools, _ := sv.ToolObjects()
		for _, t := range tools {
			orig := t.OriginalName
			if orig == "" {
				orig = t.Name
			}
			m[[2]string{sv.Name, orig}] = t.Name
		}
	}
	return m
}

// waitCatalog waits until the hub at base lists every server of want as
// connected, and returns that listing.
func waitCatalog(ctx context.Context, base string, want []string, timeout time.Duration) (*hubtest.Listing, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var complete *hubtest.Listing
	err := hubtest.Poll(ctx, 20*time.Millisecond, func() error {
		l, err := hubtest.FetchListing(ctx, http.DefaultClient, base, "")
		if err != nil {
			return err
		}
		if !l.Connected(want...) {
			bad := 0
			for _, sv := range l.Servers {
				if sv.Status != "connected" {
					bad++
				}
			}
			return fmt.Errorf("%d servers listed, %d not connected, want %d", len(l.Servers), bad, len(want))
		}
		complete = l
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("the hub's catalog never completed: %w", err)
	}
	return complete, nil
}

// hubConfig writes a hub config file with servers and no builtins (only
// the upstreams' tools count). JSON is YAML.
func (e *benchEnv) hubConfig(name string, servers []map[string]any) (string, error) {
	cfg := map[string]any{
		"servers": servers,
		"builtins": map[string]any{
			"staticAnalysis":  map[string]any{"enabled": false},
			"triggerWorkflow": map[string]any{"enabled": false},
		},
		// Every benchmark client is one anonymous caller at one address;
		// benchmark 4 opens 10,000 sessions from it, over the default
		// per-caller cap of 1,000 (benchmark 7 tests that cap itself).
		"http": map[string]any{"maxSessions": 20000, "maxSessionsPerCaller": 20000},
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(e.tmp, name)
	return path, os.WriteFile(path, data, 0o644)
}

// startHub starts the hub with args (log level info), once it has said
// where it listens.
func (e *benchEnv) startHub(ctx context.Context, args ...string) (*hubtest.Hub, error) {
	h, err := hubtest.LaunchHub(ctx, hubtest.HubOptions{Bin: e.hubBin, LogLevel: "info", Args: args})
	if err != nil {
		return nil, fmt.Errorf("start hub: %w", err)
	}
	return h, nil
}

// procStatus reads a field of /proc/<pid>/status in kB (VmRSS, VmHWM).
func procStatus(pid int, field string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				return strconv.ParseInt(f[0], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, field)
}

// openFilesLimit reads the soft and hard RLIMIT_NOFILE of a process.
func openFilesLimit(pid int) (soft, hard string) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return "?", "?"
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Max open files"); ok {
			if f := strings.Fields(v); len(f) >= 2 {
				return f[0], f[1]
			}
		}
	}
	return "?", "?"
}

// raiseOpenFiles sets this process's soft RLIMIT_NOFILE to the hard limit.
// Setting it explicitly (rather than relying on the Go runtime, which
// raises it for itself only) makes child processes inherit it.
func raiseOpenFiles() (before, after uint64, err error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, err
	}
	before = rl.Cur
	rl.Cur = rl.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return before, before, err
	}
	return before, rl.Cur, nil
}

// median of values; 0 for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// medianBy is the median of one figure of runs.
func medianBy[T any](runs []T, figure func(T) float64) float64 {
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = figure(r)
	}
	return median(v)
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

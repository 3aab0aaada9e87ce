package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestTracingSettingsTheHubCannotHonourStopStart: an OTEL_* setting the hub
// cannot honour fails start-up with the variable's name, rather than a hub
// that silently exports nothing.
func TestTracingSettingsTheHubCannotHonourStopStart(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"OTEL_TRACES_EXPORTER=zipkin"}, `OTEL_TRACES_EXPORTER: "zipkin"`},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, `OTEL_EXPORTER_OTLP_PROTOCOL: "grpc"`},
	} {
		cmd := exec.Command(hubBin, "serve", "--listen", "127.0.0.1:0")
		cmd.Env = append(cmd.Environ(), tc.env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if exitCode(err) != 1 || !strings.Contains(jsonSaid(t, stderr.String()), "tracing: "+tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", tc.env, exitCode(err), stderr.String(), tc.want)
		}
	}
}

// TestTracesFlushedOnShutdown: spans still buffered when the hub is stopped
// reach the OTLP endpoint before it exits. The batch delay is far longer
// than the test, so only the flush on SIGTERM can have sent them.
func TestTracesFlushedOnShutdown(t *testing.T) {
	var exports atomic.Int64
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/v1/traces" {
			exports.Add(1)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer sink.Close()
	upURL, _ := startUpstream(t)
	h := startHub(t, []string{
		`MCP_SERVERS=[{"name":"up","url":"` + upURL + `"}]`,
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + sink.URL,
		"OTEL_BSP_SCHEDULE_DELAY=600000",
	})
	waitStatus(t, h, "up", "connected")
	req, _ := http.NewRequest(http.MethodPost, h.MCPURL(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "echo:x") {
		t.Fatalf("tools/call: %s", body)
	}
	time.Sleep(200 * time.Millisecond)
	if n := exports.Load(); n != 0 {
		t.Fatalf("%d exports before shutdown with a 10 min batch delay", n)
	}
	terminate(t, h)
	if exports.Load() == 0 {
		t.Fatalf("no spans exported on shutdown:\n%s", h.Output())
	}
}

package restrun

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/pipeline"
)

// TestRestToolCall: a body is the arguments of the call as one JSON
// object, read as strictly as /mcp reads them.
func TestRestToolCall(t *testing.T) {
	for _, tc := range []struct {
		name, body, args, err string
	}{
		{"empty body", "", `{}`, ""},
		{"blank body", " \n", `{}`, ""},
		{"object", `{"q":"x"}`, `{"q":"x"}`, ""},
		{"array", `[1]`, "", "not one JSON object"},
		{"members appended", `{}, "_meta": {}`, "", "the body must be the tool's arguments"},
		{"member twice", `{"a":1,"a":2}`, "", "the body must be the tool's arguments"},
		{"not JSON", `{`, "", "the body must be the tool's arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call, err := restToolCall("echo", []byte(tc.body))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || call.Name != "echo" || string(call.Arguments) != tc.args {
				t.Fatalf("call %s %s, err %v; want echo %s", call.Name, call.Arguments, err, tc.args)
			}
		})
	}
}

// TestRunStatus: how a call ended is the HTTP status; a tool's own failure
// is a result like any other.
func TestRunStatus(t *testing.T) {
	for outcome, want := range map[pipeline.Outcome]int{
		pipeline.OK: 200, pipeline.ToolError: 200, pipeline.Denied: 403, pipeline.Quarantined: 403,
		pipeline.Unavailable: 503, pipeline.Canceled: 503, pipeline.Unknown: 404, pipeline.RateLimited: 429,
		pipeline.RPCError: 502, pipeline.Error: 502,
	} {
		if got := runStatus(outcome); got != want {
			t.Errorf("runStatus(%v) = %d, want %d", outcome, got, want)
		}
	}
}

// TestWriteError: the one REST error body, and a rate limit's retry.
func TestWriteError(t *testing.T) {
	w := httptest.NewRecorder()
	WriteError(w, http.StatusTooManyRequests, &jsonrpc.Error{Code: -32005, Message: "rate limited", Data: json.RawMessage(`{"retryAfterMs":1500}`)})
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if w.Code != 429 || body["error"] != "rate limited" || body["code"] != float64(-32005) || body["retryAfterMs"] != float64(1500) || w.Header().Get("Retry-After") != "2" {
		t.Fatalf("status %d, Retry-After %q, body %v", w.Code, w.Header().Get("Retry-After"), body)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/approvals"
	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
)

// TestApprovalsCLI drives mcp-hub approvals against the hub's own REST
// handlers: list (table, wide, json), deny with a reason that reaches the
// held call, approve, and the hub's refusals as exit 1 with its words.
func TestApprovalsCLI(t *testing.T) {
	gate := approvals.New(approvals.Options{})
	defer gate.Close()
	who := map[string]callers.Caller{
		"ops-secret": {Name: "ops", Admin: true, Level: autonomy.Full},
		"bot-secret": {Name: "bot", Level: autonomy.Supervised},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/mcp/approvals", gate.HandleList)
	mux.HandleFunc("POST /api/mcp/approvals/{id}", gate.HandleDecide)
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := who[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if !ok {
			http.Error(w, `{"error":"bearer token refused"}`, http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r.WithContext(callers.With(r.Context(), c)))
	}))
	defer hub.Close()
	t.Setenv("MCP_HUB_URL", hub.URL)
	cli := func(token string, args ...string) (string, string, int) {
		t.Setenv("MCP_HUB_TOKEN", token)
		var out, errb bytes.Buffer
		code := run(append([]string{"approvals"}, args...), &out, &errb)
		return out.String(), errb.String(), code
	}
	hold := func(pr string) <-chan approvals.Decision {
		done := make(chan approvals.Decision, 1)
		go func() {
			done <- gate.Hold(context.Background(), approvals.Request{Caller: who["bot-secret"], Tool: "merge_pull_request", Server: "github",
				Arguments: json.RawMessage(`{"pr":` + pr + `}`)})
		}()
		return done
	}
	idOf := func(pr string) string {
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			for _, p := range gate.List(who["ops-secret"]) {
				if string(p.Arguments) == `{"pr":`+pr+`}` {
					return p.ID
				}
			}
			time.Sleep(time.Millisecond)
		}
		t.Fatalf("call %s not held", pr)
		return ""
	}

	if out, _, code := cli("ops-secret", "list"); code != 0 || out != "no calls wait for approval\n" {
		t.Fatalf("empty list: %d %q", code, out)
	}
	first := hold("7")
	id := idOf("7")
	out, _, code := cli("ops-secret", "list")
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "merge_pull_request") || !strings.Contains(out, `{"pr":7}`) ||
		!strings.Contains(out, "approve: mcp-hub approvals approve ID") {
		t.Fatalf("list: %d %s", code, out)
	}
	if out, _, _ := cli("ops-secret", "list", "-o", "wide"); !strings.Contains(out, "SHA256") {
		t.Errorf("wide list: %s", out)
	}
	if out, _, _ := cli("ops-secret", "list", "-o", "json"); !strings.Contains(out, `"argumentsSha256"`) {
		t.Errorf("json list: %s", out)
	}
	if _, stderr, code := cli("bot-secret", "approve", id); code != 1 || !strings.Contains(stderr, "bot may not decide held calls") {
		t.Fatalf("the caller approving its own call: %d %s", code, stderr)
	}
	if _, stderr, code := cli("ops-secret", "approve"); code == 0 || !strings.Contains(stderr, "the approval ID") {
		t.Fatalf("approve without an ID: %d %s", code, stderr)
	}
	if out, stderr, code := cli("ops-secret", "deny", id, "--reason", "release freeze"); code != 0 || out != id+" denied: release freeze\n" {
		t.Fatalf("deny: %d %q %s", code, out, stderr)
	}
	if d := <-first; d.Verdict != approvals.Denied || d.Reason != "release freeze" {
		t.Fatalf("the held call: %+v", d)
	}
	second := hold("8")
	id = idOf("8")
	if _, stderr, code := cli("ops-secret", "approve", id, "--sha256", strings.Repeat("0", 64)); code != 1 || !strings.Contains(stderr, "not the ones shown") {
		t.Fatalf("approve with another digest: %d %s", code, stderr)
	}
	if out, _, code := cli("ops-secret", "approve", id); code != 0 || out != id+" approved\n" {
		t.Fatalf("approve: %d %q", code, out)
	}
	if d := <-second; d.Verdict != approvals.Approved || d.By != "ops" {
		t.Fatalf("the held call: %+v", d)
	}
	if _, stderr, code := cli("ops-secret", "approve", id); code != 1 || !strings.Contains(stderr, "already decided") {
		t.Fatalf("a replay: %d %s", code, stderr)
	}
}

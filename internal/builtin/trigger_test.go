package builtin

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

const triggerTestToken = "dash-T0KEN-secret-77"

type triggerSeen struct {
	Method, Path, RawPath string
	Header                http.Header
	Body                  string
}

func triggerServer(t *testing.T, status int, reply string) (*httptest.Server, func() []triggerSeen) {
	t.Helper()
	var mu sync.Mutex
	var seen []triggerSeen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, triggerSeen{r.Method, r.URL.Path, r.URL.RawPath, r.Header.Clone(), string(b)})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, reply)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []triggerSeen {
		mu.Lock()
		defer mu.Unlock()
		return append([]triggerSeen(nil), seen...)
	}
}

func triggerText(t *testing.T, res *mcp.CallToolResult, wantErr bool) string {
	t.Helper()
	if res == nil {
		t.Fatal("nil result")
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			b.WriteString(tc.Text)
		}
	}
	txt := b.String()
	if res.IsError != wantErr {
		t.Fatalf("IsError = %v, want %v: %s", res.IsError, wantErr, txt)
	}
	if strings.Contains(txt, triggerTestToken) {
		t.Fatalf("result leaks the token: %s", txt)
	}
	return txt
}

func TestTriggerWorkflowRequest(t *testing.T) {
	const reply = `{"run":"review-abc12","namespace":"team-a","workflow":"review"}`
	cases := []struct {
		name     string
		args     map[string]any
		wantPath string
		wantRaw  string
		wantBody string
	}{
		{"object payload", map[string]any{"workflow": "review", "namespace": "team-a", "payload": map[string]any{"pr": float64(12), "repo": "x"}},
			"/api/trigger/team-a/review", "", `{"pr":12,"repo":"x"}`},
		{"JSON string payload", map[string]any{"workflow": "review", "namespace": "team-a", "payload": `{"pr": 12}`},
			"/api/trigger/team-a/review", "", `{"pr":12}`},
		{"plain string payload", map[string]any{"workflow": "review", "namespace": "team-a", "payload": "check PR 12"},
			"/api/trigger/team-a/review", "", `{"task":"check PR 12"}`},
		{"string that is JSON but not an object", map[string]any{"workflow": "review", "namespace": "team-a", "payload": `[1,2]`},
			"/api/trigger/team-a/review", "", `{"task":"[1,2]"}`},
		{"no payload, default namespace", map[string]any{"workflow": "review"},
			"/api/trigger/default-ns/review", "", `{}`},
		{"names are path-escaped", map[string]any{"workflow": "a/b c", "namespace": "team-a"},
			"/api/trigger/team-a/a/b c", "/api/trigger/team-a/a%2Fb%20c", `{}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, seen := triggerServer(t, http.StatusAccepted, reply)
			_, h := TriggerWorkflow(TriggerOptions{DashboardURL: srv.URL + "/", DefaultNamespace: "default-ns", Token: triggerTestToken})
			txt := triggerText(t, h(context.Background(), tc.args, nil), false)
			if txt != reply {
				t.Errorf("text %q", txt)
			}
			reqs := seen()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			r := reqs[0]
			if r.Method != http.MethodPost || r.Path != tc.wantPath {
				t.Errorf("request %s %s, want POST %s", r.Method, r.Path, tc.wantPath)
			}
			if tc.wantRaw != "" && r.RawPath != tc.wantRaw {
				t.Errorf("raw path %q, want %q", r.RawPath, tc.wantRaw)
			}
			if r.Body != tc.wantBody {
				t.Errorf("body %s, want %s", r.Body, tc.wantBody)
			}
			for k, v := range map[string]string{"Content-Type": "application/json", "X-Trigger-Source": "mcp-hub", "Authorization": "Bearer " + triggerTestToken} {
				if got := r.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestTriggerWorkflowNoToken(t *testing.T) {
	srv, seen := triggerServer(t, http.StatusOK, `{"run":"r1"}`)
	_, h := TriggerWorkflow(TriggerOptions{DashboardURL: srv.URL, DefaultNamespace: "ns"})
	triggerText(t, h(context.Background(), map[string]any{"workflow": "w"}, nil), false)
	if a := seen()[0].Header.Get("Authorization"); a != "" {
		t.Errorf("Authorization = %q without a token", a)
	}
}

func TestTriggerWorkflowErrors(t *testing.T) {
	long := strings.Repeat("z", 1000)
	srv, _ := triggerServer(t, http.StatusNotFound, `workflow not found `+triggerTestToken+" "+long)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()

	cases := []struct {
		name string
		opts TriggerOptions
		args map[string]any
		want []string
	}{
		{"non-2xx", TriggerOptions{DashboardURL: srv.URL, DefaultNamespace: "ns", Token: triggerTestToken},
			map[string]any{"workflow": "w"}, []string{"404", "workflow not found", "[redacted]"}},
		{"unreachable", TriggerOptions{DashboardURL: closed, DefaultNamespace: "ns", Token: triggerTestToken, Timeout: 2 * time.Second},
			map[string]any{"workflow": "w"}, []string{"unreachable", ln.Addr().String()}},
		{"no dashboard", TriggerOptions{}, map[string]any{"workflow": "w", "namespace": "n"}, []string{"dashboard URL"}},
		{"no workflow", TriggerOptions{DashboardURL: srv.URL, DefaultNamespace: "ns"}, map[string]any{}, []string{`"workflow" is required`}},
		{"workflow not a string", TriggerOptions{DashboardURL: srv.URL, DefaultNamespace: "ns"}, map[string]any{"workflow": 3.0}, []string{`"workflow" must be a string`}},
		{"no namespace", TriggerOptions{DashboardURL: srv.URL}, map[string]any{"workflow": "w"}, []string{`"namespace" is required`}},
		{"dot-dot name", TriggerOptions{DashboardURL: srv.URL, DefaultNamespace: "ns"}, map[string]any{"workflow": ".."}, []string{"invalid"}},
		{"bad payload type", TriggerOptions{DashboardURL: srv.URL, DefaultNamespace: "ns"}, map[string]any{"workflow": "w", "payload": 42.0}, []string{`"payload"`}},
		{"nil args", TriggerOptions{DashboardURL: srv.URL, DefaultNamespace: "ns"}, nil, []string{`"workflow" is required`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, h := TriggerWorkflow(tc.opts)
			txt := triggerText(t, h(context.Background(), tc.args, nil), true)
			for _, w := range tc.want {
				if !strings.Contains(txt, w) {
					t.Errorf("text %q lacks %q", txt, w)
				}
			}
			if n := strings.Count(txt, "z"); n > 300 {
				t.Errorf("excerpt too long: %d", n)
			}
		})
	}
}

func TestTriggerWorkflowTool(t *testing.T) {
	tool, _ := TriggerWorkflow(TriggerOptions{DashboardURL: "http://x", DefaultNamespace: "ns"})
	if tool.Name != "trigger-workflow" {
		t.Errorf("name %q", tool.Name)
	}
	b, err := json.Marshal(tool)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		InputSchema struct {
			Properties map[string]any `json:"properties"`
			Required   []string       `json:"required"`
		} `json:"inputSchema"`
		Annotations map[string]any `json:"annotations"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"workflow", "namespace", "payload"} {
		if _, ok := m.InputSchema.Properties[p]; !ok {
			t.Errorf("property %s missing: %s", p, b)
		}
	}
	if len(m.InputSchema.Required) != 1 || m.InputSchema.Required[0] != "workflow" {
		t.Errorf("required %v", m.InputSchema.Required)
	}
	if m.Annotations["destructiveHint"] != true || m.Annotations["readOnlyHint"] != false {
		t.Errorf("annotations %v", m.Annotations)
	}
}

package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/credential"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// TestAPICredential: api tool credentials go through the hub's one
// resolver, so an empty or oversized file fails start-up with the source
// named, as a server token would, instead of building a tool that fails
// every call.
func TestAPICredential(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, empty, big := file("good", "key-123\n"), file("empty", " \n"), file("big", strings.Repeat("k", credential.MaxBytes+1))
	t.Setenv("LOCAL_TEST_KEY", "env-key")
	var asked []string
	secrets := credential.SecretReader(func(_ context.Context, ns, name string) (map[string][]byte, bool, error) {
		asked = append(asked, ns+"/"+name)
		if name != "api" {
			return nil, false, nil
		}
		return map[string][]byte{"token": []byte("secret-key\n")}, true, nil
	})
	cases := []struct {
		name    string
		ref     toolspec.CredentialRef
		secrets credential.SecretReader
		want    string
		wantErr string
	}{
		{name: "none", want: ""},
		{name: "env", ref: toolspec.CredentialRef{Env: "LOCAL_TEST_KEY"}, want: "env-key"},
		{name: "file", ref: toolspec.CredentialRef{File: good}, want: "key-123"},
		{name: "empty file", ref: toolspec.CredentialRef{File: empty}, wantErr: "file " + empty + ": is empty"},
		{name: "big file", ref: toolspec.CredentialRef{File: big}, wantErr: "file " + big + ": is larger than 64 KiB"},
		{name: "unset env", ref: toolspec.CredentialRef{Env: "LOCAL_TEST_UNSET"}, wantErr: "env: variable LOCAL_TEST_UNSET is not set"},
		{name: "secret in own namespace", ref: toolspec.CredentialRef{SecretRef: &toolspec.SecretKeyRef{Name: "api", Key: "token"}}, secrets: secrets, want: "secret-key"},
		{name: "secret key missing", ref: toolspec.CredentialRef{SecretRef: &toolspec.SecretKeyRef{Name: "api", Key: "other", Namespace: "tools"}}, secrets: secrets, wantErr: `Secret tools/api has no key "other"`},
		{name: "secret missing", ref: toolspec.CredentialRef{SecretRef: &toolspec.SecretKeyRef{Name: "gone", Key: "token"}}, secrets: secrets, wantErr: "Secret hub/gone not found"},
		{name: "secret without cluster", ref: toolspec.CredentialRef{SecretRef: &toolspec.SecretKeyRef{Name: "api", Key: "token"}}, wantErr: "secretRef api needs a cluster"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := apiCredential(context.Background(), tc.ref, tc.secrets, "hub")
			if tc.wantErr == "" {
				if err != nil || got != tc.want {
					t.Fatalf("apiCredential = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("apiCredential error = %v, want %q", err, tc.wantErr)
			}
		})
	}
	if len(asked) == 0 || asked[0] != "hub/api" {
		t.Errorf("Secrets read %v; a secretRef without namespace must use the hub's own (hub/api first)", asked)
	}
}

// TestLocalToolsRefusesEmptyCredentialFile is the start-up view of the
// same rule: the api tool is named, and no hub starts with a tool whose
// every call would fail for want of a credential.
func TestLocalToolsRefusesEmptyCredentialFile(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	empty := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("t.yaml", []byte("servers: []\nbuiltins: {staticAnalysis: {enabled: false}}\napiTools:\n- name: lookup\n  url: http://127.0.0.1:1/x\n  authScheme: Bearer\n  credentials: {file: "+empty+"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = localTools(context.Background(), cfg, Options{}, http.DefaultClient)
	if want := "api tool lookup: credentials: file " + empty + ": is empty"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("localTools error = %v, want %q", err, want)
	}
}

// TestHubToolsEndToEnd: the builtins and a config api tool appear next to an
// upstream's tools and run over /mcp, with credentials attached by the hub
// and never shown.
func TestHubToolsEndToEnd(t *testing.T) {
	upURL := echoUpstream(t)
	var mu sync.Mutex
	var seen []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/openapi.yaml" {
			_, _ = io.WriteString(w, openAPIDoc)
			return
		}
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization")+" "+r.Header.Get("X-Trigger-Source"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"run":"run-42","namespace":"purko","ok":true}`)
	}))
	defer api.Close()
	cfg := filepath.Join(t.TempDir(), "hub.yaml")
	body := fmt.Sprintf(`
builtins:
  triggerWorkflow: {dashboardURL: %q, namespace: purko}
apiTools:
  - name: create_ticket
    url: %s/tickets/{project}
    method: POST
    authScheme: Bearer
    credentials: {env: MCPHUB_TEST_API_KEY}
openapi:
  - url: %s/openapi.yaml
    base: {url: %s}
`, api.URL, api.URL, api.URL, api.URL)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	h := serveConfig(t, cfg, "MCPHUB_TEST_API_KEY=api-key-secret-9", `MCP_SERVERS=[{"name":"up","url":"`+upURL+`"}]`)
	waitConnected(t, h, "up")

	tr, err := transport.NewStreamableHTTP(h.MCPURL())
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		names = names[:0]
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		if len(names) == 5 {
			break
		}
	}
	if strings.Join(names, ",") != "create_ticket,echo,listPets,static-analysis,trigger-workflow" {
		t.Fatalf("tools/list = %v", names)
	}
	callText := func(name string, args map[string]any) string {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError {
			t.Fatalf("%s: error result %v", name, res.Content)
		}
		return res.Content[0].(mcp.TextContent).Text
	}
	if out := callText("static-analysis", map[string]any{"code": "import os\nos.system(cmd)\n", "language": "python"}); !strings.Contains(out, `"rule":"PY007"`) {
		t.Fatalf("static-analysis = %s", out)
	}
	if out := callText("create_ticket", map[string]any{"project": "ops", "title": "disk full"}); !strings.Contains(out, "run-42") || strings.Contains(out, "api-key-secret-9") {
		t.Fatalf("create_ticket = %s", out)
	}
	if out := callText("trigger-workflow", map[string]any{"workflow": "nightly", "payload": "rebuild"}); !strings.Contains(out, "run-42") {
		t.Fatalf("trigger-workflow = %s", out)
	}
	callText("listPets", map[string]any{"limit": 2})
	mu.Lock()
	got := strings.Join(seen, "\n")
	mu.Unlock()
	for _, want := range []string{"POST /tickets/ops Bearer api-key-secret-9 ", "POST /api/trigger/purko/nightly  mcp-hub", "GET /pets  "} {
		if !strings.Contains(got, want) {
			t.Errorf("requests seen:\n%s\nwant a line %q", got, want)
		}
	}
	var listing struct {
		Servers []struct{ Name string }
	}
	resp, err := http.Get(h.Base + "/api/mcp/tools")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_ = json.Unmarshal(raw, &listing)
	if len(listing.Servers) != 3 || listing.Servers[0].Name != "hub" || listing.Servers[2].Name != "api" || bytes.Contains(raw, []byte("api-key-secret-9")) {
		t.Fatalf("listing servers %+v (or it holds the credential)", listing.Servers)
	}
	h.Stop()
	if strings.Contains(h.Log.String(), "api-key-secret-9") {
		t.Fatal("the api tool's credential is in the hub's log")
	}
}

// openAPIDoc is a one-operation OpenAPI document served by the test.
const openAPIDoc = `openapi: 3.0.3
info: {title: pets, version: "1"}
paths:
  /pets:
    get:
      operationId: listPets
      parameters:
        - {name: limit, in: query, schema: {type: integer}}
      responses: {"200": {description: ok}}
`

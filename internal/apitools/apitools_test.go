package apitools

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/toolspec"
)

const (
	secret     = "s3cr3t-T0KEN-value-42"
	basicCred  = "alice:pa55-w0rd-XYZ"
	basicPass  = "pa55-w0rd-XYZ"
	basicEnc64 = "YWxpY2U6cGE1NS13MHJkLVhZWg=="
)

var allSecrets = []string{secret, basicCred, basicPass, basicEnc64}

type seen struct {
	Method, Path, RawPath, Query string
	Header                       http.Header
	Body                         string
}

type recorder struct {
	mu   sync.Mutex
	reqs []seen
	srv  *httptest.Server
	// reply writes the response; default 200 {"ok":true}.
	reply func(w http.ResponseWriter, r *http.Request)
}

func newRecorder(t *testing.T, reply func(w http.ResponseWriter, r *http.Request)) *recorder {
	t.Helper()
	rec := &recorder{reply: reply}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, seen{r.Method, r.URL.Path, r.URL.RawPath, r.URL.RawQuery, r.Header.Clone(), string(b)})
		rec.mu.Unlock()
		if rec.reply != nil {
			rec.reply(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (r *recorder) requests() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seen(nil), r.reqs...)
}

func (r *recorder) host() string {
	u, _ := url.Parse(r.srv.URL)
	return u.Host
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// checkResult fails when the result is nil, has the wrong error state or
// contains any secret.
func checkResult(t *testing.T, res *mcp.CallToolResult, wantErr bool) string {
	t.Helper()
	if res == nil {
		t.Fatal("nil result")
	}
	txt := text(res)
	if res.IsError != wantErr {
		t.Fatalf("IsError = %v, want %v; text: %s", res.IsError, wantErr, txt)
	}
	raw, _ := json.Marshal(res)
	for _, s := range allSecrets {
		if strings.Contains(txt, s) || strings.Contains(string(raw), s) {
			t.Fatalf("result leaks secret %q: %s", s, txt)
		}
	}
	return txt
}

func mustNew(t *testing.T, spec toolspec.EndpointSpec, cred string) (mcp.Tool, Handler) {
	t.Helper()
	tool, h, err := New(spec, cred, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return tool, h
}

func TestRequestShape(t *testing.T) {
	cases := []struct {
		name       string
		spec       toolspec.EndpointSpec
		cred       string
		args       map[string]any
		wantMethod string
		wantPath   string // decoded
		wantRaw    string // RawPath when escaping matters
		wantQuery  url.Values
		wantBody   map[string]any // nil: no body expected
		wantHeader map[string]string
		noHeader   []string
	}{
		{
			name:       "GET placeholders and query, no auth",
			spec:       toolspec.EndpointSpec{URL: "/users/{id}/posts?static=1", Method: "get"},
			args:       map[string]any{"id": "a b/c", "limit": float64(5), "tags": []any{"x", "y"}, "deep": map[string]any{"k": 1}},
			wantMethod: "GET", wantPath: "/users/a b/c/posts", wantRaw: "/users/a%20b%2Fc/posts",
			wantQuery: url.Values{"static": {"1"}, "limit": {"5"}, "tags": {"x", "y"}, "deep": {`{"k":1}`}},
			noHeader:  []string{"Authorization", "Content-Type"},
		},
		{
			name:       "POST default method JSON body Bearer",
			spec:       toolspec.EndpointSpec{URL: "/items", AuthScheme: "Bearer", Credential: toolspec.CredentialRef{Env: "X"}, Headers: map[string]string{"X-Static": "yes"}},
			cred:       secret + "\n",
			args:       map[string]any{"title": "t", "n": float64(2)},
			wantMethod: "POST", wantPath: "/items",
			wantBody:   map[string]any{"title": "t", "n": float64(2)},
			wantHeader: map[string]string{"Authorization": "Bearer " + secret, "Content-Type": "application/json", "X-Static": "yes"},
		},
		{
			name:       "PUT placeholder removed from body, Token",
			spec:       toolspec.EndpointSpec{URL: "/items/{id}", Method: "PUT", AuthScheme: "token", Credential: toolspec.CredentialRef{File: "/x"}},
			cred:       secret,
			args:       map[string]any{"id": float64(7), "title": "new"},
			wantMethod: "PUT", wantPath: "/items/7",
			wantBody:   map[string]any{"title": "new"},
			wantHeader: map[string]string{"Authorization": "Token " + secret},
		},
		{
			name:       "PATCH Basic",
			spec:       toolspec.EndpointSpec{URL: "/items/{id}", Method: "PATCH", AuthScheme: "Basic", Credential: toolspec.CredentialRef{SecretRef: &toolspec.SecretKeyRef{Name: "s", Key: "k"}}},
			cred:       basicCred,
			args:       map[string]any{"id": "x"},
			wantMethod: "PATCH", wantPath: "/items/x",
			wantBody:   map[string]any{},
			wantHeader: map[string]string{"Authorization": "Basic " + basicEnc64},
		},
		{
			name:       "DELETE query ApiKey default header",
			spec:       toolspec.EndpointSpec{URL: "/items/{id}", Method: "DELETE", AuthScheme: "ApiKey", Credential: toolspec.CredentialRef{Env: "K"}},
			cred:       secret,
			args:       map[string]any{"id": "9", "force": true},
			wantMethod: "DELETE", wantPath: "/items/9",
			wantQuery:  url.Values{"force": {"true"}},
			wantHeader: map[string]string{"X-Api-Key": secret},
			noHeader:   []string{"Authorization", "Content-Type"},
		},
		{
			name:       "ApiKey custom header, POST with Query list",
			spec:       toolspec.EndpointSpec{URL: "/search", AuthScheme: "ApiKey", AuthHeader: "X-Token", Credential: toolspec.CredentialRef{Env: "K"}, Query: []string{"page"}},
			cred:       secret,
			args:       map[string]any{"page": float64(3), "q": "go"},
			wantMethod: "POST", wantPath: "/search",
			wantQuery:  url.Values{"page": {"3"}},
			wantBody:   map[string]any{"q": "go"},
			wantHeader: map[string]string{"X-Token": secret},
			noHeader:   []string{"Authorization", "X-Api-Key"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t, nil)
			spec := tc.spec
			spec.Name = "t1"
			spec.URL = rec.srv.URL + spec.URL
			_, h := mustNew(t, spec, tc.cred)
			txt := checkResult(t, h(context.Background(), tc.args, nil), false)
			if txt != `{"ok":true}` {
				t.Errorf("text = %q", txt)
			}
			reqs := rec.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			got := reqs[0]
			if got.Method != tc.wantMethod || got.Path != tc.wantPath {
				t.Errorf("request %s %s, want %s %s", got.Method, got.Path, tc.wantMethod, tc.wantPath)
			}
			if tc.wantRaw != "" && got.RawPath != tc.wantRaw {
				t.Errorf("raw path %q, want %q", got.RawPath, tc.wantRaw)
			}
			q, _ := url.ParseQuery(got.Query)
			if tc.wantQuery == nil {
				tc.wantQuery = url.Values{}
			}
			if q.Encode() != tc.wantQuery.Encode() {
				t.Errorf("query %q, want %q", q.Encode(), tc.wantQuery.Encode())
			}
			if tc.wantBody == nil {
				if got.Body != "" {
					t.Errorf("body %q, want none", got.Body)
				}
			} else {
				var body map[string]any
				if err := json.Unmarshal([]byte(got.Body), &body); err != nil {
					t.Fatalf("body %q: %v", got.Body, err)
				}
				if b1, b2 := mustJSON(body), mustJSON(tc.wantBody); b1 != b2 {
					t.Errorf("body %s, want %s", b1, b2)
				}
			}
			for k, v := range tc.wantHeader {
				if got.Header.Get(k) != v {
					t.Errorf("header %s = %q, want %q", k, got.Header.Get(k), v)
				}
			}
			for _, k := range tc.noHeader {
				if v := got.Header.Get(k); v != "" {
					t.Errorf("header %s = %q, want none", k, v)
				}
			}
		})
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestBindings(t *testing.T) {
	rec := newRecorder(t, nil)
	spec := toolspec.EndpointSpec{
		Name: "bound", URL: rec.srv.URL + "/orgs/{tenant}/notes",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"note":{"type":"string"},"owner":{"type":"string"},"tenant":{"type":"string"}},"required":["note","owner","tenant"],"additionalProperties":false}`),
		Bindings: []toolspec.Binding{
			{From: toolspec.FromCaller, Header: "X-Caller"},
			{From: toolspec.FromAgent, Field: "owner"},
			{From: toolspec.FromWorkflow, Field: "tenant"},
		},
	}
	tool, h := mustNew(t, spec, "")
	// Bound names are not published.
	var published map[string]any
	if err := json.Unmarshal(tool.RawInputSchema, &published); err != nil {
		t.Fatal(err)
	}
	props := published["properties"].(map[string]any)
	if _, ok := props["owner"]; ok {
		t.Errorf("bound field owner is published: %s", tool.RawInputSchema)
	}
	if _, ok := props["tenant"]; ok {
		t.Errorf("bound field tenant is published: %s", tool.RawInputSchema)
	}
	if req := mustJSON(published["required"]); req != `["note"]` {
		t.Errorf("required = %s", req)
	}

	bindings := map[string]string{toolspec.FromCaller: "user-1", toolspec.FromAgent: "agent-a", toolspec.FromWorkflow: "acme", toolspec.FromStep: "s1"}
	// The model tries to override every bound value.
	args := map[string]any{"note": "hi", "owner": "evil", "tenant": "other-org"}
	checkResult(t, h(context.Background(), args, bindings), false)
	reqs := rec.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	got := reqs[0]
	if got.Path != "/orgs/acme/notes" {
		t.Errorf("path %q: model overrode a bound placeholder", got.Path)
	}
	if got.Header.Get("X-Caller") != "user-1" {
		t.Errorf("X-Caller = %q", got.Header.Get("X-Caller"))
	}
	if want := `{"note":"hi","owner":"agent-a"}`; got.Body != want {
		t.Errorf("body %s, want %s", got.Body, want)
	}

	// A binding missing from the call context fails closed.
	res := h(context.Background(), map[string]any{"note": "x"}, map[string]string{toolspec.FromCaller: "u"})
	txt := checkResult(t, res, true)
	if !strings.Contains(txt, `binding "agent"`) {
		t.Errorf("text %q", txt)
	}
	if n := len(rec.requests()); n != 1 {
		t.Errorf("request sent without bindings (%d requests)", n)
	}
}

func TestMissingCredentialSendsNothing(t *testing.T) {
	rec := newRecorder(t, nil)
	for _, scheme := range []string{toolspec.AuthBearer, toolspec.AuthToken, toolspec.AuthBasic, toolspec.AuthAPIKey} {
		spec := toolspec.EndpointSpec{Name: "needs-auth", URL: rec.srv.URL + "/x", AuthScheme: scheme, Credential: toolspec.CredentialRef{Env: "MISSING"}}
		_, h := mustNew(t, spec, "  \n")
		txt := checkResult(t, h(context.Background(), map[string]any{"a": 1}, nil), true)
		if !strings.Contains(txt, "credential for tool needs-auth is missing") {
			t.Errorf("%s: text %q", scheme, txt)
		}
	}
	if n := len(rec.requests()); n != 0 {
		t.Fatalf("%d requests sent without a credential", n)
	}
}

func TestSchemaViolationSendsNothing(t *testing.T) {
	rec := newRecorder(t, nil)
	spec := toolspec.EndpointSpec{
		Name: "typed", URL: rec.srv.URL + "/x", AuthScheme: "Bearer", Credential: toolspec.CredentialRef{Env: "X"},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer","minimum":1},"mode":{"enum":["a","b"]}},"required":["mode"]}`),
	}
	_, h := mustNew(t, spec, secret)
	cases := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"mode": "a", "count": "three"}, `argument "count"`},
		{map[string]any{"mode": "a", "count": float64(0)}, `argument "count"`},
		{map[string]any{"mode": "z"}, `argument "mode"`},
		{map[string]any{"count": float64(2)}, "mode"},
	}
	for _, tc := range cases {
		txt := checkResult(t, h(context.Background(), tc.args, nil), true)
		if !strings.Contains(txt, tc.want) || !strings.Contains(txt, "not sent") {
			t.Errorf("args %v: text %q, want it to name %s", tc.args, txt, tc.want)
		}
	}
	if n := len(rec.requests()); n != 0 {
		t.Fatalf("%d requests sent for invalid arguments", n)
	}
	checkResult(t, h(context.Background(), map[string]any{"mode": "b", "count": float64(3)}, nil), false)
	if n := len(rec.requests()); n != 1 {
		t.Fatalf("%d requests for valid arguments", n)
	}
}

func TestOpenSchemaWithoutInputSchema(t *testing.T) {
	tool, _ := mustNew(t, toolspec.EndpointSpec{Name: "open", URL: "http://example.invalid/a"}, "")
	if got := string(tool.RawInputSchema); got != `{"additionalProperties":true,"type":"object"}` {
		t.Errorf("schema %s", got)
	}
	if _, err := json.Marshal(tool); err != nil {
		t.Errorf("tool does not marshal: %v", err)
	}
	if *tool.Annotations.ReadOnlyHint || !*tool.Annotations.DestructiveHint {
		t.Errorf("POST tool annotations %+v", tool.Annotations)
	}
	tool, _ = mustNew(t, toolspec.EndpointSpec{Name: "open", URL: "http://example.invalid/a/{id}", Method: "GET"}, "")
	var s map[string]any
	_ = json.Unmarshal(tool.RawInputSchema, &s)
	if mustJSON(s["required"]) != `["id"]` {
		t.Errorf("placeholder not required: %s", tool.RawInputSchema)
	}
	if !*tool.Annotations.ReadOnlyHint {
		t.Errorf("GET tool not read-only")
	}
}

func TestMissingPlaceholder(t *testing.T) {
	rec := newRecorder(t, nil)
	_, h := mustNew(t, toolspec.EndpointSpec{Name: "ph", URL: rec.srv.URL + "/a/{id}/{sub}", Method: "GET"}, "")
	txt := checkResult(t, h(context.Background(), map[string]any{"id": "1"}, nil), true)
	if !strings.Contains(txt, `"sub"`) {
		t.Errorf("text %q", txt)
	}
	txt = checkResult(t, h(context.Background(), map[string]any{"id": "..", "sub": "x"}, nil), true)
	if !strings.Contains(txt, `"id"`) {
		t.Errorf("text %q", txt)
	}
	if n := len(rec.requests()); n != 0 {
		t.Fatalf("%d requests", n)
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	defer close(release)
	spec := toolspec.EndpointSpec{Name: "slow", URL: rec.srv.URL + "/s?k=" + url.QueryEscape(secret), TimeoutSeconds: 1, AuthScheme: "Bearer", Credential: toolspec.CredentialRef{Env: "X"}}
	_, h := mustNew(t, spec, secret)
	start := time.Now()
	txt := checkResult(t, h(context.Background(), nil, nil), true)
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("took %s", d)
	}
	for _, want := range []string{"slow", rec.host(), "timed out"} {
		if !strings.Contains(txt, want) {
			t.Errorf("text %q lacks %q", txt, want)
		}
	}
}

func TestConnectionError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	spec := toolspec.EndpointSpec{Name: "down", URL: "http://" + addr + "/p?token=" + secret, Method: "GET", AuthScheme: "ApiKey", Credential: toolspec.CredentialRef{Env: "X"}}
	_, h := mustNew(t, spec, secret)
	txt := checkResult(t, h(context.Background(), map[string]any{"q": secret}, nil), true)
	if !strings.Contains(txt, "down") || !strings.Contains(txt, addr) {
		t.Errorf("text %q should name tool and host", txt)
	}
	if strings.Contains(txt, "/p?") {
		t.Errorf("text %q contains the request URL", txt)
	}
}

func TestTruncation(t *testing.T) {
	big := strings.Repeat("é", 1000)
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, big)
	})
	_, h := mustNew(t, toolspec.EndpointSpec{Name: "big", URL: rec.srv.URL, Method: "GET", MaxResponseChars: 100}, "")
	txt := checkResult(t, h(context.Background(), nil, nil), false)
	if !strings.HasPrefix(txt, strings.Repeat("é", 100)+"\n\n[truncated") || strings.Contains(txt, strings.Repeat("é", 101)) {
		t.Errorf("text %q", txt)
	}
	// Exactly at the cap: no notice.
	_, h = mustNew(t, toolspec.EndpointSpec{Name: "big", URL: rec.srv.URL, Method: "GET", MaxResponseChars: 1000}, "")
	if txt := checkResult(t, h(context.Background(), nil, nil), false); txt != big {
		t.Errorf("untruncated text has %d chars", len([]rune(txt)))
	}
}

func TestNon2xx(t *testing.T) {
	long := "error: " + strings.Repeat("x", 1000)
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		// A misbehaving API echoing the credential.
		_, _ = io.WriteString(w, "bad key "+r.Header.Get("Authorization")+" "+long)
	})
	_, h := mustNew(t, toolspec.EndpointSpec{Name: "deny", URL: rec.srv.URL, AuthScheme: "Basic", Credential: toolspec.CredentialRef{Env: "X"}}, basicCred)
	txt := checkResult(t, h(context.Background(), nil, nil), true)
	if !strings.Contains(txt, "403 Forbidden") || !strings.Contains(txt, "bad key Basic [redacted]") {
		t.Errorf("text %q", txt)
	}
	if n := strings.Count(txt, "x"); n > 300 {
		t.Errorf("excerpt too long (%d x)", n)
	}
}

func TestSuccessBodyScrubbed(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"headers":{"Authorization":"`+r.Header.Get("Authorization")+`"}}`)
	})
	_, h := mustNew(t, toolspec.EndpointSpec{Name: "echo", URL: rec.srv.URL, AuthScheme: "Bearer", Credential: toolspec.CredentialRef{Env: "X"}}, secret)
	txt := checkResult(t, h(context.Background(), nil, nil), false)
	if !strings.Contains(txt, "Bearer [redacted]") {
		t.Errorf("text %q", txt)
	}
}

func TestRedirectToOtherHostNotFollowed(t *testing.T) {
	other := newRecorder(t, nil)
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.srv.URL+"/stolen", http.StatusFound)
	})
	_, h := mustNew(t, toolspec.EndpointSpec{Name: "redir", URL: rec.srv.URL, Method: "GET", AuthScheme: "ApiKey", Credential: toolspec.CredentialRef{Env: "X"}}, secret)
	txt := checkResult(t, h(context.Background(), nil, nil), true)
	if !strings.Contains(txt, "302") {
		t.Errorf("text %q", txt)
	}
	if n := len(other.requests()); n != 0 {
		t.Fatalf("redirect to another host followed (%d requests)", n)
	}
}

func TestBasicCredentialFormat(t *testing.T) {
	_, _, err := New(toolspec.EndpointSpec{Name: "b", URL: "http://h/x", AuthScheme: "Basic", Credential: toolspec.CredentialRef{Env: "X"}}, secret, nil)
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("err = %v", err)
	}
	if got := base64.StdEncoding.EncodeToString([]byte(basicCred)); got != basicEnc64 {
		t.Fatalf("test constant basicEnc64 is stale: %s", got)
	}
}

// TestBoundNamesInAnyCase: a model argument that differs from a bound
// field only in letter case is dropped too, so an endpoint that reads
// names case-insensitively still gets only the trusted value.
func TestBoundNamesInAnyCase(t *testing.T) {
	rec := newRecorder(t, nil)
	spec := toolspec.EndpointSpec{
		Name: "bound", URL: rec.srv.URL + "/notes",
		Bindings: []toolspec.Binding{{From: toolspec.FromAgent, Field: "owner"}},
	}
	_, h := mustNew(t, spec, "")
	args := map[string]any{"note": "hi", "Owner": "evil", "OWNER": "evil", "owner": "evil"}
	checkResult(t, h(context.Background(), args, map[string]string{toolspec.FromAgent: "agent-a"}), false)
	reqs := rec.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	if want := `{"note":"hi","owner":"agent-a"}`; reqs[0].Body != want {
		t.Errorf("body %s, want %s", reqs[0].Body, want)
	}
}

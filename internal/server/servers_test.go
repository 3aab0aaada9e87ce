package server

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
)

// pathParam is a {wildcard} of a mux pattern.
var pathParam = regexp.MustCompile(`\{[^}]+\}`)

// TestEveryWriteNeedsAnAdmin sends every write route of the REST API (each
// POST and DELETE pattern of the mux) as a caller without credentials, a
// non-admin token and from a foreign Origin: the one admin check refuses
// each before its handler runs (a decision on a held call: its approvers
// check, the admins by default). The admin then reaches the handler (here
// 501: the hub has no registrations store; the pins endpoint answers 400
// or 409 to its empty body).
func TestEveryWriteNeedsAnAdmin(t *testing.T) {
	auth := callers.NewAuth([]callers.TokenCaller{
		{Name: "ops", Token: "ops-token", Ceiling: autonomy.Full, Admin: true},
		{Name: "bot", Token: "bot-token", Ceiling: autonomy.Full},
	}, nil, nil)
	h := newTestHubAuth(t, nil, auth)
	var writes []string
	for _, r := range muxRoutes(t) {
		if !strings.HasPrefix(r, "GET ") {
			writes = append(writes, r)
		}
	}
	if len(writes) < 3 {
		t.Fatalf("writes %v", writes)
	}
	for _, route := range writes {
		method, path, _ := strings.Cut(route, " ")
		path = pathParam.ReplaceAllString(path, "x")
		for _, tc := range []struct {
			name, token, origin string
			status              int
			want                string
		}{
			{"no credentials", "", "", http.StatusUnauthorized, "credentials required"},
			{"not an admin", "bot-token", "", http.StatusForbidden, "needs an admin caller: bot is not one"},
			{"foreign origin", "ops-token", "http://evil.example", http.StatusForbidden, "Origin"},
			{"admin", "ops-token", "", 0, ""},
		} {
			req, _ := http.NewRequest(method, h.url(path), strings.NewReader(`{}`))
			req.Header.Set("Content-Type", "application/json")
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if tc.status == 0 {
				if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusNotFound && strings.Contains(string(b), "page not found") {
					t.Errorf("%s as admin: %d %s", route, resp.StatusCode, b)
				}
				continue
			}
			want := tc.want
			if tc.name == "not an admin" && strings.HasPrefix(route, "POST /api/mcp/approvals/") {
				// Approvers decide held calls: admins unless
				// approvals.approvers names others.
				want = "bot may not decide held calls (approvers: the hub's admins)"
			}
			if resp.StatusCode != tc.status || !strings.Contains(string(b), want) {
				t.Errorf("%s, %s: %d %s, want %d with %q", route, tc.name, resp.StatusCode, b, tc.status, want)
			}
		}
	}
	// Without a store, registering is not possible, and says so.
	req, _ := http.NewRequest("POST", h.url("/api/mcp/server"), strings.NewReader(`{"name":"a","url":"http://127.0.0.1:1/mcp"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer ops-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotImplemented {
		t.Errorf("POST without a store: %d", resp.StatusCode)
	}
}

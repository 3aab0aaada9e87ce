package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// fakeGrantsHub answers /api/mcp/connections as internal/usergrants does
// (a unit test of the CLI's table and errors, not of the API): alice's
// token is a caller's, ops's an admin's; the last request it saw is in
// *seen. keeps false is a hub that keeps no grants: no such routes.
func fakeGrantsHub(t *testing.T, keeps bool, seen *string) *httptest.Server {
	now := time.Now().UTC()
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	alice := fmt.Sprintf(`{"user":"alice","server":"github","issuer":"https://github.com/login/oauth","subject":"alice@example",`+
		`"scopes":["repo","read:org"],"connectedAt":%q,"refreshedAt":%q,"accessExpiresAt":%q,"refreshable":true}`,
		at(-3*time.Hour-time.Minute), at(-10*time.Minute), at(4*time.Minute+30*time.Second))
	aliceLinear := fmt.Sprintf(`{"user":"alice","server":"linear","issuer":"https://linear.app","connectedAt":%q,"refreshedAt":%q,"refreshable":false}`,
		at(-72*time.Hour), at(-72*time.Hour))
	bob := fmt.Sprintf(`{"user":"bob","server":"github","issuer":"https://github.com/login/oauth","subject":"bob@example","scopes":["repo"],`+
		`"connectedAt":%q,"refreshedAt":%q,"accessExpiresAt":%q,"refreshable":false}`, at(-time.Hour), at(-time.Hour), at(-time.Minute))
	mux := http.NewServeMux()
	if keeps {
		mux.HandleFunc("GET /api/mcp/connections", func(w http.ResponseWriter, r *http.Request) {
			user := r.Header.Get("X-User")
			switch {
			case r.URL.Query().Get("all") == "true" && user != "ops":
				http.Error(w, `{"error":"listing everyone's connections (all=true) is for admins"}`, http.StatusForbidden)
			case r.URL.Query().Get("all") == "true":
				fmt.Fprintf(w, `{"user":"ops","connections":[%s,%s,%s]}`, alice, bob, aliceLinear)
			case user == "alice":
				fmt.Fprintf(w, `{"user":"alice","connections":[%s,%s]}`, alice, aliceLinear)
			default:
				fmt.Fprintf(w, `{"user":%q,"connections":[]}`, user)
			}
		})
		mux.HandleFunc("DELETE /api/mcp/connections/{server}", func(w http.ResponseWriter, r *http.Request) {
			user := r.Header.Get("X-User")
			if other := r.URL.Query().Get("user"); other != "" && other != user {
				if user != "ops" {
					http.Error(w, `{"error":"revoking another caller's connection (user=) is for admins"}`, http.StatusForbidden)
					return
				}
				user = other
			}
			switch server := r.PathValue("server"); {
			case user == "alice" && server == "github":
				fmt.Fprintln(w, `{"revokedAtServer":true}`)
			case user == "alice" && server == "linear", user == "bob" && server == "github":
				fmt.Fprintln(w, `{"revokedAtServer":false,"note":"the authorization server offers no revocation (RFC 7009): the grant ends there when it expires, or in its own settings"}`)
			default:
				http.Error(w, fmt.Sprintf(`{"error":"%s has no connection to %s"}`, user, server), http.StatusNotFound)
			}
		})
	}
	tokens := map[string]string{"alice-secret": "alice", "ops-secret": "ops"}
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*seen = r.Method + " " + r.URL.RequestURI()
		user, ok := tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if !ok {
			http.Error(w, `{"error":"bearer token refused"}`, http.StatusUnauthorized)
			return
		}
		r.Header.Set("X-User", user)
		mux.ServeHTTP(w, r) // an unknown route: "404 page not found", as the hub's mux answers
	}))
	t.Cleanup(hub.Close)
	return hub
}

// TestConnectionsCLI drives mcp-hub connections list|revoke against a
// hub answering as /api/mcp/connections does: the tables, the revocation
// with and without the authorization server's, and the hub's refusals.
func TestConnectionsCLI(t *testing.T) {
	const noteText = "note: the authorization server offers no revocation (RFC 7009)"
	for _, tc := range []struct {
		name      string
		noGrants  bool // the hub keeps no user grants
		token     string
		args      []string
		code      int
		request   string   // what the hub was asked
		out       []string // in stdout, in this order
		notOut    []string
		exactOut  string
		stderr    string
		notStderr string
	}{
		{name: "list", token: "alice-secret", args: []string{"list"}, request: "GET /api/mcp/connections",
			out: []string{"SERVER", "SUBJECT", "SCOPES", "CONNECTED", "ACCESS EXPIRES", "REFRESHABLE",
				"github", "alice@example", "repo,read:org", "3h ago", "in 4m", "yes",
				"linear", "-", "-", "3d ago", "unknown", "no",
				"revoke: mcp-hub connections revoke SERVER\n"},
			notOut: []string{"USER", "ISSUER", "https://"}},
		{name: "list wide", token: "alice-secret", args: []string{"list", "-o", "wide"}, request: "GET /api/mcp/connections",
			out: []string{"REFRESHED", "ISSUER", "10m ago", "https://github.com/login/oauth", "https://linear.app"}},
		{name: "list json", token: "alice-secret", args: []string{"list", "-o", "json"},
			out: []string{`{"user":"alice","connections":[{"user":"alice","server":"github"`}},
		{name: "list empty", token: "ops-secret", args: []string{"list"},
			exactOut: "you have no connections: a server with userOAuth asks you to sign in at your first call to it\n"},
		{name: "list all", token: "ops-secret", args: []string{"list", "--all"}, request: "GET /api/mcp/connections?all=true",
			out: []string{"SERVER", "USER", "SUBJECT", "github", "alice", "alice@example", "in 4m",
				"github", "bob", "bob@example", "expired", "no",
				"linear", "alice", "revoke: mcp-hub connections revoke SERVER --user USER\n"}},
		{name: "list all, not an admin", token: "alice-secret", args: []string{"list", "--all"}, code: 1,
			stderr: "mcp-hub connections list: GET /api/mcp/connections?all=true: 403 Forbidden: listing everyone's connections (all=true) is for admins\n"},
		{name: "list, no user grants", noGrants: true, token: "alice-secret", args: []string{"list"}, code: 1, request: "GET /api/mcp/connections",
			stderr: "mcp-hub connections list: this hub keeps no user grants (servers with userOAuth)\n"},
		{name: "list, no token", token: "", args: []string{"list"}, code: 1,
			stderr: "401 Unauthorized: bearer token refused (set MCP_HUB_TOKEN", notStderr: "keeps no user grants"},
		{name: "revoke", token: "alice-secret", args: []string{"revoke", "github"}, request: "DELETE /api/mcp/connections/github",
			exactOut: "revoked your connection to github (also revoked at its authorization server)\n"},
		{name: "revoke with a note", token: "alice-secret", args: []string{"revoke", "linear"},
			out: []string{"revoked your connection to linear\n" + noteText}},
		{name: "revoke json", token: "alice-secret", args: []string{"revoke", "github", "-o", "json"}, exactOut: `{"revokedAtServer":true}` + "\n"},
		{name: "revoke another's", token: "ops-secret", args: []string{"revoke", "github", "--user", "bob"},
			request: "DELETE /api/mcp/connections/github?user=bob", out: []string{"revoked bob's connection to github\n" + noteText}},
		{name: "revoke another's, not an admin", token: "alice-secret", args: []string{"revoke", "github", "--user", "bob"}, code: 1,
			stderr: "403 Forbidden: revoking another caller's connection (user=) is for admins"},
		{name: "revoke, no such connection", token: "alice-secret", args: []string{"revoke", "jira"}, code: 1,
			stderr:    "mcp-hub connections revoke: DELETE /api/mcp/connections/jira: 404 Not Found: alice has no connection to jira\n",
			notStderr: "keeps no user grants"},
		{name: "revoke, no user grants", noGrants: true, token: "alice-secret", args: []string{"revoke", "github"}, code: 1,
			request: "DELETE /api/mcp/connections/github", stderr: "mcp-hub connections revoke: this hub keeps no user grants (servers with userOAuth)\n"},
		{name: "revoke without a server", token: "alice-secret", args: []string{"revoke"}, code: 2,
			stderr: "the server (mcp-hub connections list) is required"},
		{name: "an unknown output", token: "alice-secret", args: []string{"list", "-o", "xml"}, code: 2,
			stderr: `unknown output format "xml"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen string
			hub := fakeGrantsHub(t, !tc.noGrants, &seen)
			t.Setenv("MCP_HUB_URL", hub.URL)
			t.Setenv("MCP_HUB_TOKEN", tc.token)
			var out, errb bytes.Buffer
			code := run(append([]string{"connections"}, tc.args...), &out, &errb)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out.String(), errb.String())
			}
			if tc.request != "" && seen != tc.request {
				t.Errorf("the hub was asked %q, want %q", seen, tc.request)
			}
			if tc.exactOut != "" && out.String() != tc.exactOut {
				t.Errorf("stdout %q, want %q", out.String(), tc.exactOut)
			}
			rest := out.String()
			for _, want := range tc.out {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("stdout holds no %q (in this order):\n%s", want, out.String())
				}
				rest = rest[i+len(want):]
			}
			for _, not := range tc.notOut {
				if strings.Contains(out.String(), not) {
					t.Errorf("stdout holds %q:\n%s", not, out.String())
				}
			}
			if !strings.Contains(errb.String(), tc.stderr) || (tc.notStderr != "" && strings.Contains(errb.String(), tc.notStderr)) {
				t.Errorf("stderr %q, want %q", errb.String(), tc.stderr)
			}
			if tc.code == 0 && errb.Len() > 0 {
				t.Errorf("stderr: %s", errb.String())
			}
		})
	}
}

// The relative times of the table.
func TestConnectionsTimes(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		got, want string
	}{
		{expiresIn(now, now.Add(4*time.Minute+59*time.Second)), "in 4m"},
		{expiresIn(now, now.Add(30*time.Second)), "in 30s"},
		{expiresIn(now, now.Add(3*time.Hour)), "in 3h"},
		{expiresIn(now, now), "expired"},
		{expiresIn(now, now.Add(-time.Hour)), "expired"},
		{expiresIn(now, time.Time{}), "unknown"},
		{ago(now, now.Add(-47*time.Hour)), "47h ago"},
		{ago(now, now.Add(-50*time.Hour)), "2d ago"},
		{ago(now, now.Add(time.Second)), "0s ago"}, // a hub's clock ahead of ours
		{ago(now, time.Time{}), "-"},
	} {
		if tc.got != tc.want {
			t.Errorf("%q, want %q", tc.got, tc.want)
		}
	}
}

package apitools

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// An api that echoes its request (in an error or in a success body) gets
// none of the endpoint's credentials back to the caller: not the auth
// credential in any encoding, not a static header's value, not a key in
// the URL's query, and not the first part of one that a cut left behind.
func TestEchoedCredentialsRedacted(t *testing.T) {
	const (
		headerKey = "hdr-k3y-0123456789"
		queryKey  = "qry-k3y-9876543210"
	)
	pad := func(n int) string { return strings.Repeat("p", n) }
	cases := []struct {
		name   string
		spec   toolspec.EndpointSpec
		cred   string
		status int
		echo   func(r *http.Request) string
		leaks  []string // none of these may reach the result
	}{
		{
			name:   "static header in an error",
			spec:   toolspec.EndpointSpec{Headers: map[string]string{"X-Api-Key": headerKey, "Accept-Language": "en"}},
			status: http.StatusUnauthorized,
			echo:   func(r *http.Request) string { return "bad key " + r.Header.Get("X-Api-Key") },
			leaks:  []string{headerKey},
		},
		{
			name:   "static header in a success body",
			spec:   toolspec.EndpointSpec{Headers: map[string]string{"X-Api-Key": headerKey}},
			status: http.StatusOK,
			echo:   func(r *http.Request) string { return `{"headers":{"X-Api-Key":"` + r.Header.Get("X-Api-Key") + `"}}` },
			leaks:  []string{headerKey},
		},
		{
			name:   "query key in an error",
			spec:   toolspec.EndpointSpec{URL: "/v1?key=" + queryKey},
			status: http.StatusBadRequest,
			echo: func(r *http.Request) string {
				return "bad request " + r.URL.RawQuery + " key " + r.URL.Query().Get("key")
			},
			leaks: []string{queryKey},
		},
		{
			name:   "bearer token echoed base64-encoded",
			spec:   toolspec.EndpointSpec{AuthScheme: "Bearer", Credential: toolspec.CredentialRef{Env: "X"}},
			cred:   secret,
			status: http.StatusForbidden,
			echo: func(r *http.Request) string {
				return "token " + base64.StdEncoding.EncodeToString([]byte(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")))
			},
			leaks: []string{secret, base64.StdEncoding.EncodeToString([]byte(secret))},
		},
		{
			name:   "credential cut by the error excerpt",
			spec:   toolspec.EndpointSpec{AuthScheme: "Bearer", Credential: toolspec.CredentialRef{Env: "X"}},
			cred:   secret,
			status: http.StatusForbidden,
			// The excerpt keeps 300 characters: the token's first 10.
			echo: func(r *http.Request) string {
				return pad(300-10-len("Bearer ")) + r.Header.Get("Authorization") + pad(50)
			},
			leaks: []string{secret[:10]},
		},
		{
			name:   "credential cut by the response limit",
			spec:   toolspec.EndpointSpec{AuthScheme: "Bearer", Credential: toolspec.CredentialRef{Env: "X"}, MaxResponseChars: 100},
			cred:   secret,
			status: http.StatusOK,
			// The result keeps 100 characters: the token's first 10.
			echo: func(r *http.Request) string {
				return pad(90) + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + pad(50)
			},
			leaks: []string{secret[:10]},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.echo(r))
			})
			spec := tc.spec
			spec.Name, spec.Method, spec.URL = "echo", "GET", rec.srv.URL+spec.URL
			_, h := mustNew(t, spec, tc.cred)
			txt := checkResult(t, h(context.Background(), nil, nil), tc.status != http.StatusOK)
			for _, leak := range tc.leaks {
				if strings.Contains(txt, leak) {
					t.Errorf("result leaks %q: %s", leak, txt)
				}
			}
			if !strings.Contains(txt, "[redacted]") {
				t.Errorf("result %q shows no redaction: the echo was lost", txt)
			}
			if n := len(rec.requests()); n != 1 {
				t.Fatalf("%d requests, want 1", n)
			}
		})
	}
}

// A redirect within the endpoint's origin is followed with the credential;
// one to another port of the same host (another origin) is not followed,
// and the server there sees nothing.
func TestRedirectsStayAtTheirOrigin(t *testing.T) {
	other := newRecorder(t, nil)
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/start":
			http.Redirect(w, r, "/moved", http.StatusFound)
		case "/moved":
			http.Redirect(w, r, other.srv.URL+"/stolen", http.StatusFound)
		case "/same":
			http.Redirect(w, r, "/final", http.StatusFound)
		default:
			_, _ = io.WriteString(w, `{"ok":true}`)
		}
	})
	spec := func(path string) toolspec.EndpointSpec {
		return toolspec.EndpointSpec{Name: "redir", URL: rec.srv.URL + path, Method: "GET",
			AuthScheme: "ApiKey", Credential: toolspec.CredentialRef{Env: "X"}, Headers: map[string]string{"X-Tenant-Key": "tenant-k3y-777"}}
	}

	_, h := mustNew(t, spec("/same"), secret)
	if txt := checkResult(t, h(context.Background(), nil, nil), false); txt != `{"ok":true}` {
		t.Fatalf("same-origin redirect: %q", txt)
	}
	reqs := rec.requests()
	if len(reqs) != 2 || reqs[1].Path != "/final" || reqs[1].Header.Get("X-API-Key") != secret {
		t.Fatalf("same-origin redirect not followed with the credential: %+v", reqs)
	}

	_, h = mustNew(t, spec("/start"), secret)
	txt := checkResult(t, h(context.Background(), nil, nil), true)
	if !strings.Contains(txt, "302") || !strings.Contains(txt, "redirect not followed") {
		t.Errorf("cross-origin redirect result %q", txt)
	}
	if n := len(other.requests()); n != 0 {
		t.Fatalf("the other origin got %d requests", n)
	}
}

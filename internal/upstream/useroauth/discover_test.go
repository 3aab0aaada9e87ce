package useroauth

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// answer is what a fake server answers at one path; {base} in body is
// the server's URL.
type answer struct {
	status int
	ctype  string
	body   string
	header map[string]string
}

// fakeServer answers each path from answers (404 elsewhere) and records
// the paths asked for, in order.
type fakeServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newFake(t *testing.T, answers map[string]answer) *fakeServer {
	t.Helper()
	f := &fakeServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.seen = append(f.seen, r.Method+" "+r.URL.RequestURI())
		f.mu.Unlock()
		a, ok := answers[r.URL.RequestURI()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", cmpOr(a.ctype, "application/json"))
		w.WriteHeader(cmpOr(a.status, http.StatusOK))
		io.WriteString(w, strings.ReplaceAll(a.body, "{base}", f.URL))
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) paths() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func TestResourceMetadata(t *testing.T) {
	const prm = `{"resource":"{base}/mcp","authorization_servers":["https://as.example/"]}`
	html := strings.Repeat("<html><body>Sign in to continue ", 40)
	tests := []struct {
		name      string
		path      string // of the server URL
		hinted    string // path on the fake server, "" for none
		answers   map[string]answer
		resource  string // want, {base} replaced; "" when an error is expected
		errHas    []string
		wantPaths []string
	}{{
		name:      "path inserted",
		path:      "/mcp",
		answers:   map[string]answer{"/.well-known/oauth-protected-resource/mcp": {body: prm}},
		resource:  "{base}/mcp",
		wantPaths: []string{"GET /.well-known/oauth-protected-resource/mcp"},
	}, {
		name:      "trailing slash of the server URL dropped",
		path:      "/mcp/",
		answers:   map[string]answer{"/.well-known/oauth-protected-resource/mcp": {body: prm}},
		resource:  "{base}/mcp",
		wantPaths: []string{"GET /.well-known/oauth-protected-resource/mcp"},
	}, {
		name: "root fallback, resource at the root covers the path",
		path: "/mcp",
		answers: map[string]answer{"/.well-known/oauth-protected-resource": {
			body: `{"resource":"{base}/","authorization_servers":["https://as.example/"]}`}},
		resource:  "{base}/",
		wantPaths: []string{"GET /.well-known/oauth-protected-resource/mcp", "GET /.well-known/oauth-protected-resource"},
	}, {
		name:      "server at the root asks the root once",
		path:      "",
		answers:   map[string]answer{"/.well-known/oauth-protected-resource": {body: `{"resource":"{base}","authorization_servers":["a"]}`}},
		resource:  "{base}",
		wantPaths: []string{"GET /.well-known/oauth-protected-resource"},
	}, {
		name:      "hinted URL first",
		path:      "/mcp",
		hinted:    "/meta/prm.json",
		answers:   map[string]answer{"/meta/prm.json": {body: prm}, "/.well-known/oauth-protected-resource/mcp": {body: `{"resource":"{base}/mcp","authorization_servers":["wrong"]}`}},
		resource:  "{base}/mcp",
		wantPaths: []string{"GET /meta/prm.json"},
	}, {
		name:      "hinted URL not found, well-known next",
		path:      "/mcp",
		hinted:    "/meta/gone",
		answers:   map[string]answer{"/.well-known/oauth-protected-resource/mcp": {body: prm}},
		resource:  "{base}/mcp",
		wantPaths: []string{"GET /meta/gone", "GET /.well-known/oauth-protected-resource/mcp"},
	}, {
		name:      "another origin refused, naming both",
		path:      "/mcp",
		answers:   map[string]answer{"/.well-known/oauth-protected-resource/mcp": {body: `{"resource":"https://evil.example/mcp","authorization_servers":["a"]}`}},
		errHas:    []string{`"https://evil.example/mcp"`, "{base}/mcp", "another origin"},
		wantPaths: []string{"GET /.well-known/oauth-protected-resource/mcp"},
	}, {
		name:      "another path refused, no fallback to the root",
		path:      "/mcp",
		answers:   map[string]answer{"/.well-known/oauth-protected-resource/mcp": {body: `{"resource":"{base}/other","authorization_servers":["a"]}`}, "/.well-known/oauth-protected-resource": {body: prm}},
		errHas:    []string{`"{base}/other"`, "{base}/mcp"},
		wantPaths: []string{"GET /.well-known/oauth-protected-resource/mcp"},
	}, {
		name:    "a prefix that is not a whole segment refused",
		path:    "/mcp",
		answers: map[string]answer{"/.well-known/oauth-protected-resource/mcp": {body: `{"resource":"{base}/mc","authorization_servers":["a"]}`}},
		errHas:  []string{`"{base}/mc"`},
	}, {
		name:    "a resource below the server's path refused",
		path:    "/mcp",
		answers: map[string]answer{"/.well-known/oauth-protected-resource/mcp": {body: `{"resource":"{base}/mcp/tools","authorization_servers":["a"]}`}},
		errHas:  []string{`"{base}/mcp/tools"`},
	}, {
		name:    "no authorization servers",
		path:    "/mcp",
		answers: map[string]answer{"/.well-known/oauth-protected-resource/mcp": {body: `{"resource":"{base}/mcp"}`}},
		errHas:  []string{"no authorization_servers"},
	}, {
		name: "HTML answers everywhere",
		path: "/mcp",
		answers: map[string]answer{
			"/.well-known/oauth-protected-resource/mcp": {ctype: "text/html", body: html},
			"/.well-known/oauth-protected-resource":     {ctype: "text/html", body: html},
		},
		errHas: []string{"not a JSON document: HTML: <html><body>Sign in", "…", "oauth-protected-resource/mcp: 200", "oauth-protected-resource: 200"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.answers)
			hinted := ""
			if tc.hinted != "" {
				hinted = f.URL + tc.hinted
			}
			resource, servers, err := ResourceMetadata(context.Background(), f.Client(), f.URL+tc.path, hinted)
			if tc.resource != "" {
				if err != nil {
					t.Fatalf("error: %v", err)
				}
				if want := strings.ReplaceAll(tc.resource, "{base}", f.URL); resource != want {
					t.Errorf("resource %q, want %q", resource, want)
				}
				if len(servers) != 1 {
					t.Errorf("authorization servers %q", servers)
				}
			} else {
				if err == nil {
					t.Fatalf("no error; resource %q", resource)
				}
				for _, s := range tc.errHas {
					if s = strings.ReplaceAll(s, "{base}", f.URL); !strings.Contains(err.Error(), s) {
						t.Errorf("error lacks %q:\n%v", s, err)
					}
				}
				if strings.Contains(err.Error(), html[:300]) {
					t.Errorf("error quotes more than %d characters of the body: %v", maxQuote, err)
				}
			}
			if tc.wantPaths != nil && !slices.Equal(f.paths(), tc.wantPaths) {
				t.Errorf("asked for %q, want %q", f.paths(), tc.wantPaths)
			}
		})
	}
}

func TestDiscover(t *testing.T) {
	const full = `{"issuer":"{base}{issuer}","authorization_endpoint":"{base}/authorize","token_endpoint":"{base}/token",
		"revocation_endpoint":"{base}/revoke","registration_endpoint":"{base}/register",
		"authorization_response_iss_parameter_supported":true,"client_id_metadata_document_supported":true,
		"code_challenge_methods_supported":["S256"]}`
	oidc := `{"issuer":"{base}{issuer}","authorization_endpoint":"{base}/auth","token_endpoint":"{base}/tok","jwks_uri":"{base}/jwks"}`
	tests := []struct {
		name      string
		issuer    string // path of the issuer on the fake
		answers   map[string]string
		raw       map[string]answer
		want      *Endpoints // {base} in its URLs
		errHas    []string
		wantPaths []string
	}{{
		name:   "RFC 8414 at the root",
		issuer: "",
		answers: map[string]string{
			"/.well-known/oauth-authorization-server": full,
			"/.well-known/openid-configuration":       oidc,
		},
		want: &Endpoints{Authorization: "{base}/authorize", Token: "{base}/token", Revocation: "{base}/revoke", Registration: "{base}/register",
			IssParameter: true, ClientIDMetadata: true, CodeChallengeMethods: []string{"S256"}},
		wantPaths: []string{"GET /.well-known/oauth-authorization-server"},
	}, {
		name:      "OpenID Connect when RFC 8414 is missing; no PKCE methods listed is accepted",
		issuer:    "/",
		answers:   map[string]string{"/.well-known/openid-configuration": oidc},
		want:      &Endpoints{Authorization: "{base}/auth", Token: "{base}/tok"},
		wantPaths: []string{"GET /.well-known/oauth-authorization-server", "GET /.well-known/openid-configuration"},
	}, {
		name:      "issuer with a path: RFC 8414 path inserted",
		issuer:    "/tenant",
		answers:   map[string]string{"/.well-known/oauth-authorization-server/tenant": full},
		want:      &Endpoints{Authorization: "{base}/authorize", Token: "{base}/token", Revocation: "{base}/revoke", Registration: "{base}/register", IssParameter: true, ClientIDMetadata: true, CodeChallengeMethods: []string{"S256"}},
		wantPaths: []string{"GET /.well-known/oauth-authorization-server/tenant"},
	}, {
		name:   "issuer with a path: OIDC appended form last",
		issuer: "/tenant",
		answers: map[string]string{
			"/tenant/.well-known/openid-configuration": oidc,
		},
		want: &Endpoints{Authorization: "{base}/auth", Token: "{base}/tok"},
		wantPaths: []string{
			"GET /.well-known/oauth-authorization-server/tenant",
			"GET /.well-known/openid-configuration/tenant",
			"GET /tenant/.well-known/openid-configuration",
		},
	}, {
		name:      "issuer mismatch refused, no fallback",
		issuer:    "",
		answers:   map[string]string{"/.well-known/oauth-authorization-server": strings.Replace(full, "{base}{issuer}", "https://evil.example", 1), "/.well-known/openid-configuration": oidc},
		errHas:    []string{`names issuer "https://evil.example"`, "must be equal"},
		wantPaths: []string{"GET /.well-known/oauth-authorization-server"},
	}, {
		name:    "trailing slash counts: issuer must be exact",
		issuer:  "/",
		answers: map[string]string{"/.well-known/oauth-authorization-server": strings.Replace(full, "{base}{issuer}", "{base}", 1)},
		errHas:  []string{"must be equal"},
	}, {
		name:    "no S256 refused",
		issuer:  "",
		answers: map[string]string{"/.well-known/oauth-authorization-server": strings.Replace(full, `["S256"]`, `["plain"]`, 1)},
		errHas:  []string{"lacks S256"},
	}, {
		name:    "an authorization endpoint that is no http URL refused",
		issuer:  "",
		answers: map[string]string{"/.well-known/oauth-authorization-server": strings.Replace(full, `"{base}/authorize"`, `"javascript:alert(1)"`, 1)},
		errHas:  []string{"authorization_endpoint", "not an absolute http(s) URL"},
	}, {
		name:    "no token endpoint refused",
		issuer:  "",
		answers: map[string]string{"/.well-known/oauth-authorization-server": strings.Replace(full, `"token_endpoint":"{base}/token",`, "", 1)},
		errHas:  []string{"token_endpoint"},
	}, {
		name:   "nothing but HTML and errors",
		issuer: "",
		raw: map[string]answer{
			"/.well-known/oauth-authorization-server": {ctype: "text/html", body: "<!doctype html><title>Login</title>"},
			"/.well-known/openid-configuration":       {status: 503, ctype: "application/json", body: `{"error":"temporarily_unavailable","error_description":"down for maintenance"}`},
		},
		errHas: []string{"HTML: <!doctype html><title>Login</title>", "503 temporarily_unavailable: down for maintenance"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			answers := map[string]answer{}
			for p, body := range tc.answers {
				answers[p] = answer{body: strings.ReplaceAll(body, "{issuer}", tc.issuer)}
			}
			for p, a := range tc.raw {
				answers[p] = a
			}
			f := newFake(t, answers)
			issuer := f.URL + tc.issuer
			ep, err := Discover(context.Background(), f.Client(), issuer)
			if tc.want != nil {
				if err != nil {
					t.Fatalf("error: %v", err)
				}
				want := *tc.want
				want.Issuer = issuer
				for _, p := range []*string{&want.Authorization, &want.Token, &want.Revocation, &want.Registration} {
					*p = strings.ReplaceAll(*p, "{base}", f.URL)
				}
				if !equalEndpoints(ep, want) {
					t.Errorf("endpoints\n%+v\nwant\n%+v", ep, want)
				}
			} else {
				if err == nil {
					t.Fatalf("no error: %+v", ep)
				}
				for _, s := range tc.errHas {
					if s = strings.ReplaceAll(s, "{base}", f.URL); !strings.Contains(err.Error(), s) {
						t.Errorf("error lacks %q:\n%v", s, err)
					}
				}
			}
			if tc.wantPaths != nil && !slices.Equal(f.paths(), tc.wantPaths) {
				t.Errorf("asked for %q, want %q", f.paths(), tc.wantPaths)
			}
		})
	}
}

func equalEndpoints(a, b Endpoints) bool {
	return a.Issuer == b.Issuer && a.Authorization == b.Authorization && a.Token == b.Token && a.Revocation == b.Revocation &&
		a.Registration == b.Registration && a.IssParameter == b.IssParameter && a.ClientIDMetadata == b.ClientIDMetadata &&
		slices.Equal(a.CodeChallengeMethods, b.CodeChallengeMethods)
}

func TestDiscoverBadIssuer(t *testing.T) {
	for _, issuer := range []string{"", "as.example", "ftp://as.example/", "https://as.example/?tenant=1", "https://user:pw@as.example/"} {
		if _, err := Discover(context.Background(), http.DefaultClient, issuer); err == nil {
			t.Errorf("Discover(%q) took it", issuer)
		} else if strings.Contains(err.Error(), "pw@") {
			t.Errorf("Discover(%q): error shows the user info: %v", issuer, err)
		}
	}
}

// TestAnswersAreBounded: an answer over 64 KiB is refused, not read to its
// end.
func TestAnswersAreBounded(t *testing.T) {
	huge := `{"resource":"` + strings.Repeat("a", maxAnswer) + `"}`
	f := newFake(t, map[string]answer{
		"/.well-known/oauth-protected-resource":   {body: huge},
		"/.well-known/oauth-authorization-server": {body: huge},
		"/.well-known/openid-configuration":       {body: huge},
	})
	_, _, err := ResourceMetadata(context.Background(), f.Client(), f.URL, "")
	if err == nil || !strings.Contains(err.Error(), "over 64 KiB") {
		t.Errorf("ResourceMetadata: %v", err)
	}
	_, err = Discover(context.Background(), f.Client(), f.URL)
	if err == nil || !strings.Contains(err.Error(), "over 64 KiB") {
		t.Errorf("Discover: %v", err)
	}
}

func TestProbe(t *testing.T) {
	tests := []struct {
		name    string
		answer  answer
		hinted  string // {base} replaced; want
		status  int    // of the *Error wanted, 0 for none
		deleted bool   // a DELETE of the session follows
	}{{
		name: "401 with resource_metadata",
		answer: answer{status: 401, header: map[string]string{
			"WWW-Authenticate": `Bearer error="invalid_token", resource_metadata="{base}/.well-known/oauth-protected-resource/mcp", scope="repo"`}},
		hinted: "{base}/.well-known/oauth-protected-resource/mcp",
	}, {
		name:   "401 without a header",
		answer: answer{status: 401},
	}, {
		name:   "401 with another scheme only",
		answer: answer{status: 401, header: map[string]string{"WWW-Authenticate": `Basic realm="x", resource_metadata="{base}/no"`}},
	}, {
		name:    "200: no authorization needed, session ended",
		answer:  answer{status: 200, header: map[string]string{"Mcp-Session-Id": "sess-1"}, body: `{"jsonrpc":"2.0","id":1,"result":{}}`},
		status:  200,
		deleted: true,
	}, {
		name:   "405: no Streamable HTTP server",
		answer: answer{status: 405, ctype: "text/plain", body: "method not allowed"},
		status: 405,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			var body []byte
			var accept string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				got = append(got, r.Method+" "+r.Header.Get("Mcp-Session-Id"))
				if r.Method == http.MethodPost {
					body, _ = io.ReadAll(r.Body)
					accept = r.Header.Get("Accept")
				}
				mu.Unlock()
				if r.Method == http.MethodDelete {
					return
				}
				for k, v := range tc.answer.header {
					w.Header().Set(k, strings.ReplaceAll(v, "{base}", "http://"+r.Host))
				}
				w.Header().Set("Content-Type", cmpOr(tc.answer.ctype, "application/json"))
				w.WriteHeader(tc.answer.status)
				io.WriteString(w, tc.answer.body)
			}))
			defer srv.Close()
			hinted, err := Probe(context.Background(), srv.Client(), srv.URL+"/mcp")
			if want := strings.ReplaceAll(tc.hinted, "{base}", srv.URL); hinted != want {
				t.Errorf("hinted %q, want %q", hinted, want)
			}
			var oe *Error
			switch {
			case tc.status == 0 && err != nil:
				t.Errorf("error: %v", err)
			case tc.status != 0 && (!errors.As(err, &oe) || oe.Status != tc.status):
				t.Errorf("error %v, want an *Error with status %d", err, tc.status)
			}
			mu.Lock()
			defer mu.Unlock()
			if !strings.Contains(string(body), `"method":"initialize"`) || !strings.Contains(accept, "text/event-stream") {
				t.Errorf("probe sent %s (Accept %q)", body, accept)
			}
			if want := slices.Contains(got, "DELETE sess-1"); want != tc.deleted {
				t.Errorf("requests %q; session ended: %v, want %v", got, want, tc.deleted)
			}
		})
	}
}

func TestResourceMetadataParam(t *testing.T) {
	tests := []struct {
		header []string
		want   string
	}{
		{[]string{`Bearer resource_metadata="https://a.example/prm"`}, "https://a.example/prm"},
		{[]string{`Bearer realm="x",resource_metadata="https://a.example/prm",scope="a b"`}, "https://a.example/prm"},
		{[]string{`bearer Resource_Metadata=https://a.example/prm, error=invalid_token`}, "https://a.example/prm"},
		{[]string{`Bearer resource_metadata = "https://a.example/p\"q"`}, `https://a.example/p"q`},
		{[]string{`Negotiate abc==, Bearer resource_metadata="https://a.example/prm"`}, "https://a.example/prm"},
		{[]string{`Basic realm="r"`, `Bearer error="invalid_token", resource_metadata="https://a.example/prm"`}, "https://a.example/prm"},
		{[]string{`Basic realm="r", resource_metadata="https://wrong.example/"`}, ""},
		{[]string{`Bearer`}, ""},
		{[]string{`Bearer resource_metadata=`}, ""},
		{[]string{`resource_metadata="https://a.example/prm"`}, ""},
		{[]string{`Bearer resource_metadata="https://a.example/unterminated`}, "https://a.example/unterminated"},
		{[]string{`DPoP algs="ES256", Bearer scope="x", resource_metadata="https://a.example/prm"`}, "https://a.example/prm"},
		{nil, ""},
	}
	for _, tc := range tests {
		if got := resourceMetadataParam(tc.header); got != tc.want {
			t.Errorf("resourceMetadataParam(%q) = %q, want %q", tc.header, got, tc.want)
		}
	}
}

package useroauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

func TestAuthorize(t *testing.T) {
	ep := Endpoints{Issuer: "https://as.example/", Authorization: "https://as.example/authorize"}
	c := Client{ID: "https://hub.example/oauth/client.json", Secret: "never-in-a-url-0123"}
	tests := []struct {
		name     string
		ep       Endpoints
		scopes   []string
		resource string
		want     url.Values // besides code_challenge
		absent   []string
	}{{
		name:     "scopes and resource",
		ep:       ep,
		scopes:   []string{"openid", "offline_access", "repo"},
		resource: "https://mcp.example/mcp",
		want: url.Values{"response_type": {"code"}, "client_id": {c.ID}, "redirect_uri": {"https://hub.example/callback"},
			"state": {"opaque-state"}, "code_challenge_method": {"S256"}, "scope": {"openid offline_access repo"}, "resource": {"https://mcp.example/mcp"}},
		absent: []string{"client_secret", "code_verifier"},
	}, {
		name:   "no scope, no resource",
		ep:     ep,
		want:   url.Values{"response_type": {"code"}, "client_id": {c.ID}, "state": {"opaque-state"}, "code_challenge_method": {"S256"}},
		absent: []string{"scope", "resource", "client_secret", "code_verifier"},
	}, {
		name: "endpoint with a query of its own",
		ep:   Endpoints{Authorization: "https://as.example/authorize?tenant=t1"},
		want: url.Values{"tenant": {"t1"}, "response_type": {"code"}, "code_challenge_method": {"S256"}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := Authorize(tc.ep, c, "https://hub.example/callback", "opaque-state", tc.scopes, tc.resource)
			u, err := url.Parse(req.URL)
			if err != nil {
				t.Fatal(err)
			}
			if got := u.Scheme + "://" + u.Host + u.Path; got != "https://as.example/authorize" {
				t.Errorf("endpoint %s", got)
			}
			q := u.Query()
			for k, v := range tc.want {
				if got := q[k]; strings.Join(got, "|") != strings.Join(v, "|") {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			for _, k := range tc.absent {
				if q.Has(k) {
					t.Errorf("%s is in the URL: %s", k, req.URL)
				}
			}
			if len(req.Verifier) < 43 || len(req.Verifier) > 128 {
				t.Errorf("verifier of %d characters", len(req.Verifier))
			}
			if q.Get("code_challenge") != oauth2.S256ChallengeFromVerifier(req.Verifier) {
				t.Errorf("code_challenge %q is not S256 of the verifier", q.Get("code_challenge"))
			}
			if strings.Contains(req.URL, req.Verifier) || strings.Contains(req.URL, c.Secret) {
				t.Errorf("the URL carries the verifier or the secret: %s", req.URL)
			}
		})
	}
	a := Authorize(ep, c, "https://hub.example/callback", "s", nil, "")
	b := Authorize(ep, c, "https://hub.example/callback", "s", nil, "")
	if a.Verifier == b.Verifier {
		t.Error("two requests share a verifier")
	}
}

func TestCheckIssuer(t *testing.T) {
	const issuer = "https://as.example/"
	tests := []struct {
		name     string
		supports bool
		iss      string
		errHas   string // "" for no error
	}{
		{"present and equal", true, issuer, ""},
		{"present and equal, not advertised", false, issuer, ""},
		{"absent, not advertised", false, "", ""},
		{"absent but advertised", true, "", "has no iss"},
		{"another issuer", true, "https://evil.example/", `names issuer "https://evil.example/"`},
		{"another issuer, not advertised", false, "https://evil.example/", `names issuer "https://evil.example/"`},
		{"trailing slash differs", true, "https://as.example", `names issuer "https://as.example"`},
		{"case differs", true, "https://AS.example/", "names issuer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckIssuer(Endpoints{Issuer: issuer, IssParameter: tc.supports}, tc.iss)
			switch {
			case tc.errHas == "" && err != nil:
				t.Errorf("error: %v", err)
			case tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas)):
				t.Errorf("error %v, want one with %q", err, tc.errHas)
			case tc.errHas != "" && !strings.Contains(err.Error(), issuer):
				t.Errorf("error %v does not name the expected issuer", err)
			}
		})
	}
}

// tokenFake is a token and revocation endpoint that records each request's
// form and Authorization header and answers with the next of answers.
type tokenFake struct {
	*httptest.Server
	mu      sync.Mutex
	answers []answer
	forms   []url.Values
	auths   []string
}

func newTokenFake(t *testing.T, answers ...answer) *tokenFake {
	t.Helper()
	f := &tokenFake{answers: answers}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		f.mu.Lock()
		f.forms = append(f.forms, r.PostForm)
		f.auths = append(f.auths, r.Header.Get("Authorization"))
		a := answer{status: 500, body: "no more answers"}
		if len(f.answers) > 0 {
			a, f.answers = f.answers[0], f.answers[1:]
		}
		f.mu.Unlock()
		w.Header().Set("Content-Type", cmpOr(a.ctype, "application/json"))
		w.WriteHeader(cmpOr(a.status, 200))
		io.WriteString(w, a.body)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *tokenFake) request(i int) (url.Values, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.forms) {
		return nil, ""
	}
	return f.forms[i], f.auths[i]
}

func basic(id, secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(secret)))
}

func TestExchange(t *testing.T) {
	idToken := jwt(`{"sub":"alice","iss":"x"}`)
	tests := []struct {
		name     string
		client   Client
		resource string
		answer   answer
		auth     string     // Authorization header wanted
		form     url.Values // form values wanted ("" value: absent)
		want     Token
	}{{
		name:     "public client with resource",
		client:   Client{ID: "pub"},
		resource: "https://mcp.example/mcp",
		answer:   answer{body: `{"access_token":"at-1","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-1","scope":"openid repo","id_token":"` + idToken + `"}`},
		form: url.Values{"grant_type": {"authorization_code"}, "code": {"code-1"}, "code_verifier": {"verifier-1"},
			"redirect_uri": {"https://hub.example/cb"}, "client_id": {"pub"}, "resource": {"https://mcp.example/mcp"}, "client_secret": {""}},
		want: Token{AccessToken: "at-1", RefreshToken: "rt-1", TokenType: "Bearer", Scopes: []string{"openid", "repo"}, IDToken: idToken},
	}, {
		name:   "confidential client, basic by default, no resource",
		client: Client{ID: "conf id", Secret: "se:cret"},
		answer: answer{body: `{"access_token":"at-2","token_type":"bearer"}`},
		auth:   basic("conf id", "se:cret"),
		form:   url.Values{"client_id": {""}, "client_secret": {""}, "resource": {""}},
		want:   Token{AccessToken: "at-2", TokenType: "bearer"},
	}, {
		name:   "confidential client, post",
		client: Client{ID: "conf", Secret: "sec-post", AuthStyle: "post"},
		answer: answer{ctype: "application/x-www-form-urlencoded", body: "access_token=at-3&token_type=bearer&refresh_token=rt-3"},
		form:   url.Values{"client_id": {"conf"}, "client_secret": {"sec-post"}},
		want:   Token{AccessToken: "at-3", TokenType: "bearer", RefreshToken: "rt-3"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newTokenFake(t, tc.answer)
			ep := Endpoints{Token: f.URL + "/token"}
			before := time.Now()
			got, err := Exchange(context.Background(), f.Client(), ep, tc.client, "https://hub.example/cb", "code-1", "verifier-1", tc.resource)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			form, auth := f.request(0)
			if auth != tc.auth {
				t.Errorf("Authorization %q, want %q", auth, tc.auth)
			}
			checkForm(t, form, tc.form)
			if strings.Contains(tc.answer.body, "expires_in") {
				if got.Expiry.Before(before.Add(3599*time.Second)) || got.Expiry.After(time.Now().Add(3601*time.Second)) {
					t.Errorf("expiry %v", got.Expiry)
				}
			} else if !got.Expiry.IsZero() {
				t.Errorf("expiry %v, want zero", got.Expiry)
			}
			got.Expiry = time.Time{}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("token\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func checkForm(t *testing.T, form, want url.Values) {
	t.Helper()
	for k, v := range want {
		if v[0] == "" {
			if form.Has(k) {
				t.Errorf("form has %s=%q", k, form.Get(k))
			}
			continue
		}
		if form.Get(k) != v[0] {
			t.Errorf("form %s=%q, want %q (form %v)", k, form.Get(k), v[0], form)
		}
	}
}

func TestRefresh(t *testing.T) {
	tests := []struct {
		name     string
		client   Client
		resource string
		answer   answer
		auth     string
		form     url.Values
		want     string // refresh token after
	}{{
		name:     "rotated",
		client:   Client{ID: "pub"},
		resource: "https://mcp.example/mcp",
		answer:   answer{body: `{"access_token":"at-2","token_type":"Bearer","refresh_token":"rt-new"}`},
		form: url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"rt-old"}, "client_id": {"pub"},
			"resource": {"https://mcp.example/mcp"}, "scope": {""}, "client_secret": {""}},
		want: "rt-new",
	}, {
		name:   "not rotated: the old one kept",
		client: Client{ID: "conf", Secret: "sec-basic", AuthStyle: "basic"},
		answer: answer{body: `{"access_token":"at-2","token_type":"Bearer","expires_in":60}`},
		auth:   basic("conf", "sec-basic"),
		form:   url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"rt-old"}, "resource": {""}, "scope": {""}, "client_id": {""}},
		want:   "rt-old",
	}, {
		name:   "post",
		client: Client{ID: "conf", Secret: "sec-post", AuthStyle: "post"},
		answer: answer{body: `{"access_token":"at-2","token_type":"Bearer","refresh_token":""}`},
		form:   url.Values{"client_id": {"conf"}, "client_secret": {"sec-post"}},
		want:   "rt-old",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newTokenFake(t, tc.answer)
			got, err := Refresh(context.Background(), f.Client(), Endpoints{Token: f.URL}, tc.client, "rt-old", tc.resource)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			form, auth := f.request(0)
			if auth != tc.auth {
				t.Errorf("Authorization %q, want %q", auth, tc.auth)
			}
			checkForm(t, form, tc.form)
			if got.RefreshToken != tc.want || got.AccessToken != "at-2" {
				t.Errorf("token %+v, want refresh token %q", got, tc.want)
			}
		})
	}
}

func TestRevoke(t *testing.T) {
	if err := Revoke(context.Background(), http.DefaultClient, Endpoints{}, Client{ID: "c"}, "tok", ""); !errors.Is(err, ErrNoRevocation) {
		t.Errorf("without an endpoint: %v, want ErrNoRevocation", err)
	}
	tests := []struct {
		name   string
		client Client
		hint   string
		answer answer
		status int    // of the *Error wanted; 0: success
		code   string // of the *Error wanted
		auth   string
		form   url.Values
	}{{
		name:   "public client, hint",
		client: Client{ID: "pub"},
		hint:   "refresh_token",
		answer: answer{body: ""},
		form:   url.Values{"token": {"tok-1"}, "token_type_hint": {"refresh_token"}, "client_id": {"pub"}, "client_secret": {""}},
	}, {
		name:   "basic, no hint",
		client: Client{ID: "conf", Secret: "sec-rev"},
		answer: answer{body: "{}"},
		auth:   basic("conf", "sec-rev"),
		form:   url.Values{"token": {"tok-1"}, "token_type_hint": {""}, "client_id": {""}},
	}, {
		name:   "post",
		client: Client{ID: "conf", Secret: "sec-rev", AuthStyle: "post"},
		answer: answer{body: "{}"},
		form:   url.Values{"token": {"tok-1"}, "client_id": {"conf"}, "client_secret": {"sec-rev"}},
	}, {
		name:   "503 is an error",
		client: Client{ID: "pub"},
		answer: answer{status: 503, ctype: "text/plain", body: "try later"},
		status: 503,
	}, {
		name:   "unsupported token type",
		client: Client{ID: "pub"},
		hint:   "access_token",
		answer: answer{status: 400, body: `{"error":"unsupported_token_type"}`},
		status: 400,
		code:   "unsupported_token_type",
	}, {
		name:   "201 is not 200",
		client: Client{ID: "pub"},
		answer: answer{status: 201},
		status: 201,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newTokenFake(t, tc.answer)
			err := Revoke(context.Background(), f.Client(), Endpoints{Revocation: f.URL + "/revoke"}, tc.client, "tok-1", tc.hint)
			var oe *Error
			switch {
			case tc.status == 0 && err != nil:
				t.Fatalf("error: %v", err)
			case tc.status != 0 && (!errors.As(err, &oe) || oe.Status != tc.status || oe.Code != tc.code):
				t.Fatalf("error %#v, want status %d code %q", err, tc.status, tc.code)
			}
			form, auth := f.request(0)
			if tc.form != nil {
				checkForm(t, form, tc.form)
				if auth != tc.auth {
					t.Errorf("Authorization %q, want %q", auth, tc.auth)
				}
			}
		})
	}
}

// TestErrorsHoldNoSecret: whatever a server writes back (the whole
// request, in JSON, HTML or plain text, with any status), the errors of
// Exchange, Refresh and Revoke hold no client secret, code, verifier or
// token.
func TestErrorsHoldNoSecret(t *testing.T) {
	const (
		id       = "client-id-1"
		secret   = "client-SECRET-4f9a8b7c6d"
		code     = "AUTHCODE-9d8c7b6a5f4e"
		verifier = "VERIFIER-aaaabbbbccccddddeeeeffff0000111122223333"
		refresh  = "REFRESH-1234567890abcdef"
		access   = "ACCESS-fedcba0987654321"
	)
	secrets := []string{secret, code, verifier, refresh, access, url.QueryEscape(secret), base64.StdEncoding.EncodeToString([]byte(id + ":" + secret))}
	// echo answers with everything it received, in the given form.
	echo := func(status int, ctype string, wrap func(string) string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			raw, _ := io.ReadAll(r.Body)
			dump := r.Header.Get("Authorization") + " " + string(raw)
			if q, err := url.QueryUnescape(string(raw)); err == nil {
				dump += " " + q
			}
			w.Header().Set("Content-Type", ctype)
			w.WriteHeader(status)
			io.WriteString(w, wrap(dump))
		}
	}
	jsonErr := func(code string) func(string) string {
		return func(dump string) string {
			b, _ := json.Marshal(map[string]string{"error": code, "error_description": "you sent " + dump})
			return string(b)
		}
	}
	htmlPage := func(dump string) string { return "<html><body><pre>" + dump + "</pre></body></html>" }
	plain := func(dump string) string { return dump }
	tests := []struct {
		name    string
		handler http.HandlerFunc
		code    string // the Error's Code wanted
		status  int
	}{
		{"400 OAuth error echoing the request", echo(400, "application/json", jsonErr("invalid_grant")), "invalid_grant", 400},
		{"200 with an error code", echo(200, "application/json", jsonErr("invalid_request")), "invalid_request", 200},
		{"500 HTML echoing the request", echo(500, "text/html", htmlPage), "", 500},
		{"200 HTML echoing the request", echo(200, "text/html; charset=utf-8", htmlPage), "", 200},
		{"401 text echoing the request", echo(401, "text/plain", plain), "", 401},
		{"200 JSON without access_token", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"refresh_token":"`+refresh+`","token_type":"bearer","id_token":"`+access+`"}`)
		}, "", 200},
		{"200 JSON array with a token", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `["`+access+`"]`)
		}, "", 200},
		{"a secret across the quote's cut", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(502)
			io.WriteString(w, strings.Repeat("x", maxQuote-6)+" "+secret+" "+code+" "+refresh)
		}, "", 502},
		{"answer over 64 KiB", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, strings.Repeat(secret+" ", maxAnswer/len(secret)+10))
		}, "", 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			ep := Endpoints{Issuer: srv.URL, Token: srv.URL + "/token", Revocation: srv.URL + "/revoke"}
			for _, style := range []string{"basic", "post"} {
				c := Client{ID: id, Secret: secret, AuthStyle: style}
				_, exErr := Exchange(context.Background(), srv.Client(), ep, c, "https://hub.example/cb", code, verifier, "https://mcp.example/")
				_, rfErr := Refresh(context.Background(), srv.Client(), ep, c, refresh, "")
				rvErr := Revoke(context.Background(), srv.Client(), ep, c, refresh, "refresh_token")
				for _, e := range []struct {
					op  string
					err error
				}{{"code exchange", exErr}, {"token refresh", rfErr}, {"token revocation", rvErr}} {
					if e.op == "token revocation" && tc.status == 200 && tc.name != "answer over 64 KiB" {
						continue // a 200 is a revocation done, whatever its body
					}
					var oe *Error
					if !errors.As(e.err, &oe) {
						t.Errorf("%s (%s): %v is no *Error", e.op, style, e.err)
						continue
					}
					text := e.err.Error()
					for _, s := range secrets {
						if strings.Contains(text, s[:12]) || strings.Contains(fmt.Sprintf("%+v", *oe), s[:12]) {
							t.Errorf("%s (%s): error holds %q:\n%s", e.op, style, s, text)
						}
					}
					if oe.Op != e.op || !strings.HasPrefix(text, e.op+" at "+srv.URL) {
						t.Errorf("%s (%s): error %q does not say what and where", e.op, style, text)
					}
					if oe.Status != tc.status || oe.Code != tc.code && e.op != "token revocation" {
						t.Errorf("%s (%s): status %d code %q, want %d %q: %s", e.op, style, oe.Status, oe.Code, tc.status, tc.code, text)
					}
					limit := maxQuote + len("not a token answer: HTML: ") + len("…")
					if oe.Code != "" {
						limit = maxDescription + len("…")
					}
					if n := len([]rune(oe.Description)); n > limit {
						t.Errorf("%s (%s): description of %d characters", e.op, style, n)
					}
					t.Logf("%s (%s): %s", e.op, style, text)
				}
			}
		})
	}
}

// TestTransportErrors: a token endpoint that cannot be reached is an
// *Error without a status or a code, whose cause is kept.
func TestTransportErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close()
	ep := Endpoints{Token: u + "/token?key=QUERYSECRET", Revocation: u + "/revoke"}
	_, err := Refresh(context.Background(), http.DefaultClient, ep, Client{ID: "c"}, "REFRESH-1234567890abcdef", "")
	var oe *Error
	if !errors.As(err, &oe) || oe.Status != 0 || oe.Code != "" || oe.Err == nil {
		t.Fatalf("error %#v", err)
	}
	if strings.Contains(err.Error(), "QUERYSECRET") || strings.Contains(err.Error(), "REFRESH-") {
		t.Errorf("error shows the query or the token: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Exchange(ctx, http.DefaultClient, ep, Client{ID: "c"}, "https://hub.example/cb", "code-0123456789", "v", "")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a canceled exchange: %v, want context.Canceled in the chain", err)
	}
	if err := Revoke(context.Background(), http.DefaultClient, ep, Client{ID: "c", Secret: "s", AuthStyle: "bearer"}, "t", ""); err == nil || !strings.Contains(err.Error(), `"bearer"`) {
		t.Errorf("an unknown auth style: %v", err)
	}
}

func TestErrorText(t *testing.T) {
	tests := []struct {
		err  Error
		want string
	}{
		{Error{Op: "token refresh", Endpoint: "http://as/token", Status: 400, Code: "invalid_grant", Description: "expired"}, "token refresh at http://as/token: 400 invalid_grant: expired"},
		{Error{Op: "token refresh", Endpoint: "http://as/token", Status: 400, Code: "invalid_grant"}, "token refresh at http://as/token: 400 invalid_grant"},
		{Error{Op: "token revocation", Endpoint: "http://as/r", Status: 503, Description: "try later"}, "token revocation at http://as/r: 503: try later"},
		{Error{Op: "code exchange", Endpoint: "http://as/t", Err: context.DeadlineExceeded}, "code exchange at http://as/t: context deadline exceeded"},
		{Error{Op: "client registration", Endpoint: "http://as/reg", Status: 200, Description: "not JSON", Err: errors.New("bad")}, "client registration at http://as/reg: 200: not JSON (bad)"},
	}
	for _, tc := range tests {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

// jwt is an unsigned compact JWT with claims as its payload.
func jwt(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + enc([]byte(claims)) + ".c2lnbmF0dXJl"
}

func TestSubject(t *testing.T) {
	tests := []struct {
		token, want string
	}{
		{jwt(`{"sub":"alice@example.test","aud":["x"]}`), "alice@example.test"},
		{jwt(`{"iss":"x"}`), ""},
		{jwt(`{"sub":42}`), ""},
		{jwt(`["sub"]`), ""},
		{strings.TrimSuffix(jwt(`{"sub":"bob"}`), ".c2lnbmF0dXJl") + ".", "bob"},
		{base64.RawURLEncoding.EncodeToString([]byte(`{}`)) + "." + base64.URLEncoding.EncodeToString([]byte(`{"sub":"padded"}`)) + ".sig", "padded"},
		{"gho_opaqueToken0123456789", ""},
		{"a.b", ""},
		{"a.!!!.c", ""},
		{"", ""},
	}
	for _, tc := range tests {
		if got := Subject(tc.token); got != tc.want {
			t.Errorf("Subject(%q) = %q, want %q", tc.token, got, tc.want)
		}
	}
}

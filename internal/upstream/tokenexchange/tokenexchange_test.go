package tokenexchange

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/identity"
)

// jwtOf makes an unsigned compact JWT with claims: the exchanger reads
// claims only to say who an upstream sees and when a token ends.
func jwtOf(claims map[string]any) string {
	h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`))
	b, _ := json.Marshal(claims)
	return h + "." + base64.RawURLEncoding.EncodeToString(b) + ".sig"
}

// fakeIdP answers token exchanges as a token service does, and records the
// forms it got.
type fakeIdP struct {
	srv    *httptest.Server
	mu     sync.Mutex
	forms  []map[string]string
	user   string // basic auth user seen last
	answer func(form map[string]string) (int, any)
	n      atomic.Int64
}

func newFakeIdP(t *testing.T, answer func(form map[string]string) (int, any)) *fakeIdP {
	f := &fakeIdP{answer: answer}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		form := map[string]string{}
		for k := range r.PostForm {
			form[k] = r.PostForm.Get(k)
		}
		user, _, _ := r.BasicAuth()
		f.mu.Lock()
		f.forms = append(f.forms, form)
		f.user = user
		f.mu.Unlock()
		f.n.Add(1)
		status, body := f.answer(form)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// minted answers an exchange with a token for the subject token's sub,
// acted by the hub, living ttl.
func minted(ttl time.Duration) func(map[string]string) (int, any) {
	return func(form map[string]string) (int, any) {
		sub := claimsOf(form["subject_token"]).Sub
		tok := jwtOf(map[string]any{"sub": sub, "aud": form["audience"], "act": map[string]any{"sub": "mcp-hub"},
			"exp": time.Now().Add(ttl).Unix(), "n": time.Now().UnixNano()})
		return 200, map[string]any{"access_token": tok, "issued_token_type": TypeAccessToken, "token_type": "Bearer", "expires_in": int(ttl.Seconds())}
	}
}

func newExchanger(f *fakeIdP, mut func(*Options)) *Exchanger {
	o := Options{Server: "github", HTTPClient: f.srv.Client(), Exchange: config.TokenExchange{
		OAuthClient: config.OAuthClient{TokenURL: f.srv.URL + "/token", ClientID: "mcp-hub", ClientSecretValue: "client-s3cret",
			Audience: "github-mcp", Resource: "https://github-mcp.example/mcp", Scopes: []string{"repo:read", "issues"}},
		Issuer: "https://idp.example"}}
	if mut != nil {
		mut(&o)
	}
	return New(o)
}

func callerToken(sub string, exp time.Time) (string, identity.Subject) {
	tok := jwtOf(map[string]any{"sub": sub, "iss": "https://idp.example", "exp": exp.Unix()})
	return tok, identity.OAuthSubject(tok, "https://idp.example", exp)
}

func TestExchangeRequestAndSeen(t *testing.T) {
	f := newFakeIdP(t, minted(5*time.Minute))
	x := newExchanger(f, nil)
	raw, subj := callerToken("alice", time.Now().Add(time.Hour))
	tok, err := x.Token(context.Background(), subj)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"grant_type": GrantType, "subject_token": raw, "subject_token_type": TypeAccessToken,
		"requested_token_type": TypeAccessToken, "audience": "github-mcp", "resource": "https://github-mcp.example/mcp",
		"scope": "repo:read issues",
	}
	got := f.forms[0]
	for k, v := range want {
		if got[k] != v {
			t.Errorf("form %s = %q, want %q", k, got[k], v)
		}
	}
	if _, ok := got["client_secret"]; ok || f.user != "mcp-hub" {
		t.Errorf("client authentication: basic user %q, form %v; want HTTP Basic as mcp-hub", f.user, got)
	}
	if tok.AccessToken == raw || tok.Seen != (identity.Seen{Subject: "alice", Actor: "mcp-hub"}) {
		t.Errorf("token %+v", tok)
	}

	// A ServiceAccount token goes as a JWT; client_secret_post puts the
	// client in the form.
	xp := newExchanger(f, func(o *Options) {
		o.Exchange.SubjectToken = config.SubjectAny
		o.Exchange.AuthStyle = config.OAuthAuthPost
	})
	sa := jwtOf(map[string]any{"sub": "system:serviceaccount:agents:reviewer", "exp": time.Now().Add(time.Hour).Unix()})
	if _, err := xp.Token(context.Background(), identity.ServiceAccountSubject(sa)); err != nil {
		t.Fatal(err)
	}
	last := f.forms[len(f.forms)-1]
	if last["subject_token_type"] != TypeJWT || last["client_id"] != "mcp-hub" || last["client_secret"] != "client-s3cret" {
		t.Errorf("service account exchange form = %v", last)
	}
}

// TestCachedPerCallerToken: one exchange per caller token and lifetime,
// whatever the number of calls, concurrent or not; another caller gets
// its own.
func TestCachedPerCallerToken(t *testing.T) {
	f := newFakeIdP(t, minted(5*time.Minute))
	x := newExchanger(f, nil)
	_, alice := callerToken("alice", time.Now().Add(time.Hour))
	_, bob := callerToken("bob", time.Now().Add(time.Hour))
	var wg sync.WaitGroup
	toks := make([]Token, 100)
	errs := make([]error, 100)
	for i := range 100 {
		wg.Go(func() { toks[i], errs[i] = x.Token(context.Background(), alice) })
	}
	wg.Wait()
	for i := range 100 {
		if errs[i] != nil || toks[i].AccessToken != toks[0].AccessToken {
			t.Fatalf("call %d: %v %q", i, errs[i], toks[i].AccessToken)
		}
	}
	b, err := x.Token(context.Background(), bob)
	if err != nil {
		t.Fatal(err)
	}
	if b.AccessToken == toks[0].AccessToken || b.Seen.Subject != "bob" {
		t.Errorf("bob got %+v, alice %+v", b.Seen, toks[0].Seen)
	}
	exchanged, failed, cached := x.Stats()
	t.Logf("100 calls of alice + 1 of bob: %d exchanges, %d from the cache", exchanged, cached)
	if exchanged != 2 || failed != 0 || f.n.Load() != 2 {
		t.Errorf("exchanges = %d (idp saw %d), failures %d; want 2", exchanged, f.n.Load(), failed)
	}
}

// TestRenewedBeforeExpiry: a cached token is replaced shortly before it
// ends, and never outlives the caller's own token.
func TestRenewedBeforeExpiry(t *testing.T) {
	f := newFakeIdP(t, minted(5*time.Minute))
	now := time.Now()
	x := newExchanger(f, func(o *Options) { o.Now = func() time.Time { return now } })
	_, alice := callerToken("alice", now.Add(time.Hour))
	first, _ := x.Token(context.Background(), alice)
	now = now.Add(4 * time.Minute) // within the token's life, before its last 30 s
	if again, _ := x.Token(context.Background(), alice); again.AccessToken != first.AccessToken {
		t.Fatal("exchanged again within the token's life")
	}
	now = now.Add(31 * time.Second) // 29 s left: replaced
	if again, _ := x.Token(context.Background(), alice); again.AccessToken == first.AccessToken {
		t.Fatal("a token about to expire was used")
	}

	// The caller's token ends in 2 minutes: so does the cached one.
	now = time.Now()
	x = newExchanger(f, func(o *Options) { o.Now = func() time.Time { return now } })
	_, short := callerToken("carol", now.Add(2*time.Minute))
	s1, _ := x.Token(context.Background(), short)
	now = now.Add(110 * time.Second)
	s2, err := x.Token(context.Background(), short)
	if err != nil || s2.AccessToken == s1.AccessToken {
		t.Fatalf("cached past the caller's own token's end (err %v)", err)
	}
	now = now.Add(time.Minute) // the caller's token has expired
	_, dave := callerToken("dave", now.Add(time.Hour))
	x.Token(context.Background(), dave) // an exchange drops what is past its use
	if x.cache.Len() != 1 {
		t.Fatalf("%d tokens cached after carol's token expired, want dave's alone", x.cache.Len())
	}
	n := f.n.Load()
	_, err = x.Token(context.Background(), short)
	var xe *Error
	if !errors.As(err, &xe) || xe.Code != "invalid_grant" || f.n.Load() != n {
		t.Fatalf("expired caller token: err %v, idp asked %d more times; want invalid_grant without asking", err, f.n.Load()-n)
	}
}

func TestForgetRefusedToken(t *testing.T) {
	f := newFakeIdP(t, minted(5*time.Minute))
	x := newExchanger(f, nil)
	_, alice := callerToken("alice", time.Now().Add(time.Hour))
	first, _ := x.Token(context.Background(), alice)
	x.Forget(alice, "some other token") // not the cached one: kept
	if again, _ := x.Token(context.Background(), alice); again.AccessToken != first.AccessToken {
		t.Fatal("Forget of another token dropped the cached one")
	}
	x.Forget(alice, first.AccessToken)
	if again, _ := x.Token(context.Background(), alice); again.AccessToken == first.AccessToken {
		t.Fatal("a refused token was used again")
	}
}

// TestFailuresNameTheAnswer: a refused or failed exchange names the
// server, the endpoint and the authorization server's code, never a token
// or the client secret, and nothing is cached.
func TestFailuresNameTheAnswer(t *testing.T) {
	raw, alice := callerToken("alice", time.Now().Add(time.Hour))
	cases := []struct {
		name   string
		status int
		body   any
		want   string
	}{
		{"invalid_grant", 400, map[string]any{"error": "invalid_grant", "error_description": "subject token " + raw + " is revoked"},
			"400 invalid_grant: subject token [redacted] is revoked"},
		{"invalid_scope", 400, map[string]any{"error": "invalid_scope", "error_description": "scope issues not allowed"},
			"400 invalid_scope: scope issues not allowed"},
		{"invalid_target", 400, map[string]any{"error": "invalid_target"}, "400 invalid_target"},
		{"server error", 502, "bad gateway", "HTTP 502 Bad Gateway"},
		{"no token", 200, map[string]any{"token_type": "Bearer"}, "the answer holds no access_token"},
		{"passthrough", 200, map[string]any{"access_token": raw, "token_type": "Bearer"}, "the answer is the caller's own token"},
		{"wrong type", 200, map[string]any{"access_token": "x", "token_type": "DPoP"}, `the token is of type "DPoP", not Bearer`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeIdP(t, func(map[string]string) (int, any) { return tc.status, tc.body })
			x := newExchanger(f, nil)
			_, err := x.Token(context.Background(), alice)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "token exchange for upstream github at "+f.srv.URL+"/token failed: ") || !strings.Contains(msg, tc.want) {
				t.Fatalf("error %q, want it to name the server, the endpoint and %q", msg, tc.want)
			}
			if strings.Contains(msg, raw) || strings.Contains(msg, "client-s3cret") {
				t.Fatalf("error leaks a credential: %s", msg)
			}
			x.Token(context.Background(), alice)
			if f.n.Load() != 2 {
				t.Errorf("a failed exchange was cached: the idp was asked %d times for 2 calls", f.n.Load())
			}
			if _, failed, _ := x.Stats(); failed != 2 {
				t.Errorf("failures = %d, want 2", failed)
			}
		})
	}

	// Unreachable.
	f := newFakeIdP(t, minted(time.Minute))
	f.srv.Close()
	_, err := newExchanger(f, nil).Token(context.Background(), alice)
	if err == nil || !strings.Contains(err.Error(), "token exchange for upstream github at ") || strings.Contains(err.Error(), raw) {
		t.Fatalf("unreachable: %v", err)
	}
}

// TestAcceptsOnlyWhatItMaySend: callers without a token, of the wrong kind,
// or of another issuer are refused without a request.
func TestAcceptsOnlyWhatItMaySend(t *testing.T) {
	f := newFakeIdP(t, minted(time.Minute))
	_, alice := callerToken("alice", time.Now().Add(time.Hour))
	other := identity.OAuthSubject(jwtOf(map[string]any{"sub": "eve"}), "https://other.example", time.Now().Add(time.Hour))
	sa := identity.ServiceAccountSubject(jwtOf(map[string]any{"sub": "system:serviceaccount:a:b"}))
	cases := []struct {
		name string
		kind config.SubjectTokenKind
		subj identity.Subject
		want string // "" accepted
	}{
		{"oauth", "", alice, ""},
		{"no token", "", identity.Subject{}, "this caller has no token to exchange: call with an OAuth access token"},
		{"no token, any", config.SubjectAny, identity.Subject{}, "call with an OAuth access token or a ServiceAccount token"},
		{"no token, service accounts", config.SubjectServiceAccount, identity.Subject{}, "call with a ServiceAccount token"},
		{"service account to oauth", config.SubjectOAuth, sa, "exchanges only OAuth access tokens"},
		{"oauth to service account", config.SubjectServiceAccount, alice, "exchanges only ServiceAccount tokens"},
		{"service account", config.SubjectServiceAccount, sa, ""},
		{"other issuer", config.SubjectAny, other, "exchanges tokens of https://idp.example, and this caller's token was issued by https://other.example"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x := newExchanger(f, func(o *Options) { o.Exchange.SubjectToken = tc.kind })
			n := f.n.Load()
			_, err := x.Token(context.Background(), tc.subj)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err %v, want %q", err, tc.want)
			case tc.want != "" && f.n.Load() != n:
				t.Fatal("a refused subject was sent to the token endpoint")
			}
		})
	}
}

// TestSlowIdPDoesNotHoldTheCaller: a caller that gives up stops waiting,
// and the exchange it started still serves the next caller.
func TestSlowIdPDoesNotHoldTheCaller(t *testing.T) {
	release := make(chan struct{})
	f := newFakeIdP(t, func(form map[string]string) (int, any) {
		<-release
		return minted(time.Minute)(form)
	})
	x := newExchanger(f, nil)
	_, alice := callerToken("alice", time.Now().Add(time.Hour))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := x.Token(ctx, alice); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the caller's deadline", err)
	}
	close(release)
	tok, err := x.Token(context.Background(), alice)
	if err != nil || tok.Seen.Subject != "alice" {
		t.Fatalf("next call: %+v %v", tok, err)
	}
	if n := f.n.Load(); n != 1 {
		t.Errorf("idp asked %d times, want 1 (the first exchange served the second call)", n)
	}
}

// TestEndpointFromIssuer: the token endpoint is read from the issuer's
// metadata once, and refused when it would send callers' tokens in clear.
func TestEndpointFromIssuer(t *testing.T) {
	var asked atomic.Int64
	endpoint := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		iss := "http://" + r.Host
		json.NewEncoder(w).Encode(map[string]string{"issuer": iss, "token_endpoint": strings.ReplaceAll(endpoint, "ISS", iss)})
	}))
	defer srv.Close()
	for _, tc := range []struct{ endpoint, want string }{
		{"ISS/token", ""},
		{"http://login.example.com/token", `not an https URL (http only on loopback)`},
		{"", "its metadata names no token_endpoint"},
	} {
		endpoint = tc.endpoint
		asked.Store(0)
		find := Endpoint(srv.Client(), srv.URL)
		u, err := find(context.Background())
		if tc.want == "" {
			if err != nil || u != srv.URL+"/token" {
				t.Fatalf("endpoint %q, %v", u, err)
			}
			if u2, _ := find(context.Background()); u2 != u || asked.Load() != 1 {
				t.Fatalf("the metadata was read %d times for two uses", asked.Load())
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("endpoint %q: err %v, want %q", tc.endpoint, err, tc.want)
		}
	}
}

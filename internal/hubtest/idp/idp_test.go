package idp

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// The test's parties: alice calls the hub with her own token; the hub
// exchanges it for one for the upstream.
const (
	hubAudience      = "http://127.0.0.1:9/mcp"    // what alice's tokens are for
	upstreamAudience = "https://upstream.test/mcp" // what the hub exchanges them for
)

var (
	alice = Client{ID: "alice", Secret: "alice-secret-0123456789", Scopes: []string{"mcp:tools"}}
	hub   = Client{ID: "hub", Secret: "hub-secret-0123456789", Exchange: true,
		Audiences: []string{upstreamAudience, "https://other.test/mcp"}, Scopes: []string{"tools", "read"}}
)

// TestClientCredentials gets a client credentials token and checks its
// claims, its signature against the JWKS, and the discovery document.
func TestClientCredentials(t *testing.T) {
	s := Start(t, Options{Clients: []Client{alice, hub}, AccessTokenTTL: 90 * time.Second})

	d := s.Discovery()
	if !strings.HasPrefix(s.Issuer(), "http://127.0.0.1:") || s.TokenURL() != s.Issuer()+"/oauth/token" || s.JWKSURL() != s.Issuer()+"/keys" {
		t.Errorf("issuer %s, token %s, jwks %s", s.Issuer(), s.TokenURL(), s.JWKSURL())
	}
	if grants := toString(d["grant_types_supported"]); grants != "authorization_code refresh_token client_credentials "+GrantTokenExchange {
		t.Errorf("grant_types_supported %v", d["grant_types_supported"])
	}

	for _, tc := range []struct {
		name     string
		audience string
		scopes   []string
		wantAud  []string
	}{
		{name: "audience", audience: hubAudience, scopes: []string{"mcp:tools"}, wantAud: []string{hubAudience}},
		{name: "no audience", wantAud: []string{"alice"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := s.ClientToken(t, alice.ID, alice.Secret, tc.audience, tc.scopes...)
			header, claims := decode(t, tok)
			verify(t, s, tok)
			if header["alg"] != "RS256" || header["kid"] == nil {
				t.Errorf("header %v", header)
			}
			if claims["iss"] != s.Issuer() || claims["sub"] != "alice" || claims["client_id"] != "alice" {
				t.Errorf("iss %v sub %v client_id %v", claims["iss"], claims["sub"], claims["client_id"])
			}
			if aud := strs(claims["aud"]); !slices.Equal(aud, tc.wantAud) {
				t.Errorf("aud %v, want %v", aud, tc.wantAud)
			}
			if claims["scope"] != optional(strings.Join(tc.scopes, " ")) {
				t.Errorf("scope %v, want %q", claims["scope"], tc.scopes)
			}
			if claims["act"] != nil {
				t.Errorf("act %v in a client credentials token", claims["act"])
			}
			if life := lifetime(t, claims); life != 90*time.Second {
				t.Errorf("lifetime %v, want 90s", life)
			}
		})
	}

	// RFC 8707's resource is a target too; one named twice is one audience.
	resp := token(t, s, alice.ID, alice.Secret, url.Values{"grant_type": {GrantClientCredentials},
		"resource": {hubAudience}, "audience": {hubAudience + " https://other.test/mcp"}})
	if _, claims := decode(t, resp.AccessToken); !slices.Equal(strs(claims["aud"]), []string{hubAudience, "https://other.test/mcp"}) {
		t.Errorf("aud with audience and resource: %v", claims["aud"])
	}

	// Refusals of the grant itself.
	for _, tc := range []struct {
		name, id, secret, scope string
		status                  int
		err                     string
	}{
		{name: "wrong secret", id: "alice", secret: "nope", status: 401, err: "invalid_client"},
		{name: "unknown client", id: "mallory", secret: "x", status: 401, err: "invalid_client"},
		{name: "scope not allowed", id: "alice", secret: alice.Secret, scope: "tools", status: 400, err: "invalid_scope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{"grant_type": {GrantClientCredentials}}
			if tc.scope != "" {
				form.Set("scope", tc.scope)
			}
			resp := token(t, s, tc.id, tc.secret, form)
			if resp.Status != tc.status || resp.Error != tc.err || resp.AccessToken != "" {
				t.Errorf("got %d %q (%s), want %d %q", resp.Status, resp.Error, resp.ErrorDescription, tc.status, tc.err)
			}
		})
	}
}

// TestSignIn is a user's sign-in at the service as a client that keeps the
// user's grant would do it (the hub's userOAuth): authorization code with
// PKCE, tokens for an RFC 8707 resource, refreshes that rotate the refresh
// token, and revocation; and what the service refuses on the way.
func TestSignIn(t *testing.T) {
	const (
		redirect = "http://127.0.0.1:9/oauth/callback"
		resource = "http://127.0.0.1:9/notes/mcp"
	)
	notes := Client{ID: "notes", SignIn: true, RedirectURIs: []string{redirect}, Audiences: []string{resource}, AccessTokenTTL: 2 * time.Second}
	conf := Client{ID: "conf", Secret: "conf-secret-0123456789", SignIn: true, RedirectURIs: []string{redirect}}
	s := Start(t, Options{Clients: []Client{notes, conf, alice}, LoginSubject: "dave@example.test"})

	d := s.Discovery()
	if s.AuthURL() != s.Issuer()+"/authorize" || s.RevocationURL() != s.Issuer()+"/oauth/revoke" ||
		toString(d["code_challenge_methods_supported"]) != "S256" || toString(d["response_types_supported"]) != "code" ||
		d["authorization_response_iss_parameter_supported"] != true || !strings.Contains(toString(d["token_endpoint_auth_methods_supported"]), "none") {
		t.Errorf("discovery of a sign-in: %v", d)
	}

	// authorize plays the browser through a sign-in and returns the
	// redirect's query.
	authorize := func(q url.Values) url.Values {
		t.Helper()
		return s.AuthorizationRedirect(t, s.AuthURL()+"?"+q.Encode(), redirect).Query()
	}
	request := func(c Client, verifier string) url.Values {
		sum := sha256.Sum256([]byte(verifier))
		return url.Values{"response_type": {"code"}, "client_id": {c.ID}, "redirect_uri": {redirect}, "state": {"st-1"},
			"scope": {"openid offline_access"}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])},
			"code_challenge_method": {"S256"}}
	}
	redeem := func(c Client, code, verifier string) *TokenResponse {
		t.Helper()
		form := url.Values{"grant_type": {GrantAuthorizationCode}, "code": {code}, "redirect_uri": {redirect}}
		if verifier != "" {
			form.Set("code_verifier", verifier)
		}
		if c.Secret == "" { // public: client_id in the form, no authentication
			form.Set("client_id", c.ID)
			return token(t, s, "", "", form)
		}
		return token(t, s, c.ID, c.Secret, form)
	}
	refresh := func(c Client, rt string) *TokenResponse {
		t.Helper()
		return token(t, s, "", "", url.Values{"grant_type": {GrantRefreshToken}, "refresh_token": {rt}, "client_id": {c.ID}})
	}
	signIn := func() *TokenResponse {
		t.Helper()
		const verifier = "a-verifier-of-forty-three-characters-or-more-0123"
		q := request(notes, verifier)
		q.Set("resource", resource)
		back := authorize(q)
		if back.Get("state") != "st-1" || back.Get("iss") != s.Issuer() || back.Get("code") == "" {
			t.Fatalf("authorization response %v", back)
		}
		if resp := redeem(notes, back.Get("code"), "another-verifier-of-forty-three-characters-012"); resp.Error != "invalid_grant" {
			t.Errorf("a code with the wrong verifier: %d %s", resp.Status, resp.Error)
		}
		resp := redeem(notes, back.Get("code"), verifier)
		if resp.Status != http.StatusOK || resp.AccessToken == "" || resp.RefreshToken == "" || resp.IDToken == "" {
			t.Fatalf("code exchange: %d %s: %s", resp.Status, resp.Error, resp.ErrorDescription)
		}
		if again := redeem(notes, back.Get("code"), verifier); again.Error != "invalid_grant" {
			t.Errorf("a code redeemed twice: %d %s", again.Status, again.Error)
		}
		return resp
	}

	first := signIn()
	if sub, err := s.Verify(first.AccessToken, resource); err != nil || sub != "dave@example.test" {
		t.Fatalf("the access token for the resource: %q %v", sub, err)
	}
	if _, claims := decode(t, first.AccessToken); lifetime(t, claims) != 2*time.Second || claims["client_id"] != "notes" {
		t.Errorf("access token claims %v", claims)
	}

	// Each refresh rotates the refresh token: the old one is dead, and
	// using it again ends the grant, the new token too.
	second := refresh(notes, first.RefreshToken)
	if second.Status != http.StatusOK || second.RefreshToken == "" || second.RefreshToken == first.RefreshToken || second.AccessToken == first.AccessToken {
		t.Fatalf("refresh: %d %s: %s", second.Status, second.Error, second.ErrorDescription)
	}
	if sub, err := s.Verify(second.AccessToken, resource); err != nil || sub != "dave@example.test" {
		t.Fatalf("the refreshed access token: %q %v", sub, err)
	}
	if resp := refresh(notes, first.RefreshToken); resp.Status != http.StatusBadRequest || resp.Error != "invalid_grant" {
		t.Errorf("a rotated refresh token: %d %s", resp.Status, resp.Error)
	}
	if resp := refresh(notes, second.RefreshToken); resp.Error != "invalid_grant" {
		t.Errorf("the grant goes on after its rotated refresh token was used again: %d %s", resp.Status, resp.Error)
	}
	if codes, refreshes := s.SignInStats(t); codes != 1 || refreshes != 1 {
		t.Errorf("stats: %d codes, %d refreshes", codes, refreshes)
	}

	// Revoked (RFC 7009) by the public client: the grant ends.
	third := signIn()
	if status, e := s.Revoke(t, "alice", alice.Secret, third.RefreshToken, "refresh_token"); status != http.StatusBadRequest || e != "invalid_grant" {
		t.Errorf("another client revoked the grant: %d %s", status, e)
	}
	if status, e := s.Revoke(t, notes.ID, "", third.RefreshToken, "refresh_token"); status != http.StatusOK || e != "" {
		t.Fatalf("revoke: %d %s", status, e)
	}
	if resp := refresh(notes, third.RefreshToken); resp.Error != "invalid_grant" {
		t.Errorf("a revoked refresh token: %d %s", resp.Status, resp.Error)
	}
	if status, _ := s.Revoke(t, notes.ID, "", "no-such-token", ""); status != http.StatusOK {
		t.Errorf("revoking an unknown token: %d, want 200 (RFC 7009 section 2.2)", status)
	}

	// Refusals, answered at the redirect URI.
	noPKCE := request(notes, "v")
	noPKCE.Del("code_challenge")
	noPKCE.Del("code_challenge_method")
	plain := request(notes, "v")
	plain.Set("code_challenge_method", "plain")
	foreign := request(notes, "v")
	foreign.Set("resource", "https://elsewhere.test/mcp")
	for _, tc := range []struct {
		name string
		q    url.Values
		want string
	}{
		{"no PKCE", noPKCE, "invalid_request"},
		{"plain PKCE", plain, "invalid_request"},
		{"foreign resource", foreign, "invalid_target"},
	} {
		if back := authorize(tc.q); back.Get("error") != tc.want || back.Get("code") != "" {
			t.Errorf("%s: %v, want %s", tc.name, back, tc.want)
		}
	}
	// An unregistered redirect URI is never redirected to.
	const elsewhere = "http://127.0.0.1:9/elsewhere"
	q := request(notes, "v")
	q.Set("redirect_uri", elsewhere)
	if _, err := hubtest.FollowRedirects(s.AuthURL()+"?"+q.Encode(), elsewhere); err == nil {
		t.Error("a sign-in was sent to an unregistered redirect URI")
	}
	// A confidential client must use PKCE too.
	back := authorize(request(conf, "a-verifier-of-forty-three-characters-or-more-0123"))
	if resp := redeem(conf, back.Get("code"), ""); resp.Error != "invalid_request" {
		t.Errorf("a confidential client's code without its verifier: %d %s", resp.Status, resp.Error)
	}
	// A public client has no client credentials grant.
	if resp := token(t, s, "", "", url.Values{"grant_type": {GrantClientCredentials}, "client_id": {notes.ID}}); resp.AccessToken != "" {
		t.Error("a public client got a client credentials token")
	}
}

// TestSignInRefused: a login that refuses sends access_denied back.
func TestSignInRefused(t *testing.T) {
	const redirect = "http://127.0.0.1:9/cb"
	s := Start(t, Options{Clients: []Client{{ID: "notes", SignIn: true, RedirectURIs: []string{redirect}}}, RefuseSignIns: true})
	sum := sha256.Sum256([]byte("v"))
	q := url.Values{"response_type": {"code"}, "client_id": {"notes"}, "redirect_uri": {redirect}, "state": {"x"},
		"scope": {"offline_access"}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	if back := s.AuthorizationRedirect(t, s.AuthURL()+"?"+q.Encode(), redirect).Query(); back.Get("error") != "access_denied" || back.Get("state") != "x" {
		t.Errorf("refused sign-in: %v", back)
	}
}

// TestTokenExchange exchanges alice's token as the hub: the issued token
// is alice's (sub), says the hub acted (act.sub), and is for the target
// only; every refusal has RFC 8693's or RFC 6749's error code. Stats count
// the successful grants of each kind.
func TestTokenExchange(t *testing.T) {
	bob := Client{ID: "bob", Secret: "bob-secret-0123456789", Audiences: []string{upstreamAudience}, Scopes: []string{"tools"}} // no exchange grant
	s := Start(t, Options{Clients: []Client{alice, hub, bob}})
	subject := s.ClientToken(t, alice.ID, alice.Secret, hubAudience, "mcp:tools")

	// Tokens the service must not accept as subjects: an expired one of
	// its own, and a valid one of another service.
	short := Start(t, Options{Clients: []Client{alice}, AccessTokenTTL: time.Second})
	expired := short.ClientToken(t, alice.ID, alice.Secret, hubAudience)
	other := Start(t, Options{Clients: []Client{alice}})
	foreign := other.ClientToken(t, alice.ID, alice.Secret, hubAudience)
	_, claims := decode(t, expired)
	// exp is in whole seconds, and a token is expired once now is past it.
	time.Sleep(time.Until(time.Unix(int64(claims["exp"].(float64)), 0).Add(1100 * time.Millisecond)))

	exchange := func(mod func(url.Values)) url.Values {
		form := url.Values{
			"grant_type":         {GrantTokenExchange},
			"subject_token":      {subject},
			"subject_token_type": {TokenTypeAccessToken},
			"audience":           {upstreamAudience},
		}
		if mod != nil {
			mod(form)
		}
		return form
	}
	post := func(form url.Values) url.Values { // client_secret_post
		form.Set("client_id", hub.ID)
		form.Set("client_secret", hub.Secret)
		return form
	}
	for _, tc := range []struct {
		name     string
		id       string // Basic auth as; "" for a client_secret_post form
		secret   string // the id's own when empty
		form     url.Values
		status   int
		err      string
		wantAud  []string
		wantScop string
	}{
		{name: "audience", id: "hub", form: exchange(nil), status: 200, wantAud: []string{upstreamAudience}},
		{name: "resource and scope", id: "hub", form: exchange(func(f url.Values) {
			f.Del("audience")
			f.Set("resource", upstreamAudience)
			f.Set("scope", "tools read")
		}), status: 200, wantAud: []string{upstreamAudience}, wantScop: "tools read"},
		{name: "audience and resource, client_secret_post, jwt type", form: post(exchange(func(f url.Values) {
			f.Set("resource", "https://other.test/mcp")
			f.Set("subject_token_type", TokenTypeJWT)
			f.Set("requested_token_type", TokenTypeAccessToken)
		})), status: 200, wantAud: []string{upstreamAudience, "https://other.test/mcp"}},
		{name: "audience not allowed", id: "hub", form: exchange(func(f url.Values) { f.Set("audience", hubAudience) }),
			status: 400, err: "invalid_target"},
		{name: "resource not allowed", id: "hub", form: exchange(func(f url.Values) { f.Set("resource", "https://evil.test/mcp") }),
			status: 400, err: "invalid_target"},
		{name: "no target", id: "hub", form: exchange(func(f url.Values) { f.Del("audience") }), status: 400, err: "invalid_request"},
		{name: "scope not allowed", id: "hub", form: exchange(func(f url.Values) { f.Set("scope", "tools admin") }),
			status: 400, err: "invalid_scope"},
		{name: "garbage subject token", id: "hub", form: exchange(func(f url.Values) { f.Set("subject_token", "not-a-token") }),
			status: 400, err: "invalid_grant"},
		{name: "tampered subject token", id: "hub", form: exchange(func(f url.Values) { f.Set("subject_token", tamper(t, subject)) }),
			status: 400, err: "invalid_grant"},
		{name: "expired subject token", id: "hub", form: exchange(func(f url.Values) { f.Set("subject_token", expired) }),
			status: 400, err: "invalid_grant"},
		{name: "subject token of another issuer", id: "hub", form: exchange(func(f url.Values) { f.Set("subject_token", foreign) }),
			status: 400, err: "invalid_grant"},
		{name: "id_token subject type", id: "hub", form: exchange(func(f url.Values) {
			f.Set("subject_token_type", "urn:ietf:params:oauth:token-type:id_token")
		}), status: 400, err: "invalid_request"},
		{name: "refresh token requested", id: "hub", form: exchange(func(f url.Values) {
			f.Set("requested_token_type", "urn:ietf:params:oauth:token-type:refresh_token")
		}), status: 400, err: "invalid_request"},
		{name: "client without the exchange grant", id: "bob", form: exchange(nil), status: 400, err: "unauthorized_client"},
		{name: "wrong secret", id: "hub", secret: "nope", form: exchange(nil), status: 401, err: "invalid_client"},
		{name: "wrong secret, client_secret_post", form: exchange(func(f url.Values) {
			f.Set("client_id", hub.ID)
			f.Set("client_secret", "nope")
		}), status: 401, err: "invalid_client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secret := tc.secret
			if secret == "" {
				secret = map[string]string{"hub": hub.Secret, "bob": bob.Secret}[tc.id]
			}
			resp := token(t, s, tc.id, secret, tc.form)
			if resp.Status != tc.status || resp.Error != tc.err {
				t.Fatalf("got %d %q (%s), want %d %q", resp.Status, resp.Error, resp.ErrorDescription, tc.status, tc.err)
			}
			if tc.err != "" {
				if resp.AccessToken != "" {
					t.Fatal("a refusal carries a token")
				}
				if strings.Contains(resp.ErrorDescription, hub.Secret) || strings.Contains(resp.ErrorDescription, subject) {
					t.Fatalf("the error description holds a secret or the token: %s", resp.ErrorDescription)
				}
				return
			}
			if resp.IssuedTokenType != TokenTypeAccessToken || !strings.EqualFold(resp.TokenType, "bearer") || resp.ExpiresIn <= 0 {
				t.Errorf("issued_token_type %q token_type %q expires_in %d", resp.IssuedTokenType, resp.TokenType, resp.ExpiresIn)
			}
			_, claims := decode(t, resp.AccessToken)
			verify(t, s, resp.AccessToken)
			act, _ := claims["act"].(map[string]any)
			if claims["sub"] != "alice" || act["sub"] != "hub" || claims["client_id"] != "hub" || claims["iss"] != s.Issuer() {
				t.Errorf("sub %v act %v client_id %v iss %v", claims["sub"], claims["act"], claims["client_id"], claims["iss"])
			}
			if aud := strs(claims["aud"]); !slices.Equal(aud, tc.wantAud) {
				t.Errorf("aud %v, want %v", aud, tc.wantAud)
			}
			if claims["scope"] != optional(tc.wantScop) || resp.Scope != tc.wantScop {
				t.Errorf("scope claim %v, response %q, want %q", claims["scope"], resp.Scope, tc.wantScop)
			}
			if life := lifetime(t, claims); life != 5*time.Minute {
				t.Errorf("lifetime %v, want the default 5m", life)
			}
		})
	}

	// An exchanged token is itself a subject token: exchanged again, the
	// actor is the client that exchanged last.
	first := token(t, s, "hub", hub.Secret, exchange(nil))
	again := token(t, s, "hub", hub.Secret, exchange(func(f url.Values) {
		f.Set("subject_token", first.AccessToken)
		f.Set("audience", "https://other.test/mcp")
	}))
	if _, c := decode(t, again.AccessToken); again.Status != 200 || c["sub"] != "alice" {
		t.Errorf("exchange of an exchanged token: %d %s, sub %v", again.Status, again.Error, c["sub"])
	}

	// 3 table exchanges and these 2; alice's one client credentials token
	// here (expired and foreign came from other services).
	if ex, cc := s.Stats(t); ex != 5 || cc != 1 {
		t.Errorf("stats: %d exchanges, %d client credentials; want 5 and 1", ex, cc)
	}
	if ex, cc := short.Stats(t); ex != 0 || cc != 1 {
		t.Errorf("short's stats: %d exchanges, %d client credentials; want 0 and 1", ex, cc)
	}
}

// TestTrustedIssuers exchanges JWTs of other issuers the service trusts,
// as a security token service federating a Kubernetes cluster takes its
// pods' ServiceAccount tokens: one signed by a key of the issuer's JWKS
// (RS256 for the "cluster", ES256 for another service), of either token
// type, becomes a token of this service for the target with the same sub,
// the exchanging client as act.sub. The service's own tokens still work;
// a token of an issuer it does not trust, or one a trusted issuer's keys
// did not sign, is invalid_grant, as a bad token of its own is.
func TestTrustedIssuers(t *testing.T) {
	const (
		clusterIssuer = "https://kubernetes.default.svc.cluster.local"
		otherIssuer   = "https://sts.example.test"
		executor      = "system:serviceaccount:agents:executor"
	)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	strangerKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	cluster := signingKey(t, rsaKey, "cluster-1", jwa.RS256())
	other := signingKey(t, ecKey, "other-1", jwa.ES256())
	// Claims the cluster's kid: only the keys, not the kid, make a token.
	stranger := signingKey(t, strangerKey, "cluster-1", jwa.RS256())
	dir := t.TempDir()
	s := Start(t, Options{Clients: []Client{alice, hub}, TrustedIssuers: []TrustedIssuer{
		{Issuer: clusterIssuer, JWKSFile: writeJWKS(t, dir, "cluster.json", cluster)},
		{Issuer: otherIssuer, JWKSFile: writeJWKS(t, dir, "other.json", other)},
	}})

	now := time.Now()
	// A pod's projected token, as kube-apiserver mints it.
	podClaims := func() *jwt.Builder {
		return jwt.NewBuilder().Issuer(clusterIssuer).Subject(executor).Audience([]string{clusterIssuer}).
			IssuedAt(now).NotBefore(now).Expiration(now.Add(time.Hour)).JwtID("pod-token-1").
			Claim("kubernetes.io", map[string]any{"namespace": "agents",
				"serviceaccount": map[string]any{"name": "executor", "uid": "0b6e0a53-7d57-4f2c-9d7e-3a7f2d1c5e11"},
				"pod":            map[string]any{"name": "run-1-step-1", "uid": "5c1f8a34-2b3e-4d6f-8a9b-0c1d2e3f4a5b"}})
	}
	podToken := signJWT(t, cluster, podClaims())
	otherToken := signJWT(t, other, jwt.NewBuilder().Issuer(otherIssuer).Subject("carol").Expiration(now.Add(time.Hour)))
	own := s.ClientToken(t, alice.ID, alice.Secret, hubAudience, "mcp:tools")
	if header, _ := decode(t, podToken); header["kid"] != "cluster-1" || header["alg"] != "RS256" {
		t.Fatalf("the pod token's header %v", header)
	}

	// alg none: unsigned, the payload of a valid token.
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + strings.Split(podToken, ".")[1] + "."

	for _, tc := range []struct {
		name, subject, typ, err, wantSub string
	}{
		{name: "cluster token as jwt", subject: podToken, typ: TokenTypeJWT, wantSub: executor},
		{name: "cluster token as access token", subject: podToken, typ: TokenTypeAccessToken, wantSub: executor},
		{name: "ES256 token of another trusted issuer", subject: otherToken, typ: TokenTypeJWT, wantSub: "carol"},
		{name: "own token", subject: own, typ: TokenTypeAccessToken, wantSub: "alice"},
		{name: "own token as jwt", subject: own, typ: TokenTypeJWT, wantSub: "alice"},
		{name: "expired", typ: TokenTypeJWT, err: "invalid_grant",
			subject: signJWT(t, cluster, podClaims().IssuedAt(now.Add(-2*time.Hour)).NotBefore(now.Add(-2*time.Hour)).Expiration(now.Add(-time.Hour)))},
		{name: "signed by a key not in the JWKS", subject: signJWT(t, stranger, podClaims()), typ: TokenTypeJWT, err: "invalid_grant"},
		{name: "signed by another trusted issuer's key", subject: signJWT(t, other, podClaims()), typ: TokenTypeJWT, err: "invalid_grant"},
		{name: "issuer not trusted", subject: signJWT(t, cluster, podClaims().Issuer("https://evil.test")), typ: TokenTypeJWT, err: "invalid_grant"},
		{name: "issuer not trusted, as access token", subject: signJWT(t, cluster, podClaims().Issuer("https://evil.test")), typ: TokenTypeAccessToken, err: "invalid_grant"},
		{name: "no subject", subject: signJWT(t, cluster, podClaims().Subject("")), typ: TokenTypeJWT, err: "invalid_grant"},
		{name: "tampered", subject: tamper(t, podToken), typ: TokenTypeJWT, err: "invalid_grant"},
		{name: "alg none", subject: none, typ: TokenTypeJWT, err: "invalid_grant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := token(t, s, hub.ID, hub.Secret, url.Values{
				"grant_type": {GrantTokenExchange}, "subject_token": {tc.subject},
				"subject_token_type": {tc.typ}, "audience": {upstreamAudience},
			})
			if tc.err != "" {
				if resp.Status != 400 || resp.Error != tc.err || resp.AccessToken != "" {
					t.Fatalf("got %d %q (%s), want 400 %q", resp.Status, resp.Error, resp.ErrorDescription, tc.err)
				}
				if strings.Contains(resp.ErrorDescription, tc.subject) {
					t.Fatalf("the error description holds the token: %s", resp.ErrorDescription)
				}
				return
			}
			if resp.Status != 200 {
				t.Fatalf("got %d %s: %s", resp.Status, resp.Error, resp.ErrorDescription)
			}
			_, claims := decode(t, resp.AccessToken)
			verify(t, s, resp.AccessToken)
			act, _ := claims["act"].(map[string]any)
			if claims["sub"] != tc.wantSub || act["sub"] != hub.ID || claims["client_id"] != hub.ID || claims["iss"] != s.Issuer() {
				t.Errorf("sub %v act %v client_id %v iss %v", claims["sub"], claims["act"], claims["client_id"], claims["iss"])
			}
			if aud := strs(claims["aud"]); !slices.Equal(aud, []string{upstreamAudience}) {
				t.Errorf("aud %v, want [%s]", aud, upstreamAudience)
			}
			if claims["kubernetes.io"] != nil {
				t.Errorf("the subject token's claims were copied: %v", claims["kubernetes.io"])
			}
		})
	}
	if ex, _ := s.Stats(t); ex != 5 {
		t.Errorf("stats: %d exchanges, want 5", ex)
	}
}

// signingKey is raw as a JWK with a kid and alg, as a JWKS lists keys.
func signingKey(t *testing.T, raw any, kid string, alg jwa.SignatureAlgorithm) jwk.Key {
	t.Helper()
	k, err := jwk.Import(raw)
	if err == nil {
		err = errors.Join(k.Set(jwk.KeyIDKey, kid), k.Set(jwk.AlgorithmKey, alg), k.Set(jwk.KeyUsageKey, "sig"))
	}
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// writeJWKS writes the public halves of keys as a JWKS document in dir.
func writeJWKS(t *testing.T, dir, name string, keys ...jwk.Key) string {
	t.Helper()
	set := jwk.NewSet()
	for _, k := range keys {
		pub, err := k.PublicKey()
		if err == nil {
			err = set.AddKey(pub)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	raw, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// signJWT builds the claims and signs them with key (kid in the header).
func signJWT(t *testing.T, key jwk.Key, b *jwt.Builder) string {
	t.Helper()
	tok, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	alg, ok := key.Algorithm()
	sigAlg, isSig := alg.(jwa.SignatureAlgorithm)
	if !ok || !isSig {
		t.Fatalf("key without a signature algorithm: %v", alg)
	}
	signed, err := jwt.Sign(tok, jwt.WithKey(sigAlg, key))
	if err != nil {
		t.Fatal(err)
	}
	return string(signed)
}

// TestUpstream calls the upstream with an exchanged token, which it
// accepts, and with the caller's own, whose audience is the hub's, which
// it refuses; it records both.
func TestUpstream(t *testing.T) {
	s := Start(t, Options{Clients: []Client{alice, hub}})
	up := StartUpstream(t, s, upstreamAudience)
	own := s.ClientToken(t, alice.ID, alice.Secret, hubAudience, "mcp:tools")
	resp := token(t, s, "hub", hub.Secret, url.Values{
		"grant_type": {GrantTokenExchange}, "subject_token": {own},
		"subject_token_type": {TokenTypeAccessToken}, "resource": {upstreamAudience},
	})
	if resp.Status != 200 {
		t.Fatalf("exchange: %d %s: %s", resp.Status, resp.Error, resp.ErrorDescription)
	}
	exchanged := resp.AccessToken

	c := dial(t, up.URL, exchanged)
	tools, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	for _, tool := range tools.Tools {
		if ro := tool.Annotations.ReadOnlyHint; (tool.Name == "whoami") != (ro != nil && *ro) {
			t.Errorf("tool %s readOnlyHint %v", tool.Name, ro)
		}
	}
	if text := callText(t, c, "whoami", nil); text != "subject=alice actor=hub" {
		t.Errorf("whoami: %q", text)
	}
	if text := callText(t, c, "echo", map[string]any{"text": "hi"}); text != "hi" {
		t.Errorf("echo: %q", text)
	}

	// alice's own token: signed by the same service, but not for the upstream.
	tr, err := transport.NewStreamableHTTP(up.URL, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + own}))
	if err != nil {
		t.Fatal(err)
	}
	refused := client.NewClient(tr)
	t.Cleanup(func() { _ = refused.Close() })
	if err := refused.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := refused.Initialize(ctx, mcp.InitializeRequest{}); err == nil {
		t.Fatal("the caller's own token was accepted upstream")
	}

	// Without a token, and with a bad one: the challenges.
	for _, tc := range []struct{ name, auth, want string }{
		{"no token", "", `Bearer realm="idp-upstream"`},
		{"alice's own token", "Bearer " + own, `error="invalid_token"`},
		{"garbage", "Bearer garbage", `error="invalid_token"`},
	} {
		req, _ := http.NewRequest(http.MethodPost, up.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if got := r.Header.Get("WWW-Authenticate"); r.StatusCode != 401 || !strings.Contains(got, tc.want) || strings.Contains(got, own) {
			t.Errorf("%s: %s, WWW-Authenticate %q", tc.name, r.Status, got)
		}
	}

	var accepted, refusedOwn, methods []string
	for _, seen := range up.Seen() {
		switch {
		case seen.Token == exchanged && seen.Status/100 == 2:
			if seen.Subject != "alice" || seen.Actor != "hub" || !slices.Equal(seen.Audience, []string{upstreamAudience}) {
				t.Errorf("accepted request seen as %+v", redacted(seen))
			}
			accepted = append(accepted, seen.Method)
		case seen.Token == own:
			if seen.Status != 401 || seen.Subject != "alice" || seen.Actor != "" || !slices.Equal(seen.Audience, []string{hubAudience}) {
				t.Errorf("own token seen as %+v", redacted(seen))
			}
			refusedOwn = append(refusedOwn, seen.Method)
		case seen.Token == "" || seen.Token == "garbage":
			if seen.Status != 401 || seen.Subject != "" {
				t.Errorf("tokenless request seen as %+v", redacted(seen))
			}
		default:
			t.Errorf("unexpected request %+v", redacted(seen))
		}
		methods = append(methods, seen.HTTPMethod+" "+seen.Method)
	}
	t.Logf("requests: %q", methods)
	// mcp-go's client opens with server/discover (2026-07-28) and falls
	// back to initialize.
	handshake := func(ms []string) bool {
		return slices.Contains(ms, "server/discover") || slices.Contains(ms, "initialize")
	}
	if !handshake(accepted) || !slices.Contains(accepted, "tools/list") || !slices.Contains(accepted, "tools/call") {
		t.Errorf("accepted requests %q lack the handshake, tools/list or tools/call", accepted)
	}
	if !handshake(refusedOwn) {
		t.Errorf("the refused handshake with alice's own token was not recorded: %q", refusedOwn)
	}
}

// TestStop stops the service: it refuses connections, the upstream keeps
// accepting the tokens it issued (it has the keys), and Stop is idempotent.
func TestStop(t *testing.T) {
	s := Start(t, Options{Clients: []Client{alice, hub}})
	up := StartUpstream(t, s, upstreamAudience)
	tok := s.ClientToken(t, alice.ID, alice.Secret, upstreamAudience)
	s.Stop()
	s.Stop()
	if !s.Process().Exited() {
		t.Fatal("the service runs after Stop")
	}
	if _, err := s.Token(alice.ID, alice.Secret, url.Values{"grant_type": {GrantClientCredentials}}); err == nil {
		t.Fatal("token request answered after Stop")
	}
	c := dial(t, up.URL, tok)
	if text := callText(t, c, "whoami", nil); text != "subject=alice actor=" {
		t.Errorf("whoami with the service down: %q", text)
	}
}

func dial(t *testing.T, u, token string) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(u, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

func callText(t *testing.T, c *client.Client, name string, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	var b strings.Builder
	for _, content := range res.Content {
		if tc, ok := content.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		t.Fatalf("tools/call %s: error %s", name, b.String())
	}
	return b.String()
}

func token(t *testing.T, s *Server, id, secret string, form url.Values) *TokenResponse {
	t.Helper()
	resp, err := s.Token(id, secret, form)
	if err != nil {
		t.Fatalf("token request: %v", err)
	}
	return resp
}

// decode splits a JWT into header and claims without verifying it.
func decode(t *testing.T, tok string) (header, claims map[string]any) {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	for i, dst := range []*map[string]any{&header, &claims} {
		raw, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err == nil {
			err = json.Unmarshal(raw, dst)
		}
		if err != nil {
			t.Fatalf("decode JWT part %d: %v", i, err)
		}
	}
	return header, claims
}

// verify checks tok's signature against the service's JWKS, with jwx (the
// hub's JWT library), and its iss.
func verify(t *testing.T, s *Server, tok string) {
	t.Helper()
	keys, err := fetchKeys(s.JWKSURL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jwt.Parse([]byte(tok), jwt.WithKeySet(keys), jwt.WithValidate(true), jwt.WithIssuer(s.Issuer())); err != nil {
		t.Fatalf("verify against the JWKS: %v", err)
	}
}

// tamper changes the token's claims, keeping the signature.
func tamper(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	_, claims := decode(t, tok)
	claims["sub"] = "root"
	b, _ := json.Marshal(claims)
	return parts[0] + "." + base64.RawURLEncoding.EncodeToString(b) + "." + parts[2]
}

func lifetime(t *testing.T, claims map[string]any) time.Duration {
	t.Helper()
	exp, ok1 := claims["exp"].(float64)
	iat, ok2 := claims["iat"].(float64)
	if !ok1 || !ok2 {
		t.Fatalf("exp %v iat %v", claims["exp"], claims["iat"])
	}
	return time.Duration(exp-iat) * time.Second
}

// strs reads a claim that is a string or a list of strings.
func strs(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			s, _ := e.(string)
			out = append(out, s)
		}
		return out
	}
	return nil
}

func toString(v any) string {
	return strings.Join(strs(v), " ")
}

// optional is s as a decoded claim: absent (nil) when empty.
func optional(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// redacted is seen without its token, for failure messages.
func redacted(seen Seen) Seen {
	if seen.Token != "" {
		seen.Token = "<redacted>"
	}
	return seen
}

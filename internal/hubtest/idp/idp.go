// Package idp runs a real OAuth 2.0 Token Exchange service (RFC 8693) for
// the tests of issue 24, where the hub exchanges each caller's access
// token for one minted for a single upstream, and an upstream MCP server
// that accepts only such tokens. The same service signs users in
// (authorization code with PKCE, refresh tokens rotated on every use, RFC
// 7009 revocation), for servers the hub reaches as each caller's own
// account: a second authorization server besides Ory Hydra
// (hubtest/hydra), with zitadel's reading of those RFCs.
//
// The service is hack/idp, a small program on the OpenID provider of
// github.com/zitadel/oidc/v3: zitadel authenticates clients, checks grants,
// verifies subject tokens and signs JWTs; hack/idp adds the clients' policy
// (which targets and scopes each may ask for), other issuers whose JWTs it
// trusts as subject tokens (a cluster's ServiceAccount tokens), a login
// that approves every sign-in as Options.LoginSubject with no page, and
// counts grants. A mock would only ever agree with our own reading of RFC 8693;
// zitadel's is someone else's. Start runs it on a free 127.0.0.1 port, one
// per test.
//
// StartUpstream serves an MCP server (mcp-go, Streamable HTTP) behind a
// resource server's checks (signature against the service's JWKS, iss,
// exp, aud), recording every request, so that tests can assert which token
// reached the upstream, and that the caller's own never did.
//
// hack/idp.sh builds the binary into ~/.cache/mcp-hub (`make idp`, part of
// `make test-deps`); MCPHUB_IDP names another one. Only tests import this
// package.
package idp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// Grant types, as the token endpoint's grant_type parameter names them.
const (
	GrantClientCredentials = "client_credentials"
	GrantTokenExchange     = "urn:ietf:params:oauth:grant-type:token-exchange"
	GrantAuthorizationCode = "authorization_code"
	GrantRefreshToken      = "refresh_token"
)

// DefaultLoginSubject is who sign-ins are approved as when
// Options.LoginSubject is empty.
const DefaultLoginSubject = "carol@example.test"

// Token types of RFC 8693 (subject_token_type, issued_token_type).
const (
	TokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
	TokenTypeJWT         = "urn:ietf:params:oauth:token-type:jwt"
)

// requestTimeout bounds one request to the service: it is local, so
// anything slower is a hang.
const requestTimeout = 30 * time.Second

// Client is an OAuth client of the service. Every client with a Secret may
// use the client credentials grant, with any audience (so that a test can
// mint a token for the wrong one) and its Scopes. A client without one is
// public (token_endpoint_auth_method none): it may only sign users in,
// PKCE binding its codes to it.
type Client struct {
	ID, Secret string
	// Exchange gives the client the token exchange grant; without it an
	// exchange is refused with unauthorized_client.
	Exchange bool
	// SignIn gives the client the authorization code grant, with PKCE
	// (S256) required and RedirectURIs as the only places to send the
	// browser back to, and the refresh token grant: a sign-in asking for
	// the offline_access scope gets a refresh token, which every refresh
	// replaces (the old one is invalid_grant after, and using it again
	// ends the grant).
	SignIn       bool
	RedirectURIs []string
	// Audiences are the targets (audience or resource parameters) the
	// client may exchange tokens for, and the RFC 8707 resources a
	// sign-in's tokens may be for; others are invalid_target.
	Audiences []string
	// Scopes are the scopes the client may request (besides openid and
	// offline_access for a sign-in); others are invalid_scope.
	Scopes []string
	// AccessTokenTTL is the lifetime of this client's access tokens,
	// whole seconds; Options.AccessTokenTTL when zero.
	AccessTokenTTL time.Duration
}

// Options configures a Server.
type Options struct {
	Clients []Client
	// AccessTokenTTL is the lifetime of every access token, whole seconds
	// (JWTs count in seconds); five minutes when zero.
	AccessTokenTTL time.Duration
	// TrustedIssuers are other issuers whose JWTs may be exchanged as
	// subject tokens, as a security token service federating a Kubernetes
	// cluster takes its pods' ServiceAccount tokens.
	TrustedIssuers []TrustedIssuer
	// LoginSubject is the user every sign-in is approved as, at once, with
	// no page; DefaultLoginSubject when empty.
	LoginSubject string
	// RefuseSignIns makes the login refuse every sign-in instead
	// (access_denied to the client).
	RefuseSignIns bool
}

// TrustedIssuer is another issuer whose JWTs the service exchanges: a
// subject token (of type jwt or access_token) whose iss is Issuer is
// verified with the keys of the JWKS document in the file JWKSFile
// (signature with RS256, ES256 or PS256, iss, exp), and the exchanged
// token's sub is its sub. The file is read once, at Start.
type TrustedIssuer struct {
	Issuer, JWKSFile string
}

// Server is a running token service.
type Server struct {
	proc          *hubtest.Process
	issuer        string // http://127.0.0.1:PORT, as in tokens' iss
	tokenURL      string
	jwksURL       string
	authURL       string
	revocationURL string
	hc            *http.Client
	discovery     map[string]any
}

// Binary returns the service's binary: MCPHUB_IDP, or hack/idp.sh's cached
// build (built now when missing: about a minute on a fresh machine).
func Binary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("MCPHUB_IDP"); bin != "" {
		return bin
	}
	root, err := hubtest.RepoRoot()
	if err != nil {
		t.Fatalf("idp: find the repository root: %v", err)
	}
	cmd := exec.Command(filepath.Join(root, "hack", "idp.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("idp: hack/idp.sh: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// Start runs the service with opts until t's cleanup (or Stop), and
// returns once its discovery document answers.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "idp.json")
	cfg, err := configJSON(opts)
	if err != nil {
		t.Fatalf("idp: %v", err)
	}
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatalf("idp: write the config: %v", err)
	}
	proc, port := hubtest.StartServer(t, "idp", 0, func(port int) *exec.Cmd {
		cmd := exec.Command(bin, "-config", path, "-addr", fmt.Sprintf("127.0.0.1:%d", port))
		cmd.Env = []string{"TMPDIR=" + dir} // it reads nothing else
		return cmd
	})
	s := &Server{proc: proc, issuer: fmt.Sprintf("http://127.0.0.1:%d", port), hc: &http.Client{Timeout: requestTimeout}}
	// It listens by now (StartServer waited for the port); the discovery
	// document says zitadel is serving.
	deadline := time.Now().Add(hubtest.StartTimeout)
	for {
		err := s.getJSON(s.issuer+"/.well-known/openid-configuration", &s.discovery)
		if err == nil {
			break
		}
		if proc.Exited() || time.Now().After(deadline) {
			t.Fatalf("idp: discovery document: %v (exited: %v)", err, proc.Exited())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s.discovery["issuer"] != s.issuer {
		t.Fatalf("idp: discovery says issuer %v, want %s", s.discovery["issuer"], s.issuer)
	}
	s.tokenURL, _ = s.discovery["token_endpoint"].(string)
	s.jwksURL, _ = s.discovery["jwks_uri"].(string)
	s.authURL, _ = s.discovery["authorization_endpoint"].(string)
	s.revocationURL, _ = s.discovery["revocation_endpoint"].(string)
	if s.tokenURL == "" || s.jwksURL == "" || s.authURL == "" || s.revocationURL == "" {
		t.Fatalf("idp: discovery lacks token_endpoint, jwks_uri, authorization_endpoint or revocation_endpoint: %v", s.discovery)
	}
	return s
}

// configJSON is hack/idp's config file for opts.
func configJSON(opts Options) ([]byte, error) {
	type client struct {
		ID             string   `json:"id"`
		Secret         string   `json:"secret,omitempty"`
		Grants         []string `json:"grants"`
		RedirectURIs   []string `json:"redirectURIs,omitempty"`
		Audiences      []string `json:"audiences"`
		Scopes         []string `json:"scopes"`
		AccessTokenTTL string   `json:"accessTokenTTL,omitempty"`
	}
	type trusted struct {
		Issuer   string `json:"issuer"`
		JWKSFile string `json:"jwksFile"`
	}
	cfg := struct {
		Clients        []client  `json:"clients"`
		AccessTokenTTL string    `json:"accessTokenTTL,omitempty"`
		TrustedIssuers []trusted `json:"trustedIssuers,omitempty"`
		LoginSubject   string    `json:"loginSubject,omitempty"`
	}{Clients: []client{}, LoginSubject: opts.LoginSubject}
	switch {
	case opts.RefuseSignIns:
		cfg.LoginSubject = ""
	case cfg.LoginSubject == "":
		cfg.LoginSubject = DefaultLoginSubject
	}
	var err error
	if cfg.AccessTokenTTL, err = seconds(opts.AccessTokenTTL); err != nil {
		return nil, fmt.Errorf("AccessTokenTTL: %w", err)
	}
	for _, c := range opts.Clients {
		var grants []string
		if c.Secret != "" {
			grants = append(grants, GrantClientCredentials)
		}
		if c.Exchange {
			grants = append(grants, GrantTokenExchange)
		}
		if c.SignIn {
			grants = append(grants, GrantAuthorizationCode, GrantRefreshToken)
		}
		ttl, err := seconds(c.AccessTokenTTL)
		if err != nil {
			return nil, fmt.Errorf("client %q: AccessTokenTTL: %w", c.ID, err)
		}
		cfg.Clients = append(cfg.Clients, client{ID: c.ID, Secret: c.Secret, Grants: grants, RedirectURIs: c.RedirectURIs,
			Audiences: c.Audiences, Scopes: c.Scopes, AccessTokenTTL: ttl})
	}
	for _, ti := range opts.TrustedIssuers {
		// Absolute, so that the path means the same to the service
		// whatever its working directory.
		path, err := filepath.Abs(ti.JWKSFile)
		if err != nil {
			return nil, fmt.Errorf("trusted issuer %s: %w", ti.Issuer, err)
		}
		cfg.TrustedIssuers = append(cfg.TrustedIssuers, trusted{Issuer: ti.Issuer, JWKSFile: path})
	}
	return json.Marshal(cfg)
}

// seconds is a lifetime in hack/idp's config: "" for zero (its default),
// else a Go duration of whole seconds, as JWTs count.
func seconds(d time.Duration) (string, error) {
	switch {
	case d == 0:
		return "", nil
	case d < time.Second || d%time.Second != 0:
		return "", fmt.Errorf("%v is not whole seconds", d)
	}
	return d.String(), nil
}

// Issuer is the service's issuer, http://127.0.0.1:PORT (no trailing
// slash), as in tokens' iss claim.
func (s *Server) Issuer() string { return s.issuer }

// TokenURL is the token endpoint, of every grant.
func (s *Server) TokenURL() string { return s.tokenURL }

// AuthURL is the authorization endpoint, where a sign-in starts.
func (s *Server) AuthURL() string { return s.authURL }

// RevocationURL is the token revocation endpoint (RFC 7009).
func (s *Server) RevocationURL() string { return s.revocationURL }

// JWKSURL is the JSON Web Key Set tokens are verified with.
func (s *Server) JWKSURL() string { return s.jwksURL }

// Discovery is the discovery document read at start.
func (s *Server) Discovery() map[string]any { return s.discovery }

// Process is the service's process (its output, whether it exited).
func (s *Server) Process() *hubtest.Process { return s.proc }

// ClientToken gets an access token with the client credentials grant,
// authenticating with HTTP Basic: sub and client_id are the client, aud is
// audience (the client's id when empty), scope is scopes.
func (s *Server) ClientToken(t testing.TB, id, secret string, audience string, scopes ...string) string {
	t.Helper()
	form := url.Values{"grant_type": {GrantClientCredentials}}
	if audience != "" {
		form.Set("audience", audience)
	}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	resp, err := s.Token(id, secret, form)
	if err != nil {
		t.Fatalf("idp: client credentials for %q: %v", id, err)
	}
	if resp.Status != http.StatusOK || resp.AccessToken == "" {
		t.Fatalf("idp: client credentials for %q: %d %s: %s", id, resp.Status, resp.Error, resp.ErrorDescription)
	}
	return resp.AccessToken
}

// TokenResponse is the token endpoint's answer: a token or an error.
type TokenResponse struct {
	Status           int    `json:"-"` // HTTP status
	AccessToken      string `json:"access_token"`
	RefreshToken     string `json:"refresh_token"`
	IDToken          string `json:"id_token"`
	IssuedTokenType  string `json:"issued_token_type"`
	TokenType        string `json:"token_type"`
	ExpiresIn        int    `json:"expires_in"`
	Scope            string `json:"scope"`
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

// Token posts form to the token endpoint, authenticating as id with HTTP
// Basic (client_secret_basic) when id is not empty; a client_secret_post
// caller puts client_id and client_secret in form instead. An error is a
// request that got no JSON answer; an OAuth error is a response.
func (s *Server) Token(id, secret string, form url.Values) (*TokenResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if id != "" {
		// RFC 6749 section 2.3.1: form-encoded, then Basic.
		req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read the token response: %w", err)
	}
	out := &TokenResponse{Status: resp.StatusCode}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("token endpoint answered %s, not JSON (%w)", resp.Status, err)
	}
	return out, nil
}

// Stats are the grants the service has issued so far: token exchanges and
// client credentials.
func (s *Server) Stats(t testing.TB) (exchanges, clientCredentials int) {
	t.Helper()
	var st struct {
		Exchanges         int `json:"exchanges"`
		ClientCredentials int `json:"clientCredentials"`
	}
	if err := s.getJSON(s.issuer+"/test/stats", &st); err != nil {
		t.Fatalf("idp: stats: %v", err)
	}
	return st.Exchanges, st.ClientCredentials
}

// SignInStats are the sign-in grants the service has issued so far: codes
// redeemed and refreshes.
func (s *Server) SignInStats(t testing.TB) (codeExchanges, refreshes int) {
	t.Helper()
	var st struct {
		CodeExchanges int `json:"codeExchanges"`
		Refreshes     int `json:"refreshes"`
	}
	if err := s.getJSON(s.issuer+"/test/stats", &st); err != nil {
		t.Fatalf("idp: stats: %v", err)
	}
	return st.CodeExchanges, st.Refreshes
}

// AuthorizationRedirect plays the browser (with a cookie jar) from authURL,
// an authorization request, through the service's login, and returns the
// redirect to redirectURI, which it does not request: code, state and iss
// (RFC 9207), or error and error_description. It fails t when the flow
// ends anywhere else.
func (s *Server) AuthorizationRedirect(t testing.TB, authURL, redirectURI string) *url.URL {
	t.Helper()
	final, err := hubtest.FollowRedirects(authURL, redirectURI)
	if err != nil {
		t.Fatalf("idp: authorization %s: %v", authURL, err)
	}
	return final
}

// Revoke posts token to the revocation endpoint (RFC 7009) as client id
// (HTTP Basic with secret; a public client, with no secret, sends its
// client_id in the form), with hint as token_type_hint when not empty. It
// returns the HTTP status and the OAuth error, if any.
func (s *Server) Revoke(t testing.TB, id, secret, token, hint string) (int, string) {
	t.Helper()
	form := url.Values{"token": {token}}
	if hint != "" {
		form.Set("token_type_hint", hint)
	}
	if secret == "" {
		form.Set("client_id", id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.revocationURL, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if secret != "" {
		req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		t.Fatalf("idp: revoke: %v", err)
	}
	defer resp.Body.Close()
	var out struct {
		Error string `json:"error"`
	}
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &out) // a success has an empty body
	return resp.StatusCode, out.Error
}

// Verify checks tok as a resource server for audience would (signature by
// a key of the service's JWKS, iss, exp, aud) and returns its subject.
func (s *Server) Verify(tok, audience string) (string, error) {
	keys, err := fetchKeys(s.jwksURL)
	if err != nil {
		return "", err
	}
	parsed, err := jwt.Parse([]byte(tok), jwt.WithKeySet(keys), jwt.WithValidate(true),
		jwt.WithIssuer(s.issuer), jwt.WithRequiredClaim("exp"), jwt.WithAudience(audience))
	if err != nil {
		return "", fmt.Errorf("verify an access token of %s: %w", s.issuer, err)
	}
	sub, _ := parsed.Subject()
	return sub, nil
}

// Stop kills the service now, as a crash would (for tests of a hub whose
// token service is down); t's cleanup would stop it anyway. Stopping it
// again does nothing.
func (s *Server) Stop() { s.proc.Kill() }

// getJSON GETs u and decodes a 200 answer into out.
func (s *Server) getJSON(u string, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("GET %s: decode: %w", u, err)
	}
	return nil
}

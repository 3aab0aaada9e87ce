// Package hydra runs Ory Hydra v2, a real OAuth 2.1 / OpenID Connect
// authorization server, for tests that need real JWT access tokens: signed
// by a real key that can be rotated, with the claims (iss, aud, scp, exp)
// a real server puts in them, from the real grants (client credentials,
// authorization code with PKCE). A mock would only ever agree with our own
// reading of the specifications; Hydra is someone else's.
//
// Start runs `hydra serve all --dev` on free 127.0.0.1 ports with an
// in-memory store (DSN=memory), so every test gets a server of its own
// that forgets everything when it stops. Hydra delegates login and consent
// to an application of ours: Start serves both on a loopback httptest
// server that accepts every login as Options.Subject and grants what the
// client asked for, so that FollowAuthorization can play the browser
// without a human.
//
// hack/hydra.sh builds the binary once from the Go module proxy into
// ~/.cache/mcp-hub (`make hydra`, part of `make test-deps`); MCPHUB_HYDRA
// names another one. Only tests import this package.
package hydra

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// AccessTokenKeySet is the JSON Web Key Set Hydra signs JWT access tokens
// with; its public keys are in the public JWKS (/.well-known/jwks.json).
const AccessTokenKeySet = "hydra.jwt.access-token"

// GroupsClaim is the custom claim Start's consent step puts the user's
// groups in. The config lists it in oauth2.allowed_top_level_claims, so it
// is a top-level claim of the access token (and, as Hydra mirrors custom
// claims by default, also ext.groups).
const GroupsClaim = "groups"

// DefaultSubject is the subject logins are accepted as when
// Options.Subject is empty.
const DefaultSubject = "alice@example.test"

// requestTimeout bounds one request to Hydra or through the flow: the
// server is local, so anything slower is a hang.
const requestTimeout = 30 * time.Second

// Options configures a Server.
type Options struct {
	// Subject is who the login step says the user is (DefaultSubject when
	// empty). SetUser changes it later.
	Subject string
	// Groups go into access and ID tokens as the GroupsClaim claim (none
	// when empty).
	Groups []string
	// Claims are more custom claims of access tokens issued through the
	// login and consent flow (the consent's session.access_token). Only
	// those named in TopLevelClaims are top-level claims; Hydra puts all of
	// them under "ext".
	Claims map[string]any
	// TopLevelClaims are claims, besides GroupsClaim, that Hydra may put at
	// the top level of access tokens (oauth2.allowed_top_level_claims).
	TopLevelClaims []string
	// GrantScopes, when set, is what the consent step grants instead of
	// every scope the client requested. Hydra takes it as is, even scopes
	// the client may not request: a way to mint tokens with odd scopes.
	GrantScopes []string
	// GrantAudience, when set, is the access token audience the consent
	// step grants instead of the one the client requested (the
	// authorization request's audience parameter). Hydra takes it as is,
	// even an audience outside the client's: a way to mint tokens for the
	// wrong audience.
	GrantAudience []string
	// AccessTokenTTL is ttl.access_token, the lifetime of access tokens of
	// clients without lifespans of their own (an hour when zero).
	AccessTokenTTL time.Duration
	// DynamicClientRegistration enables RFC 7591 registration at
	// /oauth2/register and advertises it in the discovery document.
	DynamicClientRegistration bool
	// ResourceAudience makes the consent step also grant, as access token
	// audience, the RFC 8707 resource parameters of the authorization
	// request. Hydra ignores resource (it knows only its own audience
	// parameter), and the MCP SDK's client sends resource alone, so without
	// this its tokens have no audience (aud is []). Hydra does not check
	// what the consent grants against the client's audience.
	ResourceAudience bool
}

// Server is a running Hydra and the login and consent app it delegates to.
type Server struct {
	issuer  string // the discovery document's issuer, as in tokens' iss
	public  string // http://127.0.0.1:PORT, no trailing slash
	admin   string // http://127.0.0.1:PORT, no trailing slash
	logPath string
	opts    Options
	hc      *http.Client

	mu      sync.Mutex
	subject string
	groups  []string
}

// Binary returns the Hydra binary: MCPHUB_HYDRA, or hack/hydra.sh's cached
// build (built now when missing: several minutes on a fresh machine).
func Binary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("MCPHUB_HYDRA"); bin != "" {
		return bin
	}
	root, err := hubtest.RepoRoot()
	if err != nil {
		t.Fatalf("hydra: find the repository root: %v", err)
	}
	cmd := exec.Command(filepath.Join(root, "hack", "hydra.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hydra: hack/hydra.sh: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// Start runs Hydra and its login and consent app until t's cleanup, and
// returns once Hydra reports itself ready.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	s := &Server{
		opts:    opts,
		hc:      &http.Client{Timeout: requestTimeout},
		subject: cmp.Or(opts.Subject, DefaultSubject),
		groups:  slices.Clone(opts.Groups),
		logPath: filepath.Join(dir, "hydra.log"),
	}
	// The app's listener is bound now, for Hydra's config, and serves once
	// the Server is complete: its handlers read it.
	ui := httptest.NewUnstartedServer(s.uiHandler())
	t.Cleanup(ui.Close)
	uiURL := "http://" + ui.Listener.Addr().String()

	logFile, err := os.Create(s.logPath)
	if err != nil {
		t.Fatalf("hydra: create the log file: %v", err)
	}
	t.Cleanup(func() {
		logFile.Close()
		if t.Failed() {
			t.Logf("hydra: full log in %s", s.logPath)
		}
	})
	secret := randomHex(t, 32)
	// The admin port is picked free but bound only when Hydra starts: a
	// process of another test can take it first, and then Hydra exits
	// while that process answers on the port. Such a start is tried again.
	for attempt := 1; ; attempt++ {
		err := s.launch(t, bin, dir, uiURL, secret, logFile)
		if err == nil {
			break
		}
		if attempt == 3 {
			t.Fatalf("hydra: %v", err)
		}
		t.Logf("hydra: %v; starting again", err)
	}
	ui.Start()
	return s
}

// errExited is a start whose Hydra exited: its admin port was taken.
var errExited = errors.New("hydra exited while starting (its admin port taken by another process?)")

// launch starts Hydra on free ports, waits until both of its listeners
// are ready and makes the access token key set. An error is a start to
// try again; anything else fails t.
func (s *Server) launch(t testing.TB, bin, dir, uiURL, secret string, logFile *os.File) error {
	t.Helper()
	var admin int
	proc, public := hubtest.StartServer(t, "hydra", 0, func(public int) *exec.Cmd {
		admin = hubtest.FreePort(t)
		path := filepath.Join(dir, fmt.Sprintf("hydra-%d.yaml", public))
		if err := os.WriteFile(path, []byte(config(s.opts, public, admin, uiURL, secret)), 0o600); err != nil {
			t.Fatalf("hydra: write the config: %v", err)
		}
		cmd := exec.Command(bin, "serve", "all", "--dev", "--sqa-opt-out", "--config", path)
		// A small environment of our own: Hydra reads every config key from
		// the environment too (LOG_LEVEL, SERVE_PUBLIC_PORT, ...), where it
		// wins over the file, so the caller's must not leak in. DSN as
		// Hydra's docs set it, besides the file's.
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + dir, "DSN=memory", "SQA_OPT_OUT=true"}
		cmd.Stdout, cmd.Stderr = logFile, logFile
		return cmd
	})
	s.public = fmt.Sprintf("http://127.0.0.1:%d", public)
	s.admin = fmt.Sprintf("http://127.0.0.1:%d", admin)
	deadline := time.Now().Add(hubtest.StartTimeout)
	for {
		err := s.get(s.public+"/health/ready", nil)
		if err == nil {
			err = s.get(s.admin+"/health/ready", nil)
		}
		switch {
		case proc.Exited():
			return errExited
		case err == nil:
		case time.Now().After(deadline):
			t.Fatalf("hydra's /health/ready: %v", err)
		default:
			time.Sleep(50 * time.Millisecond)
			continue
		}
		break
	}
	var disc struct {
		Issuer string `json:"issuer"`
	}
	if err := s.get(s.public+"/.well-known/openid-configuration", &disc); err != nil {
		t.Fatalf("hydra: read the discovery document: %v", err)
	}
	s.issuer = disc.Issuer
	// Hydra makes its access token key on first use: by the first token
	// request, and by the first read of the JWKS too. When those two race
	// (a resource server fetches the keys while the test asks for its
	// first token) Hydra makes two keys, and which one signs is anyone's
	// guess. Making the key set now keeps it to one.
	body := map[string]string{"alg": "RS256", "use": "sig", "kid": "initial-" + randomHex(t, 8)}
	err := s.do(http.MethodPost, s.admin+"/admin/keys/"+AccessTokenKeySet, body, nil)
	switch {
	case proc.Exited():
		proc.Kill()
		return errExited
	case err != nil:
		t.Fatalf("hydra: make the access token key set: %v", err)
	}
	return nil
}

// config is Hydra's configuration: loopback listeners, the in-memory
// store, JWT access tokens, our login and consent app, and a client secret
// hash cheap enough for tests under -race.
func config(opts Options, public, admin int, ui, secret string) string {
	ttl := opts.AccessTokenTTL
	if ttl == 0 {
		ttl = time.Hour
	}
	topLevel := append([]string{GroupsClaim}, opts.TopLevelClaims...)
	var registration string
	if opts.DynamicClientRegistration {
		registration = fmt.Sprintf("\n    client_registration_url: http://127.0.0.1:%d/oauth2/register", public)
	}
	return fmt.Sprintf(`dsn: memory
dev: true
serve:
  public:
    host: 127.0.0.1
    port: %[1]d
  admin:
    host: 127.0.0.1
    port: %[2]d
  cookies:
    same_site_mode: Lax
urls:
  self:
    issuer: http://127.0.0.1:%[1]d/
    public: http://127.0.0.1:%[1]d/
    admin: http://127.0.0.1:%[2]d/
  login: %[3]s/login
  consent: %[3]s/consent
  logout: %[3]s/logout
  error: %[3]s/error
strategies:
  access_token: jwt
  jwt:
    scope_claim: both
oauth2:
  expose_internal_errors: true
  allowed_top_level_claims: %[4]s
  mirror_top_level_claims: true
  pkce:
    enforced_for_public_clients: true
  hashers:
    algorithm: pbkdf2
    pbkdf2:
      iterations: 1000
oidc:
  dynamic_client_registration:
    enabled: %[5]t
webfinger:
  oidc_discovery:
    supported_claims: [%[6]s]%[7]s
ttl:
  access_token: %[8]s
secrets:
  system: [%[9]s]
sqa:
  opt_out: true
log:
  level: info
  format: json
  leak_sensitive_values: true
`, public, admin, ui, jsonString(topLevel), opts.DynamicClientRegistration, GroupsClaim, registration, ttl, secret)
}

// Issuer is the issuer Hydra advertises in its discovery document and puts
// in tokens' iss claim: http://127.0.0.1:PORT/ (with the trailing slash).
func (s *Server) Issuer() string { return s.issuer }

// PublicURL is the public API's base URL (no trailing slash):
// /oauth2/auth, /oauth2/token, /.well-known/...
func (s *Server) PublicURL() string { return s.public }

// AdminURL is the admin API's base URL (no trailing slash): /admin/...
func (s *Server) AdminURL() string { return s.admin }

// JWKSURL is the public JSON Web Key Set tokens are verified with.
func (s *Server) JWKSURL() string { return s.public + "/.well-known/jwks.json" }

// AuthURL is the authorization endpoint.
func (s *Server) AuthURL() string { return s.public + "/oauth2/auth" }

// TokenURL is the token endpoint.
func (s *Server) TokenURL() string { return s.public + "/oauth2/token" }

// LogPath is the file Hydra's output goes to.
func (s *Server) LogPath() string { return s.logPath }

// SetUser changes who later logins are accepted as, and their groups.
func (s *Server) SetUser(subject string, groups []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subject, s.groups = subject, slices.Clone(groups)
}

func (s *Server) user() (string, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.subject, slices.Clone(s.groups)
}

// Client is an OAuth 2.0 client to register with CreateClient.
type Client struct {
	// ID and Secret are generated by Hydra when empty (no secret for a
	// public client, TokenEndpointAuthMethod "none").
	ID, Secret string
	// GrantTypes defaults to client_credentials.
	GrantTypes []string
	// ResponseTypes defaults to code when GrantTypes has
	// authorization_code.
	ResponseTypes []string
	// Scopes are the scopes the client may request.
	Scopes []string
	// Audience is the audience the client may request for its tokens.
	Audience []string
	// RedirectURIs are where the authorization code flow may return to.
	RedirectURIs []string
	// TokenEndpointAuthMethod is client_secret_basic when empty; "none"
	// for a public client (PKCE).
	TokenEndpointAuthMethod string
	// AccessTokenLifespan, when set, is the lifetime of the client's access
	// tokens from the client credentials, the authorization code and the
	// refresh token grant (e.g. 2s for an expiry test).
	AccessTokenLifespan time.Duration
}

// CreateClient registers c through the admin API and returns it with the
// ID and secret Hydra settled on.
func (s *Server) CreateClient(t testing.TB, c Client) Client {
	t.Helper()
	if len(c.GrantTypes) == 0 {
		c.GrantTypes = []string{"client_credentials"}
	}
	if len(c.ResponseTypes) == 0 && slices.Contains(c.GrantTypes, "authorization_code") {
		c.ResponseTypes = []string{"code"}
	}
	if c.TokenEndpointAuthMethod == "" {
		c.TokenEndpointAuthMethod = "client_secret_basic"
	}
	body := map[string]any{
		"client_id":                  c.ID,
		"client_secret":              c.Secret,
		"grant_types":                c.GrantTypes,
		"response_types":             c.ResponseTypes,
		"scope":                      strings.Join(c.Scopes, " "),
		"audience":                   nonNil(c.Audience),
		"redirect_uris":              nonNil(c.RedirectURIs),
		"token_endpoint_auth_method": c.TokenEndpointAuthMethod,
	}
	if c.AccessTokenLifespan > 0 {
		d := c.AccessTokenLifespan.String()
		body["client_credentials_grant_access_token_lifespan"] = d
		body["authorization_code_grant_access_token_lifespan"] = d
		body["refresh_token_grant_access_token_lifespan"] = d
	}
	var created struct {
		ID     string `json:"client_id"`
		Secret string `json:"client_secret"`
	}
	if err := s.do(http.MethodPost, s.admin+"/admin/clients", body, &created); err != nil {
		t.Fatalf("hydra: create client %q: %v", c.ID, err)
	}
	c.ID, c.Secret = created.ID, created.Secret
	return c
}

// ClientCredentialsToken gets an access token with the client credentials
// grant, authenticating with HTTP Basic. scope is space-separated; the
// audience goes in Hydra's audience parameter (space-separated too).
func (s *Server) ClientCredentialsToken(t testing.TB, clientID, secret, scope string, audience []string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}}
	if scope != "" {
		form.Set("scope", scope)
	}
	if len(audience) > 0 {
		form.Set("audience", strings.Join(audience, " "))
	}
	tok, err := s.token(form, clientID, secret)
	if err != nil {
		t.Fatalf("hydra: client credentials token for %q: %v", clientID, err)
	}
	_, claims, err := Decode(tok.AccessToken)
	if err != nil {
		t.Fatalf("hydra: client credentials token for %q: %v", clientID, err)
	}
	for _, a := range audience {
		if !slices.Contains(ClaimStrings(claims["aud"]), a) {
			t.Fatalf("hydra: client credentials token for %q: aud %v lacks %q", clientID, claims["aud"], a)
		}
	}
	return tok.AccessToken
}

// Token is a token endpoint's answer.
type Token struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	Scope        string `json:"scope"`
	RefreshToken string `json:"refresh_token"`
	IDToken      string `json:"id_token"`
}

// token POSTs form to the token endpoint, with HTTP Basic client
// authentication when secret is set and client_id in the form otherwise.
func (s *Server) token(form url.Values, clientID, secret string) (*Token, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	if secret == "" {
		form.Set("client_id", clientID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.TokenURL(), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if secret != "" {
		// RFC 6749 2.3.1: both are form-encoded before Basic encoding.
		req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret))
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("token endpoint: %s: %s", resp.Status, raw)
	}
	var tok Token
	if err := json.Unmarshal(raw, &tok); err != nil {
		return nil, fmt.Errorf("token endpoint: decode %s: %w", raw, err)
	}
	return &tok, nil
}

// ExchangeCode redeems an authorization code for a client, sending the
// PKCE verifier (and authenticating with HTTP Basic when secret is set).
// extra carries more parameters, e.g. RFC 8707's resource.
func (s *Server) ExchangeCode(t testing.TB, clientID, secret, code, redirectURI, verifier string, extra url.Values) *Token {
	t.Helper()
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {redirectURI},
		"code_verifier": {verifier},
	}
	for k, v := range extra {
		form[k] = v
	}
	tok, err := s.token(form, clientID, secret)
	if err != nil {
		t.Fatalf("hydra: exchange the code of %q: %v", clientID, err)
	}
	return tok
}

// RotateKey adds a fresh RS256 key to the access token key set and returns
// its kid. Hydra signs with the newest key of the set, so tokens issued
// from now on carry the new kid; the old key stays in the JWKS, so tokens
// signed with it still verify, until DeleteKey removes it.
func (s *Server) RotateKey(t testing.TB) string {
	t.Helper()
	before := s.SigningKeyID(t)
	kid := "rotated-" + randomHex(t, 8)
	var set struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	body := map[string]string{"alg": "RS256", "use": "sig", "kid": kid}
	if err := s.do(http.MethodPost, s.admin+"/admin/keys/"+AccessTokenKeySet, body, &set); err != nil {
		t.Fatalf("hydra: add a key to %s: %v", AccessTokenKeySet, err)
	}
	// The newest key is the one with the latest created_at, which has a
	// resolution of a second: a key added within the second of the one
	// before may not win yet. Wait until it does.
	hubtest.Eventually(t, 5*time.Second, 100*time.Millisecond, "hydra to sign with the new key "+kid, func() error {
		if got := s.SigningKeyID(t); got != kid {
			return fmt.Errorf("signing key is %q (was %q)", got, before)
		}
		return nil
	})
	return kid
}

// SigningKeyID is the kid Hydra signs access tokens with now: the first
// (newest) key of the access token key set.
func (s *Server) SigningKeyID(t testing.TB) string {
	t.Helper()
	var set struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	if err := s.get(s.admin+"/admin/keys/"+AccessTokenKeySet, &set); err != nil {
		t.Fatalf("hydra: read key set %s: %v", AccessTokenKeySet, err)
	}
	if len(set.Keys) == 0 {
		t.Fatalf("hydra: key set %s is empty", AccessTokenKeySet)
	}
	return set.Keys[0].Kid
}

// DeleteKey removes the key kid from the access token key set, and so from
// the public JWKS: tokens signed with it no longer verify.
func (s *Server) DeleteKey(t testing.TB, kid string) {
	t.Helper()
	if err := s.do(http.MethodDelete, s.admin+"/admin/keys/"+AccessTokenKeySet+"/"+url.PathEscape(kid), nil, nil); err != nil {
		t.Fatalf("hydra: delete key %q: %v", kid, err)
	}
}

// JWKSKeyIDs are the kids in the public JWKS (JWKSURL), in its order.
func (s *Server) JWKSKeyIDs(t testing.TB) []string {
	t.Helper()
	var set struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	if err := s.get(s.JWKSURL(), &set); err != nil {
		t.Fatalf("hydra: read the JWKS: %v", err)
	}
	kids := make([]string, 0, len(set.Keys))
	for _, k := range set.Keys {
		kids = append(kids, k.Kid)
	}
	return kids
}

// FollowAuthorization plays the browser through an authorization request:
// it GETs authURL and follows the redirects, with a cookie jar, through
// Hydra and Start's login and consent app, and stops at the redirect to
// redirectURI (which it does not request), returning the code parameter.
// It fails t when Hydra redirects back with an error, or to its error
// page, or when the flow ends anywhere else.
func (s *Server) FollowAuthorization(t testing.TB, authURL, redirectURI string) string {
	t.Helper()
	code, err := s.followAuthorization(authURL, redirectURI)
	if err != nil {
		t.Fatalf("hydra: authorization %s: %v", authURL, err)
	}
	return code
}

func (s *Server) followAuthorization(authURL, redirectURI string) (string, error) {
	final, err := hubtest.FollowRedirects(authURL, redirectURI)
	if err != nil {
		return "", err
	}
	q := final.Query()
	if e := q.Get("error"); e != "" {
		return "", fmt.Errorf("redirected with error %q: %s (%s)", e, q.Get("error_description"), q.Get("error_hint"))
	}
	code := q.Get("code")
	if code == "" {
		return "", fmt.Errorf("redirected to %s without a code", final)
	}
	return code, nil
}

// uiHandler is the login and consent app Hydra redirects the browser to.
// It accepts every login as the current user and grants what was asked
// for; Hydra's error page renders the error as the response, where
// FollowAuthorization reports it.
func (s *Server) uiHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		challenge := r.URL.Query().Get("login_challenge")
		subject, _ := s.user()
		var accepted struct {
			RedirectTo string `json:"redirect_to"`
		}
		err := s.do(http.MethodPut, s.admin+"/admin/oauth2/auth/requests/login/accept?login_challenge="+url.QueryEscape(challenge),
			map[string]any{"subject": subject, "remember": false}, &accepted)
		if err != nil {
			http.Error(w, "accept login: "+err.Error(), http.StatusBadGateway)
			return
		}
		http.Redirect(w, r, accepted.RedirectTo, http.StatusFound)
	})
	mux.HandleFunc("GET /consent", func(w http.ResponseWriter, r *http.Request) {
		challenge := url.QueryEscape(r.URL.Query().Get("consent_challenge"))
		var req struct {
			RequestedScope    []string `json:"requested_scope"`
			RequestedAudience []string `json:"requested_access_token_audience"`
			RequestURL        string   `json:"request_url"`
		}
		if err := s.get(s.admin+"/admin/oauth2/auth/requests/consent?consent_challenge="+challenge, &req); err != nil {
			http.Error(w, "read consent request: "+err.Error(), http.StatusBadGateway)
			return
		}
		scopes, audience := req.RequestedScope, req.RequestedAudience
		if s.opts.GrantScopes != nil {
			scopes = s.opts.GrantScopes
		}
		if s.opts.ResourceAudience {
			if u, err := url.Parse(req.RequestURL); err == nil {
				for _, r := range u.Query()["resource"] {
					if !slices.Contains(audience, r) {
						audience = append(audience, r)
					}
				}
			}
		}
		if s.opts.GrantAudience != nil {
			audience = s.opts.GrantAudience
		}
		_, groups := s.user()
		claims := map[string]any{}
		for k, v := range s.opts.Claims {
			claims[k] = v
		}
		idClaims := map[string]any{}
		if len(groups) > 0 {
			claims[GroupsClaim] = groups
			idClaims[GroupsClaim] = groups
		}
		var accepted struct {
			RedirectTo string `json:"redirect_to"`
		}
		err := s.do(http.MethodPut, s.admin+"/admin/oauth2/auth/requests/consent/accept?consent_challenge="+challenge, map[string]any{
			"grant_scope":                 nonNil(scopes),
			"grant_access_token_audience": nonNil(audience),
			"remember":                    false,
			"session":                     map[string]any{"access_token": claims, "id_token": idClaims},
		}, &accepted)
		if err != nil {
			http.Error(w, "accept consent: "+err.Error(), http.StatusBadGateway)
			return
		}
		http.Redirect(w, r, accepted.RedirectTo, http.StatusFound)
	})
	mux.HandleFunc("GET /error", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		http.Error(w, fmt.Sprintf("hydra error %q: %s (%s)", q.Get("error"), q.Get("error_description"), q.Get("error_hint")), http.StatusBadRequest)
	})
	mux.HandleFunc("GET /logout", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "logout is not implemented by the test app", http.StatusNotImplemented)
	})
	return mux
}

// get GETs a JSON document into out (when not nil), failing on any status
// but 200.
func (s *Server) get(u string, out any) error { return s.do(http.MethodGet, u, nil, out) }

// do sends body as JSON and decodes a 2xx answer into out (when not nil).
func (s *Server) do(method, u string, body, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, u, resp.Status, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s %s: decode %s: %w", method, u, raw, err)
		}
	}
	return nil
}

// Decode splits a JWT into its header and claims without verifying it:
// for asserting what Hydra put in a token, not for trusting one.
func Decode(token string) (header, claims map[string]any, err error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, nil, fmt.Errorf("not a JWT: %d parts", len(parts))
	}
	for i, dst := range []*map[string]any{&header, &claims} {
		raw, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			return nil, nil, fmt.Errorf("decode JWT part %d: %w", i, err)
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return nil, nil, fmt.Errorf("decode JWT part %d: %w", i, err)
		}
	}
	return header, claims, nil
}

// ClaimStrings reads a decoded claim that is a string or a list of
// strings (aud, scp, groups) as a list; nil for anything else.
func ClaimStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n/2)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("hydra: random: %v", err)
	}
	return hex.EncodeToString(b)
}

// jsonString is v as JSON, which is also YAML.
func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// nonNil turns a nil slice into an empty one, which Hydra reads as "none"
// where it may read null as "unset".
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

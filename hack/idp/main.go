// Command idp is the OAuth 2.0 token service the hub's integration tests
// get tokens from: a real RFC 8693 Token Exchange and client credentials to
// mint the callers' own tokens (issue 24), and the sign-in of a user
// (authorization code with PKCE, refresh tokens rotated on every use, RFC
// 7009 revocation) for servers the hub reaches as each caller's own
// account, served by the OpenID provider of github.com/zitadel/oidc/v3.
// zitadel does the protocol work (authorization and token endpoints,
// client authentication, grant and PKCE checks, discovery, JWKS, signing
// and verifying JWTs); this program adds an in-memory storage (storage.go,
// authcode.go) with the policy of the test clients, a login that approves
// every sign-in as one configured user, takes JWTs of other issuers it is
// told to trust as subject tokens (trusted.go: a Kubernetes cluster's
// ServiceAccount tokens), and counts grants for the tests at
// GET /test/stats.
//
// It is a test tool, not a product: clients come from a JSON file, keys
// live in memory and die with the process, and it listens on loopback only.
//
//	idp -config clients.json -addr 127.0.0.1:PORT
//
// hack/idp.sh builds it into ~/.cache/mcp-hub; internal/hubtest/idp runs it.
// It is a module of its own so that the hub's go.mod does not carry zitadel.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Config is the JSON file given with -config.
type Config struct {
	Clients []ClientConfig `json:"clients"`
	// AccessTokenTTL is the lifetime of access tokens, a Go duration
	// ("5m", "2s"), for clients that name none; five minutes when empty.
	AccessTokenTTL string `json:"accessTokenTTL"`
	// LoginSubject is the user every sign-in (authorization code grant) is
	// approved as, at once, with no page shown; when empty every sign-in
	// is refused with access_denied.
	LoginSubject string `json:"loginSubject"`
	// TrustedIssuers are the other issuers whose JWTs may be exchanged
	// (subject tokens), besides this service's own access tokens.
	TrustedIssuers []TrustedIssuerConfig `json:"trustedIssuers"`
}

// TrustedIssuerConfig is another issuer whose JWTs are subject tokens: a
// token whose iss is Issuer is verified with the keys of the JWKS document
// in JWKSFile (signature, iss, exp), and the exchanged token's sub is its
// sub.
type TrustedIssuerConfig struct {
	Issuer   string `json:"issuer"`
	JWKSFile string `json:"jwksFile"`
}

// ClientConfig is one OAuth client.
type ClientConfig struct {
	ID string `json:"id"`
	// Secret authenticates the client; a client without one is public
	// (token_endpoint_auth_method none), and may only sign users in.
	Secret string `json:"secret"`
	// Grants are the grant types the client may use: client_credentials,
	// urn:ietf:params:oauth:grant-type:token-exchange (both need a secret),
	// authorization_code (PKCE with S256 required; needs RedirectURIs) and
	// refresh_token (a code redeemed with the offline_access scope brings
	// a refresh token, rotated on every use).
	Grants []string `json:"grants"`
	// RedirectURIs are where sign-ins may send the browser back, exactly.
	RedirectURIs []string `json:"redirectURIs"`
	// AccessTokenTTL is the lifetime of the client's access (and ID)
	// tokens, a Go duration; the Config's when empty.
	AccessTokenTTL string `json:"accessTokenTTL"`
	// Audiences are the targets (audience or resource parameters) the
	// client may exchange tokens for, and the resources (RFC 8707) a
	// sign-in's tokens may be for. Client credentials tokens may name any
	// audience, so that tests can mint tokens for the wrong one.
	Audiences []string `json:"audiences"`
	// Scopes are the scopes the client may request, with any grant
	// (besides openid and offline_access, which a sign-in may always ask
	// for).
	Scopes []string `json:"scopes"`
}

// defaultTTL is the access token lifetime when the config names none.
const defaultTTL = 5 * time.Minute

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "idp:", err)
		os.Exit(1)
	}
}

func run() error {
	configPath := flag.String("config", "", "JSON file of clients and the access token TTL (required)")
	addr := flag.String("addr", "127.0.0.1:0", "loopback address to listen on; the issuer is http://ADDR")
	flag.Parse()
	if *configPath == "" || flag.NArg() > 0 {
		flag.Usage()
		return errors.New("-config is required and no arguments are taken")
	}
	cfg, ttl, err := loadConfig(*configPath)
	if err != nil {
		return err
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))

	ln, err := listenLoopback(*addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	issuer := "http://" + ln.Addr().String()

	st, err := newStorage(cfg, ttl)
	if err != nil {
		return err
	}
	var cryptoKey [32]byte // encrypts opaque tokens, which this server never issues
	if _, err := rand.Read(cryptoKey[:]); err != nil {
		return fmt.Errorf("make the crypto key: %w", err)
	}
	provider, err := op.NewProvider(&op.Config{CryptoKey: cryptoKey, AuthMethodPost: true,
		CodeMethodS256: true, GrantTypeRefreshToken: true}, st,
		op.StaticIssuer(issuer), op.WithAllowInsecure())
	if err != nil {
		return fmt.Errorf("create the OpenID provider: %w", err)
	}
	st.verifier = provider.AccessTokenVerifier

	// Only the endpoints these grants need: discovery and health come with
	// every server; userinfo, introspection and the rest stay unrouted.
	endpoints := op.Endpoints{
		Authorization: op.NewEndpoint("authorize"),
		Token:         op.NewEndpoint("oauth/token"),
		Revocation:    op.NewEndpoint("oauth/revoke"),
		JwksURI:       op.NewEndpoint("keys"),
	}
	srv := &server{LegacyServer: op.NewLegacyServer(provider, endpoints), provider: provider, storage: st}
	// The issuer in the request context is where zitadel reads it when it
	// signs and verifies tokens and builds its URLs.
	withIssuer := op.NewIssuerInterceptor(provider.IssuerFromRequest).Handler
	opHandler := op.RegisterServer(srv, endpoints, op.WithHTTPMiddleware(withIssuer))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /test/stats", srv.serveStats)
	mux.Handle("GET "+loginPath, withIssuer(http.HandlerFunc(srv.login)))
	mux.Handle("GET "+callbackPath, withIssuer(http.HandlerFunc(srv.authorizeCallback)))
	// RFC 8414's metadata, where OAuth clients (the hub among them) look
	// first: the same document as OpenID Connect Discovery's.
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		r = r.Clone(r.Context())
		r.URL.Path, r.URL.RawPath = oidc.DiscoveryEndpoint, ""
		opHandler.ServeHTTP(w, r)
	})
	mux.Handle("/", opHandler)

	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }() // owned by run: ends when hs shuts down
	slog.Info("serving", "issuer", issuer, "clients", len(cfg.Clients), "trusted_issuers", len(cfg.TrustedIssuers), "access_token_ttl", ttl, "login_subject", cfg.LoginSubject)
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	<-served
	return nil
}

// loadConfig reads and checks the config file. Unknown fields are errors:
// a misspelt field would otherwise silently give a client no grants.
func loadConfig(path string) (*Config, time.Duration, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("read the config: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	var cfg Config
	if err := dec.Decode(&cfg); err != nil {
		return nil, 0, fmt.Errorf("parse the config %s: %w", path, err)
	}
	ttl := defaultTTL
	if cfg.AccessTokenTTL != "" {
		if ttl, err = time.ParseDuration(cfg.AccessTokenTTL); err != nil || ttl <= 0 {
			return nil, 0, fmt.Errorf("config %s: accessTokenTTL %q is not a positive duration", path, cfg.AccessTokenTTL)
		}
	}
	return &cfg, ttl, nil
}

// listenLoopback listens on addr, which must be a loopback address: the
// server has test secrets and mints tokens for anyone who knows them.
func listenLoopback(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("-addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("-addr %q: not a loopback address", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

// server is zitadel's LegacyServer, which maps the Server interface onto
// the provider and our storage, with grants overridden where the storage
// interface cannot express what the tests need.
type server struct {
	*op.LegacyServer
	provider *op.Provider
	storage  *storage
	// Successful grants, for GET /test/stats.
	exchanges, clientCredentials, codeExchanges, refreshes atomic.Int64
}

// VerifyClient is zitadel's client authentication, answering a failed one
// with 401 as RFC 6749 section 5.2 has it (zitadel answers 400).
func (s *server) VerifyClient(ctx context.Context, r *op.Request[op.ClientCredentials]) (op.Client, error) {
	c, err := s.LegacyServer.VerifyClient(ctx, r)
	if oe := (*oidc.Error)(nil); errors.As(err, &oe) && oe.ErrorType == oidc.InvalidClient {
		return nil, op.NewStatusError(err, http.StatusUnauthorized)
	}
	return c, err
}

// Discovery is zitadel's discovery document with what this server really
// offers: zitadel advertises the implicit and JWT bearer grants, ID token
// response types and the plain PKCE method whatever the server does, and
// has no field for RFC 9207's iss, which authorizeCallback sends.
func (s *server) Discovery(ctx context.Context, r *op.Request[struct{}]) (*op.Response, error) {
	resp, err := s.LegacyServer.Discovery(ctx, r)
	if err != nil {
		return nil, err
	}
	d, ok := resp.Data.(*oidc.DiscoveryConfiguration)
	if !ok {
		return nil, fmt.Errorf("discovery: zitadel answered a %T", resp.Data)
	}
	auth := []oidc.AuthMethod{oidc.AuthMethodBasic, oidc.AuthMethodPost, oidc.AuthMethodNone}
	d.GrantTypesSupported = []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken,
		oidc.GrantTypeClientCredentials, oidc.GrantTypeTokenExchange}
	d.ResponseTypesSupported = []string{string(oidc.ResponseTypeCode)}
	d.ResponseModesSupported = []string{string(oidc.ResponseModeQuery)}
	d.CodeChallengeMethodsSupported = []oidc.CodeChallengeMethod{oidc.CodeChallengeMethodS256}
	d.TokenEndpointAuthMethodsSupported = auth
	d.RevocationEndpointAuthMethodsSupported = auth
	// No introspection, and no private_key_jwt client authentication.
	d.IntrospectionEndpointAuthMethodsSupported = nil
	d.IntrospectionEndpointAuthSigningAlgValuesSupported = nil
	d.RevocationEndpointAuthSigningAlgValuesSupported = nil
	resp.Data = struct {
		*oidc.DiscoveryConfiguration
		IssParameter bool `json:"authorization_response_iss_parameter_supported"`
	}{d, true}
	return resp, nil
}

// ClientCredentialsExchange issues a JWT access token to the client itself.
// zitadel's own passes only the scopes to the storage, so the target (the
// audience parameter, as Hydra takes it, and RFC 8707's resource) would be
// lost: the token request is built here, and zitadel signs it.
func (s *server) ClientCredentialsExchange(ctx context.Context, r *op.ClientRequest[oidc.ClientCredentialsRequest]) (*op.Response, error) {
	var audience []string
	for _, a := range fields(slices.Concat(r.Form["audience"], r.Form["resource"])) {
		if !slices.Contains(audience, a) {
			audience = append(audience, a)
		}
	}
	req, err := s.storage.clientCredentialsRequest(r.Client.GetID(), r.Data.Scope, audience)
	if err != nil {
		return nil, err
	}
	resp, err := op.CreateClientCredentialsTokenResponse(ctx, req, s.provider, r.Client)
	if err != nil {
		return nil, err
	}
	s.clientCredentials.Add(1)
	return op.NewResponse(resp), nil
}

// TokenExchange is zitadel's RFC 8693 exchange with three things done
// first. zitadel answers a subject token it cannot verify with
// invalid_request ("subject_token is invalid"), as RFC 8693 section 2.2.2
// has it, dropping why; the tests (and many real servers) want
// invalid_grant, so the token is verified here first, with zitadel's
// verifier (signature, issuer, expiry) and our keys or a trusted issuer's.
// zitadel would also accept refresh and ID tokens as subjects; only access
// tokens (and JWTs, which ours and the trusted issuers' are) are. And it
// puts only the audience parameters in the issued token's aud, not RFC
// 8707 resource ones, with no way for the storage to add them: the
// resources are added to the audience here.
func (s *server) TokenExchange(ctx context.Context, r *op.ClientRequest[oidc.TokenExchangeRequest]) (*op.Response, error) {
	d := r.Data
	switch d.SubjectTokenType {
	case oidc.AccessTokenType, oidc.JWTTokenType:
	default:
		return nil, oidc.ErrInvalidRequest().WithDescription("subject_token_type %s is not accepted: only access tokens and JWTs are", d.SubjectTokenType)
	}
	if d.ActorToken != "" {
		return nil, oidc.ErrInvalidRequest().WithDescription("actor_token is not supported: the exchanging client is the actor")
	}
	if _, err := s.storage.verifySubjectToken(ctx, d.SubjectToken); err != nil {
		return nil, oidc.ErrInvalidGrant().WithDescription("subject_token is not a valid, unexpired access token of this issuer or a trusted one").WithParent(err)
	}
	for _, res := range d.Resource {
		if !slices.Contains(d.Audience, res) {
			d.Audience = append(d.Audience, res)
		}
	}
	resp, err := s.LegacyServer.TokenExchange(ctx, r)
	if err != nil {
		return nil, err
	}
	s.exchanges.Add(1)
	return resp, nil
}

// serveStats answers GET /test/stats with the successful grants so far, so
// that a test can measure how often the hub exchanges.
func (s *server) serveStats(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]int64{
		"exchanges":         s.exchanges.Load(),
		"clientCredentials": s.clientCredentials.Load(),
		"codeExchanges":     s.codeExchanges.Load(),
		"refreshes":         s.refreshes.Load(),
	})
}

// fields splits form values that may each hold several space-separated
// entries (Hydra's audience parameter is one such list) into one list.
func fields(values []string) []string {
	var out []string
	for _, v := range values {
		out = append(out, strings.Fields(v)...)
	}
	return out
}

package useroauth

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/hubtest/hydra"
)

// The tests below run the whole grant against a real Ory Hydra: what the
// fakes above cannot tell is whether a real authorization server reads
// the requests as this package writes them.

const (
	// hydraRedirect is where Hydra sends the browser back; nothing listens
	// there: AuthorizationRedirect stops before requesting it.
	hydraRedirect = "http://127.0.0.1:9/oauth/callback"
	// hydraResource is the MCP server the tokens are for (RFC 8707).
	hydraResource = "http://127.0.0.1:9/mcp"
	hydraTTL      = 5 * time.Minute
)

var hydraScopes = []string{"openid", "offline_access"}

func hydraContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// authorize plays one authorization through Hydra as the hub would: the
// request, the browser (login and consent granted), the response's state
// and issuer, the code exchange.
func authorize(t *testing.T, hy *hydra.Server, ep Endpoints, c Client) Token {
	t.Helper()
	ctx := hydraContext(t)
	state := "state-" + strings.ReplaceAll(t.Name(), "/", "-")
	req := Authorize(ep, c, hydraRedirect, state, hydraScopes, hydraResource)
	back := hy.AuthorizationRedirect(t, req.URL, hydraRedirect)
	q := back.Query()
	if q.Get("error") != "" {
		t.Fatalf("authorization refused: %s: %s (%s)", q.Get("error"), q.Get("error_description"), q.Get("error_hint"))
	}
	if q.Get("state") != state {
		t.Fatalf("state %q, want %q", q.Get("state"), state)
	}
	if err := CheckIssuer(ep, q.Get("iss")); err != nil {
		t.Fatalf("CheckIssuer: %v", err)
	}
	if ep.IssParameter && q.Get("iss") == "" {
		t.Fatalf("Hydra says it sends iss and sent none")
	}
	before := time.Now()
	tok, err := Exchange(ctx, http.DefaultClient, ep, c, hydraRedirect, q.Get("code"), req.Verifier, hydraResource)
	if err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	checkHydraToken(t, hy, tok, before)
	if tok.IDToken == "" || Subject(tok.IDToken) != hydra.DefaultSubject {
		t.Errorf("ID token of subject %q, want %q", Subject(tok.IDToken), hydra.DefaultSubject)
	}
	for _, s := range hydraScopes {
		if !slices.Contains(tok.Scopes, s) {
			t.Errorf("scopes %q lack %q", tok.Scopes, s)
		}
	}
	return tok
}

// checkHydraToken checks what Hydra granted: a JWT access token for the
// user and the resource, a refresh token, an expiry.
func checkHydraToken(t *testing.T, hy *hydra.Server, tok Token, before time.Time) {
	t.Helper()
	if tok.AccessToken == "" || tok.RefreshToken == "" || !strings.EqualFold(tok.TokenType, "bearer") {
		t.Fatalf("token without access or refresh token: type %q, access %t, refresh %t", tok.TokenType, tok.AccessToken != "", tok.RefreshToken != "")
	}
	if got := Subject(tok.AccessToken); got != hydra.DefaultSubject {
		t.Errorf("access token's subject %q, want %q", got, hydra.DefaultSubject)
	}
	_, claims, err := hydra.Decode(tok.AccessToken)
	if err != nil {
		t.Fatalf("access token: %v", err)
	}
	if aud := hydra.ClaimStrings(claims["aud"]); !slices.Contains(aud, hydraResource) {
		t.Errorf("access token's aud %q lacks the resource %s", aud, hydraResource)
	}
	if claims["iss"] != hy.Issuer() {
		t.Errorf("access token's iss %v, want %s", claims["iss"], hy.Issuer())
	}
	if tok.Expiry.Before(before.Add(hydraTTL-time.Minute)) || tok.Expiry.After(time.Now().Add(hydraTTL+time.Second)) {
		t.Errorf("expiry %v, want about %v from now", tok.Expiry, hydraTTL)
	}
}

// invalidGrant checks that err is the authorization server's invalid_grant
// and says nothing of the tokens.
func invalidGrant(t *testing.T, what string, err error, secrets ...string) {
	t.Helper()
	var oe *Error
	if !errors.As(err, &oe) || oe.Code != "invalid_grant" || oe.Status != http.StatusBadRequest {
		t.Fatalf("%s: %v, want a 400 invalid_grant", what, err)
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(err.Error(), s) {
			t.Errorf("%s: the error holds a credential: %v", what, err)
		}
	}
	t.Logf("%s: %v", what, err)
}

// TestHydraUserGrant: discovery, dynamic registration of a public client,
// the authorization code flow with PKCE and resource, refresh with
// rotation, reuse of a rotated refresh token, revocation.
func TestHydraUserGrant(t *testing.T) {
	hy := hydra.Start(t, hydra.Options{DynamicClientRegistration: true, ResourceAudience: true, AccessTokenTTL: hydraTTL})
	ctx := hydraContext(t)

	ep, err := Discover(ctx, http.DefaultClient, hy.Issuer())
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	t.Logf("endpoints: %+v", ep)
	if ep.Issuer != hy.Issuer() || ep.Authorization != hy.AuthURL() || ep.Token != hy.TokenURL() ||
		ep.Revocation != hy.PublicURL()+"/oauth2/revoke" || ep.Registration != hy.PublicURL()+"/oauth2/register" {
		t.Errorf("endpoints %+v do not match Hydra's (public %s)", ep, hy.PublicURL())
	}
	if !slices.Contains(ep.CodeChallengeMethods, "S256") {
		t.Errorf("code challenge methods %q", ep.CodeChallengeMethods)
	}

	client, err := Register(ctx, http.DefaultClient, ep, ClientMetadata{ClientName: "mcp-hub test", RedirectURIs: []string{hydraRedirect}})
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	if client.ID == "" || client.Secret != "" {
		t.Fatalf("registered %q with a secret: %t, want a public client", client.ID, client.Secret != "")
	}
	// Hydra refreshes a grant only for an audience the client may request:
	// the consent step grants the resource as audience.
	hy.AllowAudience(t, client.ID, hydraResource)

	t.Run("rotation and revocation", func(t *testing.T) {
		ctx := hydraContext(t)
		tok := authorize(t, hy, ep, client)
		first, err := Refresh(ctx, http.DefaultClient, ep, client, tok.RefreshToken, hydraResource)
		if err != nil {
			t.Fatalf("first refresh: %v", err)
		}
		checkHydraToken(t, hy, first, time.Now().Add(-time.Second))
		if first.RefreshToken == tok.RefreshToken || first.AccessToken == tok.AccessToken {
			t.Fatal("Hydra did not rotate the refresh token (or reissued the access token)")
		}
		second, err := Refresh(ctx, http.DefaultClient, ep, client, first.RefreshToken, hydraResource)
		if err != nil {
			t.Fatalf("second refresh, with the new refresh token: %v", err)
		}
		if second.RefreshToken == first.RefreshToken {
			t.Fatal("Hydra did not rotate the refresh token on the second refresh")
		}
		if err := Revoke(ctx, http.DefaultClient, ep, client, second.RefreshToken, "refresh_token"); err != nil {
			t.Fatalf("Revoke: %v", err)
		}
		_, err = Refresh(ctx, http.DefaultClient, ep, client, second.RefreshToken, hydraResource)
		invalidGrant(t, "refresh with the revoked refresh token", err, second.RefreshToken)
		// RFC 7009 2.2: a token the server no longer knows is revoked all the same.
		if err := Revoke(ctx, http.DefaultClient, ep, client, second.RefreshToken, "refresh_token"); err != nil {
			t.Errorf("Revoke again: %v", err)
		}
	})

	// Hydra detects the reuse of a rotated refresh token, refuses it, and
	// (refresh token reuse detection) ends the whole grant: two replicas
	// refreshing one grant at once lose it. The caller must refresh one
	// grant once at a time.
	t.Run("reuse of a rotated refresh token", func(t *testing.T) {
		ctx := hydraContext(t)
		tok := authorize(t, hy, ep, client)
		next, err := Refresh(ctx, http.DefaultClient, ep, client, tok.RefreshToken, "")
		if err != nil {
			t.Fatalf("refresh: %v", err)
		}
		_, err = Refresh(ctx, http.DefaultClient, ep, client, tok.RefreshToken, "")
		invalidGrant(t, "refresh with the old refresh token", err, tok.RefreshToken)
		_, err = Refresh(ctx, http.DefaultClient, ep, client, next.RefreshToken, "")
		invalidGrant(t, "refresh with the new refresh token after the old one's reuse", err, next.RefreshToken)
	})

	t.Run("wrong verifier", func(t *testing.T) {
		ctx := hydraContext(t)
		req := Authorize(ep, client, hydraRedirect, "state-wrong-verifier", hydraScopes, hydraResource)
		code := hy.AuthorizationRedirect(t, req.URL, hydraRedirect).Query().Get("code")
		wrong := Authorize(ep, client, hydraRedirect, "x", nil, "").Verifier
		_, err := Exchange(ctx, http.DefaultClient, ep, client, hydraRedirect, code, wrong, hydraResource)
		invalidGrant(t, "exchange with another request's verifier", err, code, wrong, req.Verifier)
		// The code is spent: a second try with the right verifier fails too.
		_, err = Exchange(ctx, http.DefaultClient, ep, client, hydraRedirect, code, req.Verifier, hydraResource)
		invalidGrant(t, "exchange of a spent code", err, code, req.Verifier)
	})
}

// TestHydraConfidentialClient: a client made by an administrator, with a
// secret and client_secret_basic, through the same flow; the secret sent
// the wrong way (post) is refused as invalid_client, and the error holds
// no secret.
func TestHydraConfidentialClient(t *testing.T) {
	hy := hydra.Start(t, hydra.Options{ResourceAudience: true, AccessTokenTTL: hydraTTL})
	ctx := hydraContext(t)
	const secret = "hub-client-SECRET-0815-abcdef"
	made := hy.CreateClient(t, hydra.Client{
		ID:           "mcp-hub-confidential",
		Secret:       secret,
		GrantTypes:   []string{"authorization_code", "refresh_token"},
		Scopes:       hydraScopes,
		RedirectURIs: []string{hydraRedirect},
		Audience:     []string{hydraResource},
	})
	ep, err := Discover(ctx, http.DefaultClient, hy.Issuer())
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	client := Client{ID: made.ID, Secret: made.Secret}

	tok := authorize(t, hy, ep, client)
	next, err := Refresh(ctx, http.DefaultClient, ep, client, tok.RefreshToken, hydraResource)
	if err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	if next.RefreshToken == tok.RefreshToken {
		t.Error("Hydra did not rotate the refresh token")
	}

	post := client
	post.AuthStyle = "post"
	_, err = Refresh(ctx, http.DefaultClient, ep, post, next.RefreshToken, "")
	var oe *Error
	if !errors.As(err, &oe) || oe.Code != "invalid_client" {
		t.Fatalf("refresh with client_secret_post by a client_secret_basic client: %v, want invalid_client", err)
	}
	if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), next.RefreshToken) {
		t.Errorf("the error holds the secret or the token: %v", err)
	}
	t.Logf("post instead of basic: %v", err)

	wrong := client
	wrong.Secret = "not-the-SECRET-0000000000"
	err = Revoke(ctx, http.DefaultClient, ep, wrong, next.RefreshToken, "refresh_token")
	if !errors.As(err, &oe) || oe.Code != "invalid_client" || strings.Contains(err.Error(), wrong.Secret) {
		t.Fatalf("revoke with a wrong secret: %v, want invalid_client without the secret", err)
	}
	if err := Revoke(ctx, http.DefaultClient, ep, client, next.RefreshToken, "refresh_token"); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	_, err = Refresh(ctx, http.DefaultClient, ep, client, next.RefreshToken, "")
	invalidGrant(t, "refresh with the revoked refresh token", err, next.RefreshToken, secret)
}

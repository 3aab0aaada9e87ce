package usergrants

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/hubtest/idp"
)

// TestSignInRefreshRevokeAtZitadel is TestSignInRefreshRevokeAtHydra
// against a second authorization server, zitadel's OpenID provider
// (hack/idp): a public client (no secret, PKCE alone), access tokens of
// 3 s for an RFC 8707 resource, refresh tokens rotated on every use and
// the issuer in the authorization response (RFC 9207). No grant is a
// sign-in link; the link leads through the provider's login back to the
// hub, which keeps the grant; the caller's calls get tokens the resource
// verifies, refreshed before they expire; the link works once; a
// revocation drops the grant here and at the provider; a refresh token the
// provider revoked (invalid_grant) asks for a sign-in again.
func TestSignInRefreshRevokeAtZitadel(t *testing.T) {
	r := newRig(t)
	const (
		resource = "http://127.0.0.1:1/notes/mcp"
		subject  = "erin@example.test"
	)
	client := idp.Client{ID: "mcp-hub", SignIn: true, RedirectURIs: []string{r.pages + CallbackPath},
		Audiences: []string{resource}, AccessTokenTTL: 3 * time.Second}
	z := idp.Start(t, idp.Options{Clients: []idp.Client{client}, LoginSubject: subject})
	r.start(t, z.Issuer(), client.ID, resource)
	b, s, ctx := r.b, r.s, context.Background()
	signIn := func(user string) {
		t.Helper()
		r.signIn(t, user, subject, func(link string) *url.URL {
			back := z.AuthorizationRedirect(t, link, r.pages+CallbackPath)
			if back.Query().Get("iss") != z.Issuer() {
				t.Fatalf("the authorization response names issuer %q", back.Query().Get("iss"))
			}
			return back
		})
	}
	// refreshToken is the refresh token of user's grant, as kept sealed.
	refreshToken := func(user string) string {
		t.Helper()
		g, ok, err := b.load(ctx, grantKey("notes", user))
		if err != nil || !ok || g.RefreshToken == "" {
			t.Fatalf("%s's grant in the store: %v %v (refresh token kept: %v)", user, ok, err, g.RefreshToken != "")
		}
		return g.RefreshToken
	}
	// refreshAt uses rt at the provider as the hub's client.
	refreshAt := func(rt string) *idp.TokenResponse {
		t.Helper()
		resp, err := z.Token("", "", url.Values{"grant_type": {idp.GrantRefreshToken}, "refresh_token": {rt}, "client_id": {client.ID}})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	signIn("alice")
	first, sub, err := s.Token(ctx, "alice")
	if err != nil || first == "" || sub != subject {
		t.Fatalf("alice's token after her sign-in: %q %q %v", first, sub, err)
	}
	if got, err := z.Verify(first, resource); err != nil || got != subject {
		t.Fatalf("alice's first token at the resource: %q %v", got, err)
	}
	if _, _, err := s.Token(ctx, "bob"); signInLink(t, err) == "" {
		t.Fatal("bob got a token without signing in")
	}

	// Calls over three expiries: each gets a token the resource still
	// takes, refreshed ahead of its expiry with the rotated refresh token
	// (a spent one would end the grant at the provider).
	signedIn := refreshToken("alice")
	seen := map[string]bool{first: true}
	for end := time.Now().Add(8 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		tok, _, err := s.Token(ctx, "alice")
		if err != nil {
			t.Fatalf("alice's call: %v", err)
		}
		if got, err := z.Verify(tok, resource); err != nil || got != subject {
			t.Fatalf("alice's call got a token the resource refuses: %q %v", got, err)
		}
		seen[tok] = true
	}
	if len(seen) < 3 {
		t.Fatalf("%d tokens over 8 s of 3 s tokens: not refreshed", len(seen))
	}
	if _, refreshes := z.SignInStats(t); refreshes < 2 {
		t.Fatalf("%d refreshes at the provider", refreshes)
	}
	if refreshToken("alice") == signedIn {
		t.Fatal("the refresh token kept is the sign-in's, which a refresh spent")
	}
	conns, err := b.Connections(ctx, "alice")
	if err != nil || len(conns) != 1 || conns[0].Server != "notes" || conns[0].Subject != subject || !conns[0].Refreshable || conns[0].Issuer != z.Issuer() {
		t.Fatalf("alice's connections: %+v %v", conns, err)
	}

	// Revoked by its owner: gone here, and the refresh token is dead at
	// the provider.
	kept := refreshToken("alice")
	done, err := b.Revoke(ctx, "alice", "notes")
	if err != nil || !done.AtServer {
		t.Fatalf("revoke: %+v %v", done, err)
	}
	if _, _, err := s.Token(ctx, "alice"); signInLink(t, err) == "" {
		t.Fatal("a revoked grant still gives tokens")
	}
	if resp := refreshAt(kept); resp.Error != "invalid_grant" {
		t.Fatalf("the revoked grant's refresh token at the provider: %d %s", resp.Status, resp.Error)
	}

	// Revoked at the provider (RFC 7009, as the user's account page
	// would): the next refresh answers invalid_grant, and the caller
	// signs in again.
	signIn("alice")
	if status, e := z.Revoke(t, client.ID, "", refreshToken("alice"), "refresh_token"); status != http.StatusOK {
		t.Fatalf("revoke at the provider: %d %s", status, e)
	}
	time.Sleep(3 * time.Second)
	if _, _, err := s.Token(ctx, "alice"); signInLink(t, err) == "" {
		t.Fatal("a grant the provider revoked still gives tokens")
	}
	if conns, err := b.Connections(ctx, "alice"); err != nil || len(conns) != 0 {
		t.Fatalf("alice's connections after invalid_grant: %+v %v", conns, err)
	}
	signIn("alice") // and signing in again works
	if tok, _, err := s.Token(ctx, "alice"); err != nil || tok == "" {
		t.Fatalf("alice's token after signing in again: %v", err)
	}
}

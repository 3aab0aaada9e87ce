package usergrants

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/hubtest/hydra"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/upstream/calltoken"
	"github.com/purko-io/mcp-hub/internal/usergrants/store"
)

// newKeyring is a fresh sealing key.
func newKeyring(t *testing.T) *store.Keyring {
	t.Helper()
	var k [32]byte
	_, _ = rand.Read(k[:])
	keys, err := store.NewKeyring([]byte(base64.StdEncoding.EncodeToString(k[:])))
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// signInLink is the sign-in URL of a -32042 error, failing t for any other.
func signInLink(t *testing.T, err error) string {
	t.Helper()
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != mcp.URL_ELICITATION_REQUIRED {
		t.Fatalf("want a URL elicitation required error, got %v", err)
	}
	var data mcp.URLElicitationRequiredError
	if err := json.Unmarshal(rpc.Data, &data); err != nil || len(data.Elicitations) != 1 {
		t.Fatalf("elicitations of %s: %v", rpc.Data, err)
	}
	e := data.Elicitations[0]
	if e.Mode != mcp.ElicitationModeURL || e.ElicitationID == "" || !strings.Contains(e.URL, ConnectPath) {
		t.Fatalf("elicitation %+v is not a sign-in link", e)
	}
	return e.URL
}

// get fetches u as a browser that follows no redirect.
func get(t *testing.T, u string) (int, string) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// rig is a broker whose sign-in pages are served on loopback, for one
// server, notes, of resource, whose users sign in at an authorization
// server.
type rig struct {
	pages string // the pages' base URL: the redirect URI is pages + CallbackPath
	mux   *http.ServeMux
	b     *Broker
	s     calltoken.Grants
}

// newRig serves the pages; start adds the server (once the caller made
// its client there, for the pages' redirect URI).
func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{mux: http.NewServeMux()}
	pages := httptest.NewServer(r.mux)
	t.Cleanup(pages.Close)
	r.pages = pages.URL
	return r
}

// start makes the broker and its server notes of resource, whose users
// sign in at issuer as clientID.
func (r *rig) start(t *testing.T, issuer, clientID, resource string) {
	t.Helper()
	b, err := New(Options{Store: store.File(filepath.Join(t.TempDir(), "grants.sealed")), Keys: newKeyring(t),
		PublicURL: r.pages, Replica: "r1", Log: zerolog.New(zerolog.NewTestWriter(t))})
	if err != nil {
		t.Fatal(err)
	}
	r.mux.Handle("/", b.Handler())
	r.b = b
	r.s = b.For(config.ServerSpec{Name: "notes", URL: resource, Transport: config.TransportStreamableHTTP,
		UserOAuth: &config.UserOAuth{Issuer: issuer, ClientID: clientID, Scopes: []string{"openid", "offline_access"}}})
}

// signIn signs user in as subject through the link of a call without a
// grant, follow playing the browser at the authorization server; the
// link is the caller's, unreadable, and works once.
func (r *rig) signIn(t *testing.T, user, subject string, follow func(link string) *url.URL) {
	t.Helper()
	_, _, err := r.s.Token(context.Background(), user)
	link := signInLink(t, err)
	if strings.Contains(link, user) {
		t.Fatalf("the link %s shows who it is for", link)
	}
	back := follow(link)
	if code, body := get(t, back.String()); code != http.StatusOK || !strings.Contains(body, "signed in to notes as "+subject) {
		t.Fatalf("callback: %d %s", code, body)
	}
	if code, body := get(t, link); code != http.StatusConflict || !strings.Contains(body, "works once") {
		t.Fatalf("the link opened twice: %d %s", code, body)
	}
}

// TestSignInRefreshRevokeAtHydra is a caller's whole life with a server
// reached as its own account, against a real authorization server (Ory
// Hydra, access tokens of 3 s, refresh tokens rotated): no grant is a
// sign-in link; the link's page leads through Hydra's login and consent
// back to the hub, which keeps the grant; the caller's calls get its own
// token, refreshed before it expires for as long as it calls; another
// caller never gets it; the link works once; a revocation drops the grant
// here and at Hydra; a grant Hydra no longer honours (invalid_grant) asks
// for a sign-in again.
func TestSignInRefreshRevokeAtHydra(t *testing.T) {
	h := hydra.Start(t, hydra.Options{ResourceAudience: true})
	r := newRig(t)
	const resource = "http://127.0.0.1:1/notes/mcp"
	client := h.CreateClient(t, hydra.Client{
		GrantTypes: []string{"authorization_code", "refresh_token"}, Scopes: []string{"openid", "offline_access"},
		Audience: []string{resource}, RedirectURIs: []string{r.pages + CallbackPath},
		TokenEndpointAuthMethod: "none", AccessTokenLifespan: 3 * time.Second,
	})
	r.start(t, h.Issuer(), client.ID, resource)
	b, s, ctx := r.b, r.s, context.Background()
	signIn := func(user string) {
		t.Helper()
		r.signIn(t, user, hydra.DefaultSubject, func(link string) *url.URL { return h.AuthorizationRedirect(t, link, r.pages+CallbackPath) })
	}
	signIn("alice")
	first, sub, err := s.Token(ctx, "alice")
	if err != nil || first == "" || sub != hydra.DefaultSubject {
		t.Fatalf("alice's token after her sign-in: %q %q %v", first, sub, err)
	}
	if _, _, err := s.Token(ctx, "bob"); signInLink(t, err) == "" {
		t.Fatal("bob got a token without signing in")
	}

	// Calls over three expiries: each gets a token Hydra still honours,
	// refreshed ahead of its expiry, with the rotated refresh token.
	seen := map[string]bool{first: true}
	for end := time.Now().Add(8 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		tok, _, err := s.Token(ctx, "alice")
		if err != nil {
			t.Fatalf("alice's call: %v", err)
		}
		if !activeAt(t, h, tok) {
			t.Fatal("alice's call got a token Hydra no longer honours")
		}
		seen[tok] = true
	}
	if len(seen) < 3 {
		t.Fatalf("%d tokens over 8 s of 3 s tokens: not refreshed", len(seen))
	}
	conns, err := b.Connections(ctx, "alice")
	if err != nil || len(conns) != 1 || conns[0].Server != "notes" || conns[0].Subject != hydra.DefaultSubject || !conns[0].Refreshable {
		t.Fatalf("alice's connections: %+v %v", conns, err)
	}
	if raw, _ := json.Marshal(conns); strings.Contains(string(raw), first) {
		t.Fatal("a listing holds a token")
	}

	// Revoked by its owner: gone here, and the refresh token is dead at
	// Hydra.
	last, _, _ := s.Token(ctx, "alice")
	done, err := b.Revoke(ctx, "alice", "notes")
	if err != nil || !done.AtServer {
		t.Fatalf("revoke: %+v %v", done, err)
	}
	if _, _, err := s.Token(ctx, "alice"); signInLink(t, err) == "" {
		t.Fatal("a revoked grant still gives tokens")
	}
	if activeAt(t, h, last) {
		t.Error("Hydra still honours the revoked grant's access token")
	}

	// Withdrawn at Hydra (the user's consent revoked there): the next
	// refresh answers invalid_grant, and the caller signs in again.
	signIn("alice")
	revokeConsent(t, h, hydra.DefaultSubject)
	time.Sleep(3 * time.Second)
	if _, _, err := s.Token(ctx, "alice"); signInLink(t, err) == "" {
		t.Fatal("a grant Hydra withdrew still gives tokens")
	}
}

// activeAt asks Hydra's introspection whether tok is active.
func activeAt(t *testing.T, h *hydra.Server, tok string) bool {
	t.Helper()
	resp, err := http.PostForm(h.AdminURL()+"/admin/oauth2/introspect", map[string][]string{"token": {tok}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Active bool }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out.Active
}

// revokeConsent withdraws every consent subject gave at Hydra, and the
// tokens issued under them.
func revokeConsent(t *testing.T, h *hydra.Server, subject string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, h.AdminURL()+"/admin/oauth2/auth/sessions/consent?all=true&subject="+subject, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("revoke consent: %s", resp.Status)
	}
}

package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/oauth/oauthtest"
)

const resource = "https://hub.example.com/mcp"

func newVerifier(t *testing.T, opts Options) *Verifier {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if opts.Resource == "" {
		opts.Resource = resource
	}
	v, err := New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVerify(t *testing.T) {
	ti := oauthtest.New(t, "", "/.well-known/openid-configuration")
	ti.AddKey("k1", false)
	ti.AddKey("r1", true)
	other := oauthtest.New(t, "", "/.well-known/oauth-authorization-server")
	other.AddKey("k1", false)
	v := newVerifier(t, Options{Issuers: []Issuer{{
		Issuer: ti.URL(),
		Rules: []Rule{
			{Claim: "groups", Value: "ops", MaxLevel: autonomy.Supervised, Tools: []string{"b", "a"}},
			{Claim: "realm.roles", Value: "readers", MaxLevel: autonomy.Restricted, Tools: []string{"c"}},
			{Claim: "groups", Value: "admins", MaxLevel: autonomy.Full, Admin: true},
		},
	}}})
	hour := time.Now().Add(time.Hour).Unix()
	cases := []struct {
		name   string
		token  string
		want   Grant
		status int
		reason string // part of the refusal's reason
	}{
		{name: "full scope", token: ti.Sign("k1", map[string]any{"sub": "alice", "aud": resource, "scope": "openid mcp:full"}),
			want: Grant{Ceiling: autonomy.Full}},
		{name: "scp list, RS256", token: ti.Sign("r1", map[string]any{"sub": "alice", "aud": []string{"x", resource}, "scp": []string{"mcp:restricted"}}),
			want: Grant{Ceiling: autonomy.Restricted}},
		{name: "highest scope wins", token: ti.Sign("k1", map[string]any{"sub": "alice", "aud": resource, "scope": "mcp:full mcp:restricted"}),
			want: Grant{Ceiling: autonomy.Full}},
		{name: "group rule with tools", token: ti.Sign("k1", map[string]any{"sub": "alice", "aud": resource, "groups": []string{"ops"}}),
			want: Grant{Ceiling: autonomy.Supervised, Tools: []string{"a", "b"}}},
		{name: "tool lists of two rules add up", token: ti.Sign("k1", map[string]any{"sub": "alice", "aud": resource, "groups": []string{"ops"}, "realm": map[string]any{"roles": []string{"readers"}}}),
			want: Grant{Ceiling: autonomy.Supervised, Tools: []string{"a", "b", "c"}}},
		{name: "a scope reaches every tool", token: ti.Sign("k1", map[string]any{"sub": "alice", "aud": resource, "groups": "ops", "scope": "mcp:restricted"}),
			want: Grant{Ceiling: autonomy.Supervised}},
		{name: "admin rule", token: ti.Sign("k1", map[string]any{"sub": "alice", "aud": resource, "groups": []string{"admins"}}),
			want: Grant{Ceiling: autonomy.Full, Admin: true}},
		{name: "no grant", token: ti.Sign("k1", map[string]any{"sub": "alice", "aud": resource, "scope": "openid"}),
			status: 403, reason: "grants no MCP access: ask for one of the scopes mcp:restricted, mcp:supervised, mcp:full"},
		{name: "wrong audience", token: ti.Sign("k1", map[string]any{"sub": "alice", "aud": "https://other.example.com/mcp", "scope": "mcp:full"}),
			status: 401, reason: `audience ["https://other.example.com/mcp"] does not name this hub (https://hub.example.com/mcp)`},
		{name: "no audience", token: ti.Sign("k1", map[string]any{"sub": "alice", "scope": "mcp:full"}),
			status: 401, reason: "does not name this hub"},
		{name: "expired", token: ti.Sign("k1", map[string]any{"sub": "alice", "aud": resource, "scope": "mcp:full", "exp": time.Now().Add(-time.Minute).Unix()}),
			status: 401, reason: "the token expired at"},
		{name: "not yet valid", token: ti.Sign("k1", map[string]any{"sub": "alice", "aud": resource, "scope": "mcp:full", "nbf": time.Now().Add(time.Minute).Unix()}),
			status: 401, reason: "not valid yet"},
		{name: "unknown issuer", token: other.Sign("k1", map[string]any{"sub": "alice", "aud": resource, "scope": "mcp:full"}),
			status: 401, reason: "issuer \"" + other.URL() + "\" is not trusted by this hub"},
		{name: "issuer's kid, other key", token: func() string {
			tok := other.Sign("k1", map[string]any{"sub": "alice", "aud": resource, "scope": "mcp:full", "exp": hour, "iss": ti.URL()})
			return tok
		}(), status: 401, reason: "signature does not verify"},
		{name: "no name claim", token: ti.Sign("k1", map[string]any{"aud": resource, "scope": "mcp:full"}),
			status: 401, reason: "no sub claim"},
		{name: "not a JWT", token: "hub-token-123", status: 401, reason: "not a JWT"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := v.Verify(context.Background(), tc.token)
			if tc.status != 0 {
				var oe *Error
				if !errors.As(err, &oe) || oe.Status != tc.status || !strings.Contains(oe.Reason, tc.reason) {
					t.Fatalf("Verify = %+v, %v; want status %d with %q", g, err, tc.status, tc.reason)
				}
				if strings.Contains(oe.Reason, tc.token) {
					t.Fatal("the reason holds the token")
				}
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			tc.want.Caller = strings.TrimPrefix(ti.Server.URL, "http://") + "/alice"
			tc.want.Issuer = ti.URL()
			g.Expiry = time.Time{}
			if !reflect.DeepEqual(g, tc.want) {
				t.Fatalf("Verify = %+v, want %+v", g, tc.want)
			}
		})
	}
}

func TestVerifyFollowsRotationAndWithdrawal(t *testing.T) {
	ti := oauthtest.New(t, "/tenant", "/.well-known/oauth-authorization-server/tenant")
	ti.AddKey("old", false)
	v := newVerifier(t, Options{Issuers: []Issuer{{Issuer: ti.URL(), NameClaim: "email"}}, JWKSRefresh: time.Second})
	claims := map[string]any{"email": "bob@example.com", "aud": resource, "scope": "mcp:supervised"}
	oldTok := ti.Sign("old", claims)
	if g, err := v.Verify(context.Background(), oldTok); err != nil || g.Ceiling != autonomy.Supervised {
		t.Fatalf("first token: %+v, %v", g, err)
	}
	// Rotation: a token with a kid the cache does not hold refreshes it.
	ti.AddKey("new", false)
	newTok := ti.Sign("new", claims)
	if _, err := v.Verify(context.Background(), newTok); err != nil {
		t.Fatalf("token of the rotated key: %v", err)
	}
	// A second rotation right after waits for its turn to refresh.
	ti.AddKey("newer", false)
	if _, err := v.Verify(context.Background(), ti.Sign("newer", claims)); err != nil {
		t.Fatalf("a second rotation within a second: %v", err)
	}
	// Made-up kids cost the issuer at most one fetch a second (beside the
	// periodic refresh, every second here).
	before, start := ti.Fetches(), time.Now()
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			kid := fmt.Sprintf("made-up-%d", i)
			ti.AddKey(kid, false)
			ti.Withdraw(kid) // signs, but is not published
			if _, err := v.Verify(context.Background(), ti.Sign(kid, claims)); err == nil || !strings.Contains(err.Error(), "does not publish") {
				t.Errorf("a token of an unpublished key: %v", err)
			}
		})
	}
	wg.Wait()
	if n, most := ti.Fetches()-before, int32(2*time.Since(start)/time.Second)+3; n > most {
		t.Fatalf("10 tokens with unknown kids made %d key set fetches in %s", n, time.Since(start))
	}
	// Withdrawal: the periodic refresh drops the old key.
	ti.Withdraw("old")
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := v.Verify(context.Background(), oldTok)
		if err != nil {
			if !strings.Contains(err.Error(), `signed with key "old", which `+ti.URL()+" does not publish") {
				t.Fatalf("withdrawn key: %v", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a withdrawn key is still accepted 10s after it left the key set")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := v.Verify(context.Background(), newTok); err != nil {
		t.Fatalf("the current key after the refresh: %v", err)
	}
}

func TestDiscoveryFailures(t *testing.T) {
	liar := oauthtest.New(t, "", "/.well-known/openid-configuration")
	liar.AddKey("k", false)
	liar.ClaimIssuer = "https://login.example.com"
	var errs atomic.Int32
	v := newVerifier(t, Options{Issuers: []Issuer{{Issuer: liar.URL()}}, OnError: func(string, error) { errs.Add(1) }})
	_, err := v.Verify(context.Background(), liar.Sign("k", map[string]any{"sub": "a", "aud": resource, "scope": "mcp:full"}))
	var oe *Error
	if !errors.As(err, &oe) || oe.Status != http.StatusServiceUnavailable || !strings.Contains(oe.Reason, `names issuer "https://login.example.com"; the two must be equal`) {
		t.Fatalf("metadata of another issuer: %v", err)
	}
	if v.Ready() {
		t.Fatal("Ready with an issuer that was never discovered")
	}
	deadline := time.Now().Add(5 * time.Second)
	for errs.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if errs.Load() == 0 {
		t.Fatal("the background discovery reported no error")
	}
}

func TestMetadataAndChallenge(t *testing.T) {
	v := newVerifier(t, Options{Issuers: []Issuer{{Issuer: "https://login.example.com"}}})
	md := v.Metadata()
	want := ProtectedResource{Resource: resource, AuthorizationServers: []string{"https://login.example.com"},
		ScopesSupported: []string{"mcp:restricted", "mcp:supervised", "mcp:full"}, BearerMethodsSupported: []string{"header"}, ResourceName: "mcp-hub"}
	if !reflect.DeepEqual(md, want) {
		t.Fatalf("Metadata = %+v", md)
	}
	if got := MetadataPaths(resource); !reflect.DeepEqual(got, []string{WellKnown + "/mcp", WellKnown}) {
		t.Fatalf("MetadataPaths = %v", got)
	}
	if got := MetadataPaths("https://hub.example.com"); !reflect.DeepEqual(got, []string{WellKnown}) {
		t.Fatalf("MetadataPaths of a bare origin = %v", got)
	}
	for _, tc := range []struct {
		err  *Error
		want string
	}{
		{nil, `Bearer resource_metadata="https://hub.example.com/.well-known/oauth-protected-resource/mcp"`},
		{invalid(`bad "quote" \ é`), `Bearer resource_metadata="https://hub.example.com/.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="bad 'quote' ' ?"`},
		{&Error{Status: 403, Code: "insufficient_scope", Reason: "no"}, `Bearer resource_metadata="https://hub.example.com/.well-known/oauth-protected-resource/mcp", error="insufficient_scope", error_description="no", scope="mcp:restricted mcp:supervised mcp:full"`},
	} {
		if got := v.Challenge(tc.err); got != tc.want {
			t.Errorf("Challenge(%v) =\n %s\nwant\n %s", tc.err, got, tc.want)
		}
	}
}

func TestMetadataURLs(t *testing.T) {
	got, _ := MetadataURLs("https://login.example.com/realms/a/")
	want := []string{
		"https://login.example.com/.well-known/oauth-authorization-server/realms/a",
		"https://login.example.com/.well-known/openid-configuration/realms/a",
		"https://login.example.com/realms/a/.well-known/openid-configuration",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("metadataURLs = %v", got)
	}
	if _, err := MetadataURLs("ftp://x"); err == nil {
		t.Fatal("an ftp issuer was accepted")
	}
}

// TestKeyReplacedUnderSameKid: a server that rotates its key but keeps
// the kid; the first token of the new key fetches the set again.
func TestKeyReplacedUnderSameKid(t *testing.T) {
	ti := oauthtest.New(t, "", "/.well-known/openid-configuration")
	ti.AddKey("k", false)
	v := newVerifier(t, Options{Issuers: []Issuer{{Issuer: ti.URL()}}})
	claims := map[string]any{"sub": "a", "aud": resource, "scope": "mcp:full"}
	if _, err := v.Verify(context.Background(), ti.Sign("k", claims)); err != nil {
		t.Fatal(err)
	}
	ti.AddKey("k", false)
	if _, err := v.Verify(context.Background(), ti.Sign("k", claims)); err != nil {
		t.Fatalf("a token of the key that replaced the old one under its kid: %v", err)
	}
}

func TestCachedTokenExpires(t *testing.T) {
	ti := oauthtest.New(t, "", "/.well-known/openid-configuration")
	ti.AddKey("k", false)
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	v := newVerifier(t, Options{Issuers: []Issuer{{Issuer: ti.URL()}}, Now: func() time.Time { return time.Unix(0, now.Load()) }})
	tok := ti.Sign("k", map[string]any{"sub": "a", "aud": resource, "scope": "mcp:full", "exp": time.Now().Add(time.Minute).Unix()})
	for range 2 { // the second check is a cache hit
		if _, err := v.Verify(context.Background(), tok); err != nil {
			t.Fatal(err)
		}
	}
	now.Add(int64(2 * time.Minute))
	if _, err := v.Verify(context.Background(), tok); err == nil || !strings.Contains(err.Error(), "the token expired at") {
		t.Fatalf("a cached token past its exp: %v", err)
	}
}

// BenchmarkVerify is the cost of one token check on the request path: the
// first check of a token (signature and claims) and a later one (a hit in
// the cache of verified tokens).
func BenchmarkVerify(b *testing.B) {
	for _, tc := range []struct {
		name        string
		rsaKey, hit bool
	}{{"ES256/first", false, false}, {"RS256/first", true, false}, {"RS256/cached", true, true}} {
		rsaKey := tc.rsaKey
		b.Run(tc.name, func(b *testing.B) {
			ti := oauthtest.New(b, "", "/.well-known/openid-configuration")
			ti.AddKey("k", rsaKey)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			v, err := New(ctx, Options{Resource: resource, Issuers: []Issuer{{Issuer: ti.URL()}}})
			if err != nil {
				b.Fatal(err)
			}
			tok := ti.Sign("k", map[string]any{"sub": "a", "aud": resource, "scope": "mcp:full"})
			if _, err := v.Verify(ctx, tok); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if !tc.hit {
					v.verified.Purge()
				}
				if _, err := v.Verify(ctx, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package hydra

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// audience is the resource the tokens are for: the hub's MCP endpoint.
const audience = "http://127.0.0.1:9/mcp"

// TestClientCredentials gets a real JWT access token with the client
// credentials grant, checks its claims and signature, gives a client a
// short lifespan, and rotates the signing key.
func TestClientCredentials(t *testing.T) {
	s := Start(t, Options{})

	var disc map[string]any
	getJSON(t, s.PublicURL()+"/.well-known/openid-configuration", &disc)
	if disc["issuer"] != s.Issuer() || !strings.HasPrefix(s.Issuer(), s.PublicURL()) {
		t.Fatalf("issuer %v, Issuer() %q, public %q", disc["issuer"], s.Issuer(), s.PublicURL())
	}
	if disc["jwks_uri"] != s.JWKSURL() {
		t.Errorf("jwks_uri %v, want %s", disc["jwks_uri"], s.JWKSURL())
	}
	resp, err := http.Get(s.PublicURL() + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	t.Logf("/.well-known/oauth-authorization-server: %s", resp.Status)

	c := s.CreateClient(t, Client{ID: "svc", Secret: "svc-secret-0123456789", Scopes: []string{"read", "write"}, Audience: []string{audience}})
	if c.ID != "svc" || c.Secret != "svc-secret-0123456789" {
		t.Fatalf("created client %+v", c)
	}
	tok := s.ClientCredentialsToken(t, c.ID, c.Secret, "read write", []string{audience})
	header, claims := decode(t, tok)
	t.Logf("header %v\nclaims %v", header, claims)
	if header["alg"] != "RS256" || header["kid"] != s.SigningKeyID(t) {
		t.Errorf("header %v, signing key %q", header, s.SigningKeyID(t))
	}
	verify(t, s, tok)
	if claims["iss"] != s.Issuer() {
		t.Errorf("iss %v, want %q", claims["iss"], s.Issuer())
	}
	if aud := ClaimStrings(claims["aud"]); !slices.Equal(aud, []string{audience}) {
		t.Errorf("aud %v, want [%s]", claims["aud"], audience)
	}
	if scp := ClaimStrings(claims["scp"]); !slices.Equal(scp, []string{"read", "write"}) {
		t.Errorf("scp %v, want [read write]", claims["scp"])
	}
	if claims["scope"] != "read write" {
		t.Errorf("scope %v, want %q", claims["scope"], "read write")
	}
	if claims["sub"] != "svc" || claims["client_id"] != "svc" {
		t.Errorf("sub %v, client_id %v, want svc", claims["sub"], claims["client_id"])
	}
	if life := lifetime(t, claims); life < 59*time.Minute || life > time.Hour {
		t.Errorf("lifetime %v, want 1h", life)
	}

	short := s.CreateClient(t, Client{Scopes: []string{"read"}, Audience: []string{audience}, AccessTokenLifespan: 2 * time.Second})
	if short.ID == "" || short.Secret == "" {
		t.Fatalf("generated client %+v", short)
	}
	_, claims = decode(t, s.ClientCredentialsToken(t, short.ID, short.Secret, "read", []string{audience}))
	// Hydra stamps iat and exp from two readings of the clock, each cut
	// to whole seconds: a second that turns between them makes 2s read 1s.
	if life := lifetime(t, claims); life != 2*time.Second && life != time.Second {
		t.Errorf("lifetime with a 2s lifespan: %v", life)
	}

	old := s.SigningKeyID(t)
	kid := s.RotateKey(t)
	header, _ = decode(t, s.ClientCredentialsToken(t, c.ID, c.Secret, "read", []string{audience}))
	if header["kid"] != kid || kid == old {
		t.Errorf("after rotation: kid %v, want the new %q (old %q)", header["kid"], kid, old)
	}
	if kids := s.JWKSKeyIDs(t); !slices.Contains(kids, old) || !slices.Contains(kids, kid) {
		t.Errorf("JWKS after rotation %v, want both %q and %q", kids, old, kid)
	}
	verify(t, s, tok) // the old key still verifies the old token
	s.DeleteKey(t, old)
	if kids := s.JWKSKeyIDs(t); slices.Contains(kids, old) || !slices.Contains(kids, kid) {
		t.Errorf("JWKS after deleting %q: %v", old, kids)
	}
}

// TestAuthorizationCodePKCE runs the flow the MCP SDK's client runs: a
// public client, PKCE (S256), RFC 8707's resource beside Hydra's audience,
// login and consent through Start's app, and the code exchange.
func TestAuthorizationCodePKCE(t *testing.T) {
	s := Start(t, Options{Subject: "bob@example.test", Groups: []string{"eng", "ops"}})
	const redirect = "http://127.0.0.1:9/callback" // never requested
	c := s.CreateClient(t, Client{
		ID:                      "mcp-client",
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		Scopes:                  []string{"openid", "offline_access", "mcp:tools"},
		Audience:                []string{audience},
		RedirectURIs:            []string{redirect},
		TokenEndpointAuthMethod: "none",
	})
	if c.Secret != "" {
		t.Fatalf("public client got a secret %q", c.Secret)
	}
	conf := &oauth2.Config{
		ClientID:    c.ID,
		Endpoint:    oauth2.Endpoint{AuthURL: s.AuthURL(), TokenURL: s.TokenURL(), AuthStyle: oauth2.AuthStyleInParams},
		RedirectURL: redirect,
		Scopes:      []string{"openid", "offline_access", "mcp:tools"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	for _, tc := range []struct {
		name     string
		params   []oauth2.AuthCodeOption
		wantAud  []string
		subject  string
		groups   []string
		wantGrps []any
	}{
		{name: "audience and resource", subject: "bob@example.test", params: []oauth2.AuthCodeOption{
			oauth2.SetAuthURLParam("audience", audience), oauth2.SetAuthURLParam("resource", audience),
		}, wantAud: []string{audience}, wantGrps: []any{"eng", "ops"}},
		// The SDK sends resource alone: Hydra ignores it, so the token has
		// no audience (aud is [] then).
		{name: "resource alone", subject: "carol@example.test", groups: []string{"admins"}, params: []oauth2.AuthCodeOption{
			oauth2.SetAuthURLParam("resource", audience),
		}, wantAud: nil, wantGrps: []any{"admins"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.groups != nil {
				s.SetUser(tc.subject, tc.groups)
			}
			verifier := oauth2.GenerateVerifier()
			opts := append([]oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}, tc.params...)
			code := s.FollowAuthorization(t, conf.AuthCodeURL("state-0123456789", opts...), redirect)
			tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", audience))
			if err != nil {
				t.Fatalf("exchange the code: %v", err)
			}
			if tok.RefreshToken == "" || tok.Extra("id_token") == nil {
				t.Errorf("token response lacks a refresh or ID token: %+v", tok)
			}
			header, claims := decode(t, tok.AccessToken)
			t.Logf("header %v\nclaims %v", header, claims)
			verify(t, s, tok.AccessToken)
			if claims["iss"] != s.Issuer() || claims["sub"] != tc.subject || claims["client_id"] != c.ID {
				t.Errorf("iss %v sub %v client_id %v", claims["iss"], claims["sub"], claims["client_id"])
			}
			if aud := ClaimStrings(claims["aud"]); !slices.Equal(aud, tc.wantAud) {
				t.Errorf("aud %v, want %v", claims["aud"], tc.wantAud)
			}
			if scp := ClaimStrings(claims["scp"]); !slices.Equal(scp, conf.Scopes) {
				t.Errorf("scp %v, want %v", claims["scp"], conf.Scopes)
			}
			if g, _ := claims[GroupsClaim].([]any); !slices.Equal(g, tc.wantGrps) {
				t.Errorf("top-level groups %v, want %v", claims[GroupsClaim], tc.wantGrps)
			}
			if ext, _ := claims["ext"].(map[string]any); ext == nil || ext[GroupsClaim] == nil {
				t.Errorf("ext %v lacks groups", claims["ext"])
			}
		})
	}

	t.Run("resource as audience", func(t *testing.T) {
		// What an RFC 8707 server does with the SDK's resource, emulated by
		// the consent step: the token's audience is the resource.
		s := Start(t, Options{ResourceAudience: true})
		c := s.CreateClient(t, Client{
			GrantTypes:              []string{"authorization_code"},
			Scopes:                  []string{"mcp:tools"},
			Audience:                []string{audience},
			RedirectURIs:            []string{redirect},
			TokenEndpointAuthMethod: "none",
		})
		conf := &oauth2.Config{
			ClientID:    c.ID,
			Endpoint:    oauth2.Endpoint{AuthURL: s.AuthURL(), TokenURL: s.TokenURL(), AuthStyle: oauth2.AuthStyleInParams},
			RedirectURL: redirect,
			Scopes:      []string{"mcp:tools"},
		}
		verifier := oauth2.GenerateVerifier()
		code := s.FollowAuthorization(t, conf.AuthCodeURL("state-0123456789",
			oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", audience)), redirect)
		tok := s.ExchangeCode(t, c.ID, "", code, redirect, verifier, url.Values{"resource": {audience}})
		_, claims := decode(t, tok.AccessToken)
		if aud := ClaimStrings(claims["aud"]); !slices.Equal(aud, []string{audience}) || claims["sub"] != DefaultSubject {
			t.Errorf("aud %v sub %v, want [%s] %s", claims["aud"], claims["sub"], audience, DefaultSubject)
		}
	})

	t.Run("error", func(t *testing.T) {
		// A scope the client may not request: Hydra redirects back with an
		// error, which FollowAuthorization reports.
		_, err := s.followAuthorization(conf.AuthCodeURL("state-0123456789",
			oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), oauth2.SetAuthURLParam("scope", "admin")), redirect)
		if err == nil || !strings.Contains(err.Error(), "invalid_scope") {
			t.Errorf("err %v, want invalid_scope", err)
		}
	})
}

// TestDynamicClientRegistration registers a client the way the MCP SDK
// does when the server advertises a registration endpoint (RFC 7591).
func TestDynamicClientRegistration(t *testing.T) {
	s := Start(t, Options{DynamicClientRegistration: true})
	var disc struct {
		Registration string `json:"registration_endpoint"`
	}
	getJSON(t, s.PublicURL()+"/.well-known/openid-configuration", &disc)
	if disc.Registration != s.PublicURL()+"/oauth2/register" {
		t.Fatalf("registration_endpoint %q", disc.Registration)
	}
	body, _ := json.Marshal(map[string]any{
		"client_name":                "MCP client",
		"redirect_uris":              []string{"http://127.0.0.1:9/callback"},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
		"scope":                      "openid offline_access",
	})
	resp, err := http.Post(disc.Registration, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reg map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&reg); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusCreated || reg["client_id"] == "" {
		t.Fatalf("register: %s %v", resp.Status, reg)
	}
	t.Logf("registered %v", reg)
}

func decode(t *testing.T, tok string) (header, claims map[string]any) {
	t.Helper()
	header, claims, err := Decode(tok)
	if err != nil {
		t.Fatalf("%v: %q", err, tok)
	}
	return header, claims
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

// verify checks tok's RS256 signature against the key of its kid in the
// public JWKS: the one check a resource server makes first.
func verify(t *testing.T, s *Server, tok string) {
	t.Helper()
	header, _ := decode(t, tok)
	var set struct {
		Keys []struct{ Kid, Kty, N, E string } `json:"keys"`
	}
	getJSON(t, s.JWKSURL(), &set)
	for _, k := range set.Keys {
		if k.Kid != header["kid"] {
			continue
		}
		n, err1 := base64.RawURLEncoding.DecodeString(k.N)
		e, err2 := base64.RawURLEncoding.DecodeString(k.E)
		if k.Kty != "RSA" || err1 != nil || err2 != nil {
			t.Fatalf("JWKS key %q: kty %s, %v, %v", k.Kid, k.Kty, err1, err2)
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		i := strings.LastIndexByte(tok, '.')
		sig, err := base64.RawURLEncoding.DecodeString(tok[i+1:])
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(tok[:i]))
		if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig); err != nil {
			t.Fatalf("signature with key %q: %v", k.Kid, err)
		}
		return
	}
	t.Fatalf("kid %v is not in the JWKS", header["kid"])
}

func getJSON(t *testing.T, u string, out any) {
	t.Helper()
	if _, err := url.Parse(u); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

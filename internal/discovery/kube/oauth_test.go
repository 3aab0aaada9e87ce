package kube

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/config"
)

// secretKeys is a fake Secret cache by key: "ns/name" -> key -> value.
func secretKeys(m map[string]map[string]string) secretToken {
	return func(ns, name, key string) (config.Secret, error) {
		data, ok := m[ns+"/"+name]
		if !ok {
			return "", fmt.Errorf("Secret %s/%s not found", ns, name)
		}
		v, ok := data[key]
		if !ok {
			return "", fmt.Errorf("Secret %s/%s has no key %q", ns, name, key)
		}
		return config.Secret(v), nil
	}
}

func TestFromMCPServerOAuth(t *testing.T) {
	secrets := secretKeys(map[string]map[string]string{
		"purko/remote-creds": {"client-secret": "cs-value", "other": "cs-other"},
	})
	const tokenURL = "https://login.example.com/oauth2/token"
	base := map[string]string{AnnotationOAuthTokenURL: tokenURL, AnnotationOAuthClientID: "mcp-hub"}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	ref := map[string]any{"secretRef": "remote-creds"}
	cases := []struct {
		name    string
		obj     map[string]any
		ann     map[string]string
		want    *config.OAuthClient // nil: no OAuth
		problem string
		err     string
	}{
		{name: "no oauth", obj: ref},
		{name: "defaults", obj: ref, ann: base,
			want: &config.OAuthClient{TokenURL: tokenURL, ClientID: "mcp-hub", ClientSecretValue: "cs-value"}},
		{name: "everything", obj: map[string]any{"secretRef": "remote-creds", "auth": "none"}, ann: with(map[string]string{
			AnnotationOAuthScopes: "mcp:full  read", AnnotationOAuthAudience: "https://mcp.example.com", AnnotationOAuthResource: "https://mcp.example.com/mcp",
			AnnotationOAuthAuthStyle: "post", AnnotationOAuthClientSecretKey: "other"}),
			want: &config.OAuthClient{TokenURL: tokenURL, ClientID: "mcp-hub", Scopes: []string{"mcp:full", "read"}, Audience: "https://mcp.example.com",
				Resource: "https://mcp.example.com/mcp", AuthStyle: config.OAuthAuthPost, ClientSecretValue: "cs-other"}},
		{name: "missing secret", obj: map[string]any{"secretRef": "nope"}, ann: base,
			want: &config.OAuthClient{TokenURL: tokenURL, ClientID: "mcp-hub"}, problem: "OAuth client secret from secretRef: Secret purko/nope not found"},
		{name: "missing key", obj: ref, ann: with(map[string]string{AnnotationOAuthClientSecretKey: "gone"}),
			want: &config.OAuthClient{TokenURL: tokenURL, ClientID: "mcp-hub"}, problem: `OAuth client secret from secretRef: Secret purko/remote-creds has no key "gone"`},
		{name: "no secretRef", obj: nil, ann: base,
			want: &config.OAuthClient{TokenURL: tokenURL, ClientID: "mcp-hub"}, problem: "OAuth needs a client secret, but no spec.secretRef names the Secret that holds it"},
		{name: "no client id", obj: ref, ann: map[string]string{AnnotationOAuthTokenURL: tokenURL},
			err: "annotation mcp-hub.purko.io/oauth-client-id: is required with mcp-hub.purko.io/oauth-token-url"},
		{name: "no token url", obj: ref, ann: map[string]string{AnnotationOAuthClientID: "mcp-hub"},
			err: "annotation mcp-hub.purko.io/oauth-token-url: is required with mcp-hub.purko.io/oauth-client-id"},
		{name: "with bearer", obj: map[string]any{"secretRef": "remote-creds", "auth": "bearer"}, ann: base,
			err: "annotation mcp-hub.purko.io/oauth-token-url: spec.auth is bearer; a static token and OAuth exclude each other (set spec.auth to none)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := fromMCPServer(mcpServer("remote", tc.obj, tc.ann), secrets)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Problem != tc.problem {
				t.Errorf("problem %q, want %q", s.Problem, tc.problem)
			}
			if tc.want == nil {
				if s.OAuth != nil {
					t.Fatalf("oauth %+v without annotations", s.OAuth)
				}
				return
			}
			if s.OAuth == nil {
				t.Fatal("no oauth")
			}
			got, want := *s.OAuth, *tc.want
			if got.ClientSecretValue != want.ClientSecretValue || strings.Join(got.Scopes, " ") != strings.Join(want.Scopes, " ") {
				t.Errorf("oauth secret/scopes = %q %q, want %q %q", got.ClientSecretValue.Reveal(), got.Scopes, want.ClientSecretValue.Reveal(), want.Scopes)
			}
			got.Scopes, want.Scopes = nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("oauth = %+v, want %+v", got, want)
			}
			if err := s.Normalize(); err != nil {
				t.Errorf("normalize: %v", err)
			}
		})
	}
}

func TestFromMCPServerUserOAuth(t *testing.T) {
	secrets := secretKeys(map[string]map[string]string{"purko/gh-app": {"user-secret": "us-value"}})
	ref := map[string]any{"secretRef": "gh-app"}
	cases := []struct {
		name    string
		obj     map[string]any
		ann     map[string]string
		want    *config.UserOAuth // nil: none
		problem string
		err     string
	}{
		{name: "none", obj: ref},
		{name: "discovered", obj: nil, ann: map[string]string{AnnotationUserOAuth: "true"}, want: &config.UserOAuth{}},
		{name: "everything", obj: ref, ann: map[string]string{AnnotationUserOAuth: "true",
			AnnotationUserOAuthAuthorizationURL: "https://github.com/login/oauth/authorize", AnnotationUserOAuthTokenURL: "https://github.com/login/oauth/access_token",
			AnnotationUserOAuthClientID: "Iv1.abc", AnnotationUserOAuthScopes: "repo  read:org", AnnotationUserOAuthClientSecretKey: "user-secret"},
			want: &config.UserOAuth{AuthorizationURL: "https://github.com/login/oauth/authorize", TokenURL: "https://github.com/login/oauth/access_token",
				ClientID: "Iv1.abc", Scopes: []string{"repo", "read:org"}, ClientSecretValue: "us-value"}},
		{name: "missing key", obj: ref, ann: map[string]string{AnnotationUserOAuth: "true", AnnotationUserOAuthClientID: "x", AnnotationUserOAuthClientSecretKey: "gone"},
			want: &config.UserOAuth{ClientID: "x"}, problem: `user OAuth client secret from secretRef: Secret purko/gh-app has no key "gone"`},
		{name: "settings without the switch", obj: ref, ann: map[string]string{AnnotationUserOAuthIssuer: "https://login.example.com"},
			err: `annotation mcp-hub.purko.io/user-oauth-issuer: is set, but mcp-hub.purko.io/user-oauth is not "true"`},
		{name: "bad switch", obj: ref, ann: map[string]string{AnnotationUserOAuth: "yes"},
			err: `annotation mcp-hub.purko.io/user-oauth: "yes" is not true or false`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := fromMCPServer(mcpServer("github", tc.obj, tc.ann), secrets)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Problem != tc.problem {
				t.Errorf("problem %q, want %q", s.Problem, tc.problem)
			}
			if !reflect.DeepEqual(s.UserOAuth, tc.want) {
				t.Fatalf("userOAuth = %+v, want %+v", s.UserOAuth, tc.want)
			}
			if tc.want != nil {
				if err := s.Normalize(); err != nil {
					t.Errorf("normalize: %v", err)
				}
			}
		})
	}
}

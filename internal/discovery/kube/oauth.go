package kube

import (
	"fmt"
	"strings"

	"github.com/purko-io/mcp-hub/internal/config"
)

// Annotations that make the hub an OAuth 2.0 client of an MCPServer's
// authorization server (client credentials; config.OAuthClient). The
// client secret comes from the server's Secret (spec.secretRef), key
// client-secret unless AnnotationOAuthClientSecretKey names another.
const (
	// AnnotationOAuthTokenURL is the token endpoint; setting it turns OAuth on.
	AnnotationOAuthTokenURL = annotationPrefix + "oauth-token-url"
	// AnnotationOAuthClientID is the hub's client id (required with OAuth).
	AnnotationOAuthClientID = annotationPrefix + "oauth-client-id"
	// AnnotationOAuthScopes are the scopes asked for, space-separated as
	// in OAuth's scope parameter.
	AnnotationOAuthScopes = annotationPrefix + "oauth-scopes"
	// AnnotationOAuthAudience is sent as the audience parameter.
	AnnotationOAuthAudience = annotationPrefix + "oauth-audience"
	// AnnotationOAuthResource is the RFC 8707 resource (default: the
	// server's URL).
	AnnotationOAuthResource = annotationPrefix + "oauth-resource"
	// AnnotationOAuthAuthStyle is basic (default) or post.
	AnnotationOAuthAuthStyle = annotationPrefix + "oauth-auth-style"
	// AnnotationOAuthClientSecretKey names the key of spec.secretRef's
	// Secret that holds the client secret (default client-secret).
	AnnotationOAuthClientSecretKey = annotationPrefix + "oauth-client-secret-key"
)

// defaultClientSecretKey is the Secret key of the OAuth client secret.
const defaultClientSecretKey = "client-secret"

// oauthOf reads the OAuth annotations of an MCPServer: nil without
// AnnotationOAuthTokenURL. A wrong combination of settings is an error (the
// object is ignored and logged); a missing Secret or key is the returned
// problem, so the server is listed as error with that reason. The values
// themselves are checked by ServerSpec.Normalize, as for every source.
func oauthOf(ann map[string]string, namespace, auth, secretRef string, token secretToken) (*config.OAuthClient, string, error) {
	tokenURL := ann[AnnotationOAuthTokenURL]
	if tokenURL == "" {
		for _, k := range []string{AnnotationOAuthClientID, AnnotationOAuthScopes, AnnotationOAuthAudience, AnnotationOAuthResource, AnnotationOAuthAuthStyle, AnnotationOAuthClientSecretKey} {
			if ann[k] != "" {
				return nil, "", fmt.Errorf("annotation %s: is required with %s", AnnotationOAuthTokenURL, k)
			}
		}
		return nil, "", nil
	}
	if strings.EqualFold(auth, "bearer") {
		return nil, "", fmt.Errorf("annotation %s: spec.auth is bearer; a static token and OAuth exclude each other (set spec.auth to none)", AnnotationOAuthTokenURL)
	}
	o := &config.OAuthClient{
		TokenURL:  tokenURL,
		ClientID:  ann[AnnotationOAuthClientID],
		Scopes:    strings.Fields(ann[AnnotationOAuthScopes]),
		Audience:  ann[AnnotationOAuthAudience],
		Resource:  ann[AnnotationOAuthResource],
		AuthStyle: config.OAuthAuthStyle(ann[AnnotationOAuthAuthStyle]),
	}
	if o.ClientID == "" {
		return nil, "", fmt.Errorf("annotation %s: is required with %s", AnnotationOAuthClientID, AnnotationOAuthTokenURL)
	}
	if secretRef == "" {
		return o, "OAuth needs a client secret, but no spec.secretRef names the Secret that holds it", nil
	}
	key := ann[AnnotationOAuthClientSecretKey]
	if key == "" {
		key = defaultClientSecretKey
	}
	secret, err := token(namespace, secretRef, key)
	if err != nil {
		return o, "OAuth client secret from secretRef: " + err.Error(), nil
	}
	o.ClientSecretValue = secret
	return o, "", nil
}

// Annotations that make the hub reach an MCPServer as each caller's own
// account at its authorization server (config.UserOAuth). Setting
// AnnotationUserOAuth to "true" turns it on; with nothing else the hub
// discovers the authorization server from the server's metadata. A
// confidential client's secret is the key AnnotationUserOAuthClientSecretKey
// names in spec.secretRef's Secret.
const (
	AnnotationUserOAuth                 = annotationPrefix + "user-oauth"
	AnnotationUserOAuthIssuer           = annotationPrefix + "user-oauth-issuer"
	AnnotationUserOAuthAuthorizationURL = annotationPrefix + "user-oauth-authorization-url"
	AnnotationUserOAuthTokenURL         = annotationPrefix + "user-oauth-token-url"
	AnnotationUserOAuthRevocationURL    = annotationPrefix + "user-oauth-revocation-url"
	AnnotationUserOAuthClientID         = annotationPrefix + "user-oauth-client-id"
	AnnotationUserOAuthScopes           = annotationPrefix + "user-oauth-scopes"
	AnnotationUserOAuthResource         = annotationPrefix + "user-oauth-resource"
	AnnotationUserOAuthClientSecretKey  = annotationPrefix + "user-oauth-client-secret-key"
)

// userOAuthOf reads the user OAuth annotations of an MCPServer: nil
// without AnnotationUserOAuth "true". Settings without it are an error (the
// object is ignored and logged); a missing Secret or key is the returned
// problem. Normalize checks the values, as for every source.
func userOAuthOf(ann map[string]string, namespace, secretRef string, token secretToken) (*config.UserOAuth, string, error) {
	keys := []string{AnnotationUserOAuthIssuer, AnnotationUserOAuthAuthorizationURL, AnnotationUserOAuthTokenURL, AnnotationUserOAuthRevocationURL,
		AnnotationUserOAuthClientID, AnnotationUserOAuthScopes, AnnotationUserOAuthResource, AnnotationUserOAuthClientSecretKey}
	switch v := ann[AnnotationUserOAuth]; v {
	case "true":
	case "", "false":
		for _, k := range keys {
			if ann[k] != "" {
				return nil, "", fmt.Errorf("annotation %s: is set, but %s is not \"true\"", k, AnnotationUserOAuth)
			}
		}
		return nil, "", nil
	default:
		return nil, "", fmt.Errorf("annotation %s: %q is not true or false", AnnotationUserOAuth, v)
	}
	u := &config.UserOAuth{
		Issuer: ann[AnnotationUserOAuthIssuer], AuthorizationURL: ann[AnnotationUserOAuthAuthorizationURL],
		TokenURL: ann[AnnotationUserOAuthTokenURL], RevocationURL: ann[AnnotationUserOAuthRevocationURL],
		ClientID: ann[AnnotationUserOAuthClientID], Resource: ann[AnnotationUserOAuthResource],
	}
	if scopes := strings.Fields(ann[AnnotationUserOAuthScopes]); len(scopes) > 0 {
		u.Scopes = scopes
	}
	key := ann[AnnotationUserOAuthClientSecretKey]
	if key == "" {
		return u, "", nil
	}
	if secretRef == "" {
		return u, "user OAuth needs its client secret, but no spec.secretRef names the Secret that holds it", nil
	}
	secret, err := token(namespace, secretRef, key)
	if err != nil {
		return u, "user OAuth client secret from secretRef: " + err.Error(), nil
	}
	u.ClientSecretValue = secret
	return u, "", nil
}

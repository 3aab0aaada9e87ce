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

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Trusted issuers are the other token services whose JWTs this one takes
// as subject tokens of an exchange: a Kubernetes cluster's service-account
// issuer, above all, so that a pod's projected token (sub
// system:serviceaccount:NS:NAME) can be traded for a token of this service
// for an upstream, as a real security token service federating a cluster
// would. Each is verified like our own tokens (signature, iss, exp), with
// the keys of its JWKS document, read from a file once at start: the tests
// fetch the cluster's JWKS (which needs the cluster's credentials) and
// write it there, and a test cluster does not rotate its keys.

// trustedAlgs are the signature algorithms a trusted issuer's token may
// use: what clusters and common identity providers sign with. "none" and
// HMAC are never among them, so a token cannot sign itself.
var trustedAlgs = []string{string(jose.RS256), string(jose.ES256), string(jose.PS256)}

// newTrustedVerifiers reads the JWKS of each trusted issuer and returns a
// verifier per issuer. A key must be public and for signatures; an issuer
// without one is an error, as is an issuer named twice (which keys would
// count?).
func newTrustedVerifiers(issuers []TrustedIssuerConfig) (map[string]*op.AccessTokenVerifier, error) {
	out := make(map[string]*op.AccessTokenVerifier, len(issuers))
	for i, ti := range issuers {
		if ti.Issuer == "" || ti.JWKSFile == "" {
			return nil, fmt.Errorf("config: trusted issuer %d needs an issuer and a jwksFile", i)
		}
		if _, dup := out[ti.Issuer]; dup {
			return nil, fmt.Errorf("config: trusted issuer %q twice", ti.Issuer)
		}
		keys, err := readJWKS(ti.JWKSFile)
		if err != nil {
			return nil, fmt.Errorf("config: trusted issuer %q: %w", ti.Issuer, err)
		}
		out[ti.Issuer] = op.NewAccessTokenVerifier(ti.Issuer, keys,
			op.WithSupportedAccessTokenSigningAlgorithms(trustedAlgs...))
	}
	return out, nil
}

// readJWKS reads a JWKS document (RFC 7517 section 5) of public signing
// keys.
func readJWKS(path string) (staticKeySet, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the JWKS: %w", err)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, fmt.Errorf("parse the JWKS %s: %w", path, err)
	}
	if len(set.Keys) == 0 {
		return nil, fmt.Errorf("the JWKS %s has no keys", path)
	}
	for _, k := range set.Keys {
		if !k.IsPublic() || !k.Valid() {
			return nil, fmt.Errorf("the JWKS %s: key %q is not a valid public key", path, k.KeyID)
		}
		if k.Use != "" && k.Use != oidc.KeyUseSignature {
			return nil, fmt.Errorf("the JWKS %s: key %q is for %q, not signatures", path, k.KeyID, k.Use)
		}
	}
	return set.Keys, nil
}

// staticKeySet is an oidc.KeySet of fixed keys: zitadel's own verify
// signatures with the provider's keys or fetch a remote JWKS.
type staticKeySet []jose.JSONWebKey

// VerifySignature picks the key by the token's kid and alg (a key of
// another type than the alg's is never tried) and verifies with it.
func (ks staticKeySet) VerifySignature(_ context.Context, jws *jose.JSONWebSignature) ([]byte, error) {
	kid, alg := oidc.GetKeyIDAndAlg(jws)
	key, err := oidc.FindMatchingKey(kid, oidc.KeyUseSignature, alg, ks...)
	if err != nil {
		return nil, fmt.Errorf("no key of the trusted issuer for kid %q, alg %s: %w", kid, alg, err)
	}
	return jws.Verify(&key)
}

// unverifiedIssuer is the iss claim of a JWT, read without checking
// anything, to choose the verifier: the verifier then checks iss itself,
// with the signature. "" for anything that is not a JWT.
func unverifiedIssuer(token string) string {
	var c struct {
		Issuer string `json:"iss"`
	}
	if _, err := oidc.ParseToken(token, &c); err != nil {
		return ""
	}
	return c.Issuer
}

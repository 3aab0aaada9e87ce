// Package oauthtest is an authorization server for tests: metadata, a key
// set on loopback and keys to sign access tokens with, so tests of the
// hub's resource server need no real one (test/oauth uses a real one).
package oauthtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"
)

// Issuer is an authorization server on loopback: metadata at one of
// the discovery paths, a key set, and keys to sign tokens with.
type Issuer struct {
	t       testing.TB
	Server  *httptest.Server
	path    string // the issuer URL's path
	mu      sync.Mutex
	private map[string]jwk.Key
	public  []string // kids published, in order
	fetches atomic.Int32
	// ClaimIssuer, when set, is what the metadata calls the issuer.
	ClaimIssuer string
}

func New(t testing.TB, path, metadataAt string) *Issuer {
	ti := &Issuer{t: t, path: path, private: map[string]jwk.Key{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+metadataAt, func(w http.ResponseWriter, r *http.Request) {
		iss := ti.URL()
		if ti.ClaimIssuer != "" {
			iss = ti.ClaimIssuer
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": iss, "jwks_uri": ti.Server.URL + "/keys"})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		ti.fetches.Add(1)
		ti.mu.Lock()
		defer ti.mu.Unlock()
		set := jwk.NewSet()
		for _, kid := range ti.public {
			pub, err := ti.private[kid].PublicKey()
			if err != nil {
				t.Errorf("public key: %v", err)
			}
			_ = set.AddKey(pub)
		}
		_ = json.NewEncoder(w).Encode(set)
	})
	ti.Server = httptest.NewServer(mux)
	t.Cleanup(ti.Server.Close)
	return ti
}

// URL is the issuer identifier.
func (ti *Issuer) URL() string { return ti.Server.URL + ti.path }

// AddKey makes a new signing key and publishes it; for a kid it has
// already, the new key replaces the old one under the same kid (servers
// that reuse kids when they rotate).
func (ti *Issuer) AddKey(kid string, rsaKey bool) {
	var raw any
	var err error
	var alg jwa.SignatureAlgorithm
	if rsaKey {
		raw, err = rsa.GenerateKey(rand.Reader, 2048)
		alg = jwa.RS256()
	} else {
		raw, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		alg = jwa.ES256()
	}
	if err != nil {
		ti.t.Fatal(err)
	}
	k, err := jwk.Import(raw)
	if err != nil {
		ti.t.Fatal(err)
	}
	_ = k.Set(jwk.KeyIDKey, kid)
	_ = k.Set(jwk.AlgorithmKey, alg)
	ti.mu.Lock()
	defer ti.mu.Unlock()
	if _, had := ti.private[kid]; !had {
		ti.public = append(ti.public, kid)
	}
	ti.private[kid] = k
}

// Withdraw stops publishing kid (it can still sign: a leaked key).
func (ti *Issuer) Withdraw(kid string) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	for i, k := range ti.public {
		if k == kid {
			ti.public = append(ti.public[:i], ti.public[i+1:]...)
		}
	}
}

// Sign returns a token with claims (iss defaults to the issuer, exp to an
// hour from now).
func (ti *Issuer) Sign(kid string, claims map[string]any) string {
	ti.mu.Lock()
	k := ti.private[kid]
	ti.mu.Unlock()
	b := jwt.NewBuilder().Issuer(ti.URL()).Expiration(time.Now().Add(time.Hour))
	for name, v := range claims {
		b = b.Claim(name, v)
	}
	tok, err := b.Build()
	if err != nil {
		ti.t.Fatal(err)
	}
	alg, _ := k.Algorithm()
	signed, err := jwt.Sign(tok, jwt.WithKey(alg, k))
	if err != nil {
		ti.t.Fatal(err)
	}
	return string(signed)
}

// Fetches counts the key set's fetches.
func (ti *Issuer) Fetches() int32 { return ti.fetches.Load() }

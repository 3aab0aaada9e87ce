// Package usergrants keeps each caller's own grants at the authorization
// servers of servers reached as each caller's own account
// (servers[].userOAuth): GitHub's, Atlassian's, Linear's MCP servers,
// which trust no identity provider of the hub's. A caller without a grant
// is given a sign-in link (a URL elicitation); the link's page sends the
// browser to the authorization server (authorization code with PKCE),
// whose callback at the hub stores the grant for that caller; later calls
// carry that caller's access token only, refreshed before it expires.
//
// There is no token store to run: grants are sealed (AES-256-GCM, package
// store) into the state directory on a laptop, or into one Kubernetes
// Secret the hub owns in a cluster, which every replica reads. A refresh
// happens once per grant across the fleet: a replica claims the grant by a
// conditional write before it refreshes, and the others wait for the
// result, since an authorization server that rotates refresh tokens
// revokes the whole grant when an old one is used twice.
//
// Nothing here logs, returns or lists a token, a code or a verifier.
package usergrants

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/singleflight"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/upstream/calltoken"
	"github.com/purko-io/mcp-hub/internal/upstream/useroauth"
	"github.com/purko-io/mcp-hub/internal/usergrants/store"
)

// Paths the broker serves (Handler), under the hub's public URL.
const (
	// ConnectPath + a sealed link: the sign-in page of one caller and
	// server, which redirects to the authorization server.
	ConnectPath = "/oauth/connect/"
	// CallbackPath is the redirect URI authorization servers send
	// browsers back to.
	CallbackPath = "/oauth/callback"
	// ClientMetadataPath is the hub's Client ID Metadata Document, the
	// client_id at authorization servers that take one.
	ClientMetadataPath = "/oauth/client-metadata.json"
)

// How long things last.
const (
	// claimFor is how long a replica's claim to refresh a grant holds: far
	// longer than a refresh takes, so that no second replica spends the
	// same refresh token, short enough that a replica that died while
	// refreshing holds nobody up for long.
	claimFor = 30 * time.Second
	// cacheFor is how long a replica uses a grant it read without reading
	// it again: a grant revoked on another replica stops being used
	// within it.
	cacheFor = 5 * time.Second
	// pollEvery is how often a replica waiting for another's refresh, or
	// for a sign-in, reads the store again.
	pollEvery = 250 * time.Millisecond
	// maxEarly is the most a token is refreshed before it expires; a
	// short-lived one is refreshed at four fifths of its life.
	maxEarly = 60 * time.Second
	// stateFor is how long a sign-in may take at the authorization server.
	stateFor = 15 * time.Minute
)

// Options configure a Broker.
type Options struct {
	// Store keeps the sealed records; Keys seal them.
	Store store.Store
	Keys  *store.Keyring
	// PublicURL is the hub as browsers reach it, no trailing slash: the
	// base of sign-in links and of the redirect URI.
	PublicURL string
	// LinkTTL is how long a sign-in link may be opened.
	LinkTTL time.Duration
	// HTTPClient reaches authorization servers and the servers' metadata;
	// it must bound each request and refuse redirects to another origin.
	HTTPClient *http.Client
	// Replica names this replica in refresh claims (a pod name); a random
	// suffix makes it this process's own.
	Replica string
	// Log gets what happened to grants (never a token).
	Log zerolog.Logger
	// Now is the clock (nil: time.Now); tests move it.
	Now func() time.Time
}

// Broker keeps the grants of every server with userOAuth.
type Broker struct {
	opts   Options
	public atomic.Pointer[string] // PublicURL, or the listener's (DefaultPublicURL)

	mu      sync.Mutex
	servers map[string]*Server // by server name
	cache   grantCache

	flight singleflight.Group // one refresh (and one registration) at a time per key
}

// New returns a Broker.
func New(opts Options) (*Broker, error) {
	if opts.Store == nil || opts.Keys == nil {
		return nil, errors.New("user grants: a store and a sealing key are required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.LinkTTL <= 0 {
		opts.LinkTTL = config.DefaultLinkTTL
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 15 * time.Second}
	}
	// A claim names this process: replicas may share a host name or an
	// instance id, and a claim they shared would be no claim.
	opts.Replica += "#" + randomID()[:12]
	b := &Broker{opts: opts, servers: map[string]*Server{}, cache: newGrantCache(opts.Now)}
	u := strings.TrimSuffix(opts.PublicURL, "/")
	b.public.Store(&u)
	return b, nil
}

// DefaultPublicURL is where browsers reach the hub when Options named no
// PublicURL: the address it listens on, known once it listens.
func (b *Broker) DefaultPublicURL(u string) {
	u = strings.TrimSuffix(u, "/")
	if cur := b.public.Load(); *cur == "" {
		b.public.CompareAndSwap(cur, &u)
	}
}

// publicURL is the base of sign-in links and the redirect URI.
func (b *Broker) publicURL() string { return *b.public.Load() }

// Where names the store grants are kept in, for the hub's start line.
func (b *Broker) Where() string { return b.opts.Store.Where() }

// For returns the grants of spec's server (its settings as given now):
// what its upstream client asks for each call's token.
func (b *Broker) For(spec config.ServerSpec) calltoken.Grants {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.servers[spec.Name]
	if s == nil || !s.spec.Equal(spec) {
		s = &Server{b: b, name: spec.Name, spec: spec}
		b.servers[spec.Name] = s
	}
	return s
}

// server is the Server of name, nil when no server has userOAuth by it.
func (b *Broker) server(name string) *Server {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.servers[name]
}

// Grant is one caller's sign-in at one server's authorization server, as
// sealed in the store.
type Grant struct {
	User         string    `json:"user"`
	Server       string    `json:"server"`
	Issuer       string    `json:"issuer"`
	Subject      string    `json:"subject,omitempty"`
	Scopes       []string  `json:"scopes,omitempty"`
	AccessToken  string    `json:"accessToken"`
	RefreshToken string    `json:"refreshToken,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	Created      time.Time `json:"created"`
	Refreshed    time.Time `json:"refreshed"`
	// ClaimedBy refreshes the grant until ClaimUntil: nobody else does.
	ClaimedBy  string    `json:"claimedBy,omitempty"`
	ClaimUntil time.Time `json:"claimUntil,omitzero"`
}

// grantKey is the record key of user's grant at server: a digest, so the
// store's keys say nothing of who signed in where.
func grantKey(server, user string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + user))
	return "g-" + hex.EncodeToString(sum[:24])
}

// fresh says whether g's access token is good for a call now: not within
// the last fifth of its life (at most maxEarly) of its expiry.
func fresh(g Grant, now time.Time) bool {
	if g.Expiry.IsZero() {
		return true
	}
	early := g.Expiry.Sub(g.Refreshed) / 5
	if early > maxEarly || early < 0 {
		early = maxEarly
	}
	return now.Before(g.Expiry.Add(-early))
}

// open reads the grant sealed under key in recs; ok false when none.
func (b *Broker) open(recs map[string][]byte, key string) (Grant, bool, error) {
	raw, ok := recs[key]
	if !ok {
		return Grant{}, false, nil
	}
	plain, err := b.opts.Keys.Open(raw, []byte(key))
	if err != nil {
		return Grant{}, false, fmt.Errorf("opening grant record %s in %s: %w", key, b.opts.Store.Where(), err)
	}
	var g Grant
	if err := json.Unmarshal(plain, &g); err != nil {
		return Grant{}, false, fmt.Errorf("reading grant record %s in %s: %w", key, b.opts.Store.Where(), err)
	}
	return g, true, nil
}

// seal puts g sealed under key into recs.
func (b *Broker) seal(recs map[string][]byte, key string, g Grant) error {
	plain, err := json.Marshal(g)
	if err != nil {
		return err
	}
	sealed, err := b.opts.Keys.Seal(plain, []byte(key))
	if err != nil {
		return fmt.Errorf("sealing a grant: %w", err)
	}
	recs[key] = sealed
	return nil
}

// load reads the grant of key from the store (not the cache) and caches it.
func (b *Broker) load(ctx context.Context, key string) (Grant, bool, error) {
	recs, err := b.opts.Store.Load(ctx)
	if err != nil {
		return Grant{}, false, fmt.Errorf("reading grants from %s: %w", b.opts.Store.Where(), err)
	}
	g, ok, err := b.open(recs, key)
	if err != nil || !ok {
		b.cache.forget(key)
		return Grant{}, ok, err
	}
	b.cache.remember(key, g)
	return g, true, nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// mayHold says whether user may hold grants: an authenticated caller, or
// the anonymous user of a hub on loopback (a laptop); anonymous callers
// from elsewhere share nothing that could hold an account.
func mayHold(user string) error {
	if user == "" {
		return errors.New("the call carries no caller: a server reached as each caller's own account is called through the pipeline")
	}
	addr, ok := strings.CutPrefix(user, "anonymous@")
	if !ok {
		return nil
	}
	if ip, err := netip.ParseAddr(addr); err == nil && ip.IsLoopback() {
		return nil
	}
	return errors.New("this server is reached as each caller's own account, and anonymous callers have none: call the hub with a token or an OAuth sign-in")
}

// oauthError is err's OAuth error code at an authorization server, "" when
// none.
func oauthError(err error) string {
	var e *useroauth.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

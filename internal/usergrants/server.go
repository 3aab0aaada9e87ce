package usergrants

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/upstream/useroauth"
	"github.com/purko-io/mcp-hub/internal/usergrants/store"
)

// Server is the grants of one server with userOAuth: what its upstream
// client asks for each call's token (calltoken.Grants).
type Server struct {
	b    *Broker
	name string
	spec config.ServerSpec

	mu    sync.Mutex
	where *authServer // found on first use
	any   anyToken    // the hub's own requests' token
}

// authServer is where a server's grants come from: its authorization
// server, the hub's client there, the resource tokens are asked for.
type authServer struct {
	ep       useroauth.Endpoints
	client   useroauth.Client
	resource string
	// issuer keys the grants: never sent to another (SEP-2352).
	issuer string
}

// anyToken is the token the hub's own requests carry, kept a little.
type anyToken struct {
	token string
	at    time.Time
}

// Token returns user's access token at the server: the grant's, refreshed
// first when it is about to expire. Without a grant the error is the
// sign-in elicitation (-32042).
func (s *Server) Token(ctx context.Context, user string) (string, string, error) {
	if err := mayHold(user); err != nil {
		return "", "", fmt.Errorf("upstream %s: %w", s.name, err)
	}
	key := grantKey(s.name, user)
	g, stale, ok := s.b.cache.get(key)
	if !ok {
		var err error
		if g, ok, err = s.b.load(ctx, key); err != nil {
			return "", "", fmt.Errorf("upstream %s: %w", s.name, err)
		}
	}
	if !ok || !s.issuedHere(g) {
		return "", "", s.signIn(user)
	}
	now := s.b.opts.Now()
	if fresh(g, now) && g.AccessToken != stale {
		return g.AccessToken, g.Subject, nil
	}
	g, err := s.refresh(ctx, key, user, stale)
	if err != nil {
		return "", "", err
	}
	return g.AccessToken, g.Subject, nil
}

// issuedHere says g comes from the authorization server the settings
// name, when they name one: a grant is never sent to a server of another
// issuer (the settings changed); its caller signs in again. A discovered
// issuer is checked at the next refresh.
func (s *Server) issuedHere(g Grant) bool {
	u := s.spec.UserOAuth
	switch {
	case u.Issuer != "":
		return g.Issuer == u.Issuer
	case u.TokenURL != "":
		return g.Issuer == u.TokenURL
	}
	return true
}

// Refused marks token stale after the server refused it: the next call
// refreshes the grant, unless another refresh replaced the token already.
func (s *Server) Refused(user, token string) {
	key := grantKey(s.name, user)
	s.b.cache.refused(key, token)
}

// Await waits until user has a grant at the server or ctx ends: the
// callback on this replica wakes it, a callback on another is read from
// the store.
func (s *Server) Await(ctx context.Context, user string) error {
	key := grantKey(s.name, user)
	for {
		w := s.b.cache.wait(key)
		if _, ok, err := s.b.load(ctx, key); err != nil || ok {
			return err
		}
		t := time.NewTimer(4 * pollEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-w:
		case <-t.C:
		}
		t.Stop()
	}
}

// Any is a token for the hub's own requests: the token of the grant at
// the server refreshed last, "" when nobody signed in yet. It is read
// again at most every cacheFor, an answer of none too.
func (s *Server) Any(ctx context.Context) string {
	now := s.b.opts.Now()
	s.mu.Lock()
	if !s.any.at.IsZero() && now.Sub(s.any.at) < cacheFor {
		defer s.mu.Unlock()
		return s.any.token
	}
	s.mu.Unlock()
	grants, err := s.b.grants(ctx, func(g Grant) bool { return g.Server == s.name })
	if err != nil || len(grants) == 0 {
		s.mu.Lock()
		s.any = anyToken{at: now} // nobody signed in: asked again after cacheFor
		s.mu.Unlock()
		return ""
	}
	latest := grants[0]
	for _, g := range grants[1:] {
		if g.Refreshed.After(latest.Refreshed) {
			latest = g
		}
	}
	tok, _, err := s.Token(ctx, latest.User)
	if err != nil {
		return ""
	}
	s.mu.Lock()
	s.any = anyToken{token: tok, at: now}
	s.mu.Unlock()
	return tok
}

// refresh refreshes the grant of key, once across the fleet: it claims
// the grant by a conditional write and refreshes it, or waits for the
// replica that claimed it. Concurrent calls on this replica share one.
func (s *Server) refresh(ctx context.Context, key, user, stale string) (Grant, error) {
	ch := s.b.flight.DoChan("refresh "+key, func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*claimFor)
		defer cancel()
		return s.refreshOnce(ctx, key, user, stale)
	})
	select {
	case <-ctx.Done():
		return Grant{}, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return Grant{}, r.Err
		}
		return r.Val.(Grant), nil
	}
}

// errClaimed: another replica refreshes the grant now.
var errClaimed = errors.New("claimed by another replica")

// errNoGrant: the grant is gone (revoked, or dropped after invalid_grant).
var errNoGrant = errors.New("no grant")

func (s *Server) refreshOnce(ctx context.Context, key, user, stale string) (Grant, error) {
	me := s.b.opts.Replica
	for {
		var g Grant
		claimed := false
		err := s.b.opts.Store.Update(ctx, func(recs map[string][]byte) error {
			cur, ok, err := s.b.open(recs, key)
			switch {
			case err != nil:
				return err
			case !ok:
				return errNoGrant
			}
			g = cur
			now := s.b.opts.Now()
			if fresh(g, now) && g.AccessToken != stale {
				return store.ErrUnchanged // refreshed by someone else meanwhile
			}
			if g.ClaimedBy != "" && g.ClaimedBy != me && now.Before(g.ClaimUntil) {
				return errClaimed
			}
			g.ClaimedBy, g.ClaimUntil = me, now.Add(claimFor)
			claimed = true
			return s.b.seal(recs, key, g)
		})
		switch {
		case errors.Is(err, errNoGrant):
			s.b.cache.forget(key)
			return Grant{}, s.signIn(user)
		case errors.Is(err, store.ErrUnchanged):
			s.b.cache.remember(key, g)
			return g, nil
		case errors.Is(err, errClaimed):
			if err := sleep(ctx, pollEvery); err != nil {
				return Grant{}, fmt.Errorf("upstream %s: waiting for another replica's refresh of the caller's grant: %w", s.name, err)
			}
			continue
		case err != nil:
			return Grant{}, fmt.Errorf("upstream %s: claiming the caller's grant for a refresh in %s: %w", s.name, s.b.opts.Store.Where(), err)
		}
		if claimed {
			return s.refreshClaimed(ctx, key, g)
		}
	}
}

// refreshClaimed refreshes g, which this replica claimed, and writes the
// outcome: the new tokens, no grant after invalid_grant (the caller signs
// in again), or the claim released after another failure.
func (s *Server) refreshClaimed(ctx context.Context, key string, g Grant) (Grant, error) {
	where, err := s.authServer(ctx)
	var tok useroauth.Token
	if err == nil && where.issuer != g.Issuer {
		err = &useroauth.Error{Op: "token refresh", Code: "invalid_grant", Description: "the grant is of another authorization server than the server's now"}
	}
	if err == nil {
		if g.RefreshToken == "" {
			err = &useroauth.Error{Op: "token refresh", Code: "invalid_grant", Description: "the grant has no refresh token"}
		} else {
			tok, err = useroauth.Refresh(ctx, s.b.opts.HTTPClient, where.ep, where.client, g.RefreshToken, where.resource)
		}
	}
	now := s.b.opts.Now()
	if err != nil {
		dropped := oauthError(err) == "invalid_grant"
		werr := s.b.opts.Store.Update(ctx, func(recs map[string][]byte) error {
			cur, ok, err := s.b.open(recs, key)
			if err != nil || !ok || cur.ClaimedBy != g.ClaimedBy || !cur.ClaimUntil.Equal(g.ClaimUntil) {
				return store.ErrUnchanged // not ours any more
			}
			if dropped {
				delete(recs, key)
				return nil
			}
			cur.ClaimedBy, cur.ClaimUntil = "", time.Time{}
			return s.b.seal(recs, key, cur)
		})
		if werr != nil && !errors.Is(werr, store.ErrUnchanged) {
			s.b.opts.Log.Warn().Err(werr).Str("upstream", s.name).Msg("user grant: releasing a refresh claim failed; it lapses on its own")
		}
		if dropped {
			s.b.cache.forget(key)
			s.b.opts.Log.Info().Str("upstream", s.name).Str("user", g.User).Msg("user grant: the authorization server refused its refresh (invalid_grant); the caller signs in again")
			return Grant{}, s.signIn(g.User)
		}
		if now.Before(g.Expiry) {
			// Still valid a little: this call goes on with it.
			return g, nil
		}
		return Grant{}, fmt.Errorf("upstream %s: refreshing the caller's grant: %w", s.name, err)
	}
	g.AccessToken, g.Refreshed = tok.AccessToken, now
	g.Expiry = tok.Expiry
	if tok.RefreshToken != "" {
		g.RefreshToken = tok.RefreshToken
	}
	if len(tok.Scopes) > 0 {
		g.Scopes = tok.Scopes
	}
	g.ClaimedBy, g.ClaimUntil = "", time.Time{}
	err = s.b.opts.Store.Update(ctx, func(recs map[string][]byte) error {
		if _, ok := recs[key]; !ok {
			return errNoGrant // revoked while it was refreshed: not brought back
		}
		return s.b.seal(recs, key, g)
	})
	if errors.Is(err, errNoGrant) {
		s.b.cache.forget(key)
		return Grant{}, s.signIn(g.User)
	}
	if err != nil {
		// The refresh token was spent: without the new one written, the
		// grant is lost at the next refresh. Keep it here at least.
		s.b.cache.remember(key, g)
		return g, fmt.Errorf("upstream %s: writing the caller's refreshed grant to %s: %w", s.name, s.b.opts.Store.Where(), err)
	}
	s.b.cache.remember(key, g)
	return g, nil
}

// authServer finds the server's authorization server and the hub's
// client there, once; a failure is tried again at the next need.
func (s *Server) authServer(ctx context.Context) (*authServer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.where != nil {
		return s.where, nil
	}
	w, err := s.find(ctx)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: finding its authorization server: %w", s.name, err)
	}
	s.where = w
	return w, nil
}

func (s *Server) find(ctx context.Context) (*authServer, error) {
	u := s.spec.UserOAuth
	hc := s.b.opts.HTTPClient
	w := &authServer{resource: u.Resource}
	var err error
	switch {
	case u.AuthorizationURL != "":
		w.ep = useroauth.Endpoints{Issuer: u.Issuer, Authorization: u.AuthorizationURL, Token: u.TokenURL, Revocation: u.RevocationURL}
		w.issuer = u.Issuer
		if w.issuer == "" {
			w.issuer = u.TokenURL
		}
	case u.Issuer != "":
		if w.ep, err = useroauth.Discover(ctx, hc, u.Issuer); err != nil {
			return nil, err
		}
		w.issuer = w.ep.Issuer
	default:
		hinted, err := useroauth.Probe(ctx, hc, s.spec.URL)
		if err != nil {
			return nil, err
		}
		resource, servers, err := useroauth.ResourceMetadata(ctx, hc, s.spec.URL, hinted)
		if err != nil {
			return nil, err
		}
		if len(servers) == 0 {
			return nil, errors.New("its protected resource metadata names no authorization server (set userOAuth.issuer)")
		}
		if w.ep, err = useroauth.Discover(ctx, hc, servers[0]); err != nil {
			return nil, err
		}
		w.issuer = w.ep.Issuer
		if w.resource == "" {
			w.resource = resource
		}
	}
	if u.RevocationURL != "" {
		w.ep.Revocation = u.RevocationURL
	}
	if w.resource == "" {
		w.resource = s.spec.URL
	}
	w.client, err = s.b.client(ctx, w.ep, w.issuer, u)
	return w, err
}

// client is the hub's client at the authorization server of ep: the
// configured one, else its Client ID Metadata Document when the server
// takes one, else one registered there (RFC 7591) once for the fleet and
// kept sealed beside the grants, under the issuer.
func (b *Broker) client(ctx context.Context, ep useroauth.Endpoints, issuer string, u *config.UserOAuth) (useroauth.Client, error) {
	switch {
	case u.ClientID != "":
		return useroauth.Client{ID: u.ClientID, Secret: string(u.ClientSecretValue), AuthStyle: string(u.AuthStyle)}, nil
	case ep.ClientIDMetadata:
		return useroauth.Client{ID: b.publicURL() + ClientMetadataPath}, nil
	case ep.Registration == "":
		return useroauth.Client{}, fmt.Errorf("the authorization server %s takes no Client ID Metadata Document and offers no registration: set userOAuth.clientID", issuer)
	}
	sum := sha256.Sum256([]byte(issuer))
	key := "c-" + hex.EncodeToString(sum[:24])
	v, err, _ := b.flight.Do("register "+key, func() (any, error) {
		recs, err := b.opts.Store.Load(ctx)
		if err != nil {
			return nil, err
		}
		if c, ok := b.openClient(recs, key); ok {
			return c, nil
		}
		c, err := useroauth.Register(ctx, b.opts.HTTPClient, ep, b.metadata())
		if err != nil {
			return nil, err
		}
		err = b.opts.Store.Update(ctx, func(recs map[string][]byte) error {
			if kept, ok := b.openClient(recs, key); ok {
				c = kept // another replica registered first: use its
				return store.ErrUnchanged
			}
			plain, _ := json.Marshal(c)
			sealed, err := b.opts.Keys.Seal(plain, []byte(key))
			recs[key] = sealed
			return err
		})
		if err != nil && !errors.Is(err, store.ErrUnchanged) {
			return nil, err
		}
		return c, nil
	})
	if err != nil {
		return useroauth.Client{}, err
	}
	return v.(useroauth.Client), nil
}

func (b *Broker) openClient(recs map[string][]byte, key string) (useroauth.Client, bool) {
	raw, ok := recs[key]
	if !ok {
		return useroauth.Client{}, false
	}
	plain, err := b.opts.Keys.Open(raw, []byte(key))
	var c useroauth.Client
	if err != nil || json.Unmarshal(plain, &c) != nil || c.ID == "" {
		return useroauth.Client{}, false
	}
	return c, true
}

// metadata is what the hub says of itself to authorization servers.
func (b *Broker) metadata() useroauth.ClientMetadata {
	return useroauth.ClientMetadata{
		ClientID:     b.publicURL() + ClientMetadataPath,
		ClientName:   "mcp-hub",
		RedirectURIs: []string{b.publicURL() + CallbackPath},
		ClientURI:    b.publicURL(),
	}
}

// grants are the grants in the store that keep says to keep.
func (b *Broker) grants(ctx context.Context, keep func(Grant) bool) ([]Grant, error) {
	recs, err := b.opts.Store.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading grants from %s: %w", b.opts.Store.Where(), err)
	}
	var out []Grant
	for key := range recs {
		if !strings.HasPrefix(key, "g-") {
			continue
		}
		g, ok, err := b.open(recs, key)
		if err != nil {
			b.opts.Log.Warn().Err(err).Msg("user grant: a record does not open with this hub's keys (sealed with a key it no longer holds?)")
			continue
		}
		if ok && keep(g) {
			out = append(out, g)
		}
	}
	return out, nil
}

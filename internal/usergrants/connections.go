package usergrants

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/purko-io/mcp-hub/internal/upstream/useroauth"
	"github.com/purko-io/mcp-hub/internal/usergrants/store"
)

// Connection is a grant as its owner and admins see it: never a token.
type Connection struct {
	User      string    `json:"user"`
	Server    string    `json:"server"`
	Issuer    string    `json:"issuer"`
	Subject   string    `json:"subject,omitempty"`
	Scopes    []string  `json:"scopes,omitempty"`
	Connected time.Time `json:"connectedAt"`
	Refreshed time.Time `json:"refreshedAt"`
	Expires   time.Time `json:"accessExpiresAt,omitzero"`
	// Refreshable says the grant has a refresh token: it outlives its
	// access token.
	Refreshable bool `json:"refreshable"`
}

// Connections lists the grants of user, or every grant when user is ""
// (an admin's view), by server then user.
func (b *Broker) Connections(ctx context.Context, user string) ([]Connection, error) {
	grants, err := b.grants(ctx, func(g Grant) bool { return user == "" || g.User == user })
	if err != nil {
		return nil, err
	}
	out := make([]Connection, 0, len(grants))
	for _, g := range grants {
		out = append(out, Connection{User: g.User, Server: g.Server, Issuer: g.Issuer, Subject: g.Subject, Scopes: g.Scopes,
			Connected: g.Created, Refreshed: g.Refreshed, Expires: g.Expiry, Refreshable: g.RefreshToken != ""})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Server != out[j].Server {
			return out[i].Server < out[j].Server
		}
		return out[i].User < out[j].User
	})
	return out, nil
}

// ErrNoConnection: the user holds no grant at the server.
var ErrNoConnection = errors.New("no such connection")

// Revoked says what a revocation did.
type Revoked struct {
	// AtServer says the authorization server revoked the grant too (RFC
	// 7009); false when it offers no revocation or refused it.
	AtServer bool `json:"revokedAtServer"`
	// Note says why not, when AtServer is false.
	Note string `json:"note,omitempty"`
}

// Revoke drops user's grant at server from the store, on every replica
// within cacheFor, and revokes it at the authorization server when it
// offers revocation (RFC 7009): the refresh token, which ends the grant
// there, else the access token.
func (b *Broker) Revoke(ctx context.Context, user, server string) (Revoked, error) {
	key := grantKey(server, user)
	var g Grant
	err := b.opts.Store.Update(ctx, func(recs map[string][]byte) error {
		cur, ok, err := b.open(recs, key)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNoConnection
		}
		g = cur
		delete(recs, key)
		return nil
	})
	if err != nil {
		return Revoked{}, err
	}
	b.cache.forget(key)
	b.opts.Log.Info().Str("upstream", server).Str("user", user).Msg("user grant: revoked")
	s := b.server(server)
	if s == nil {
		return Revoked{Note: "the hub has no such server any more: revoke the grant at its authorization server"}, nil
	}
	where, err := s.authServer(ctx)
	if err != nil {
		return Revoked{Note: err.Error()}, nil
	}
	tok, hint := g.RefreshToken, "refresh_token"
	if tok == "" {
		tok, hint = g.AccessToken, "access_token"
	}
	switch err := useroauth.Revoke(ctx, b.opts.HTTPClient, where.ep, where.client, tok, hint); {
	case errors.Is(err, useroauth.ErrNoRevocation):
		return Revoked{Note: "the authorization server offers no revocation (RFC 7009): the grant ends there when it expires, or in its own settings"}, nil
	case err != nil:
		return Revoked{Note: fmt.Sprintf("revoking at the authorization server failed: %v", err)}, nil
	}
	return Revoked{AtServer: true}, nil
}

// Rewrap seals again, with the first key, every record sealed with an
// older one: run at start, so that after a key rotation the old key may
// be dropped once every replica started with the new one.
func (b *Broker) Rewrap(ctx context.Context) (int, error) {
	return store.Rewrap(ctx, b.opts.Store, b.opts.Keys, func(key string) []byte { return []byte(key) })
}

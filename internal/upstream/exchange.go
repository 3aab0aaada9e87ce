package upstream

import (
	"context"
	"net/http"
	"time"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/identity"
	"github.com/purko-io/mcp-hub/internal/upstream/calltoken"
	"github.com/purko-io/mcp-hub/internal/upstream/credentials"
	"github.com/purko-io/mcp-hub/internal/upstream/oauthclient"
	"github.com/purko-io/mcp-hub/internal/upstream/tokenexchange"
)

// A server with token exchange (spec.TokenExchange) is reached with each
// caller's own identity: before a tools/call, the caller's token (carried
// in the call's context, identity.WithSubject) is traded for one
// minted for this server, and the call's HTTP requests carry that token
// in place of the hub's (oauthclient.WithCallToken). The hub's own
// requests (handshake, lists, pings) carry the hub's token, from the
// client credentials grant of the same client. A call without a token to
// trade, or whose exchange fails, fails: never with the hub's token.
//
// The exchange runs before the call takes its place under the server's
// breaker and timeout: an authorization server that is down or slow fails
// the calls that need it, and is not counted against the server.

// newExchanger returns spec's exchanger and, when the setting names an
// issuer and no token URL, the finder of its token endpoint, which the
// hub's own client credentials use too; nil, nil without token exchange.
func newExchanger(spec config.ServerSpec, base http.RoundTripper, timeout time.Duration) (*tokenexchange.Exchanger, func(context.Context) (string, error)) {
	x := spec.TokenExchange
	if x == nil {
		return nil, nil
	}
	if timeout <= 0 {
		timeout = 15 * time.Second
	}
	hc := oauthclient.TokenClient(base, timeout)
	var endpoint func(context.Context) (string, error)
	if x.TokenURL == "" {
		endpoint = tokenexchange.Endpoint(hc, x.Issuer)
	}
	return tokenexchange.New(tokenexchange.Options{Server: spec.Name, Exchange: *x, HTTPClient: hc, TokenURL: endpoint}), endpoint
}

// exchanged gives each call the token exchanged for its caller.
type exchanged struct{ x *tokenexchange.Exchanger }

func (exchanged) Kind() string { return "exchanged for this caller" }

func (e exchanged) CallToken(ctx context.Context) (calltoken.Token, error) {
	subj := identity.SubjectFrom(ctx)
	tok, err := e.x.Token(ctx, subj)
	if err != nil {
		return calltoken.Token{}, err
	}
	return calltoken.Token{Value: tok.AccessToken, Seen: tok.Seen, Refused: func() { e.x.Forget(subj, tok.AccessToken) }}, nil
}

// perCall is the source of spec's calls' tokens: its token exchange, or
// with userOAuth each caller's own grant (opts.UserGrants); nil for a
// server every call reaches with the hub's credentials.
func perCall(spec config.ServerSpec, x *tokenexchange.Exchanger, grants calltoken.Grants) calltoken.Source {
	switch {
	case x != nil:
		return exchanged{x}
	case spec.UserOAuth != nil:
		return calltoken.PerUser(grants)
	}
	return nil
}

// grantsOf is spec's user grants, nil without userOAuth or when the hub
// keeps none.
func grantsOf(spec config.ServerSpec, opts Options) calltoken.Grants {
	if spec.UserOAuth == nil || opts.UserGrants == nil {
		return nil
	}
	return opts.UserGrants(spec)
}

// userHub is what the hub's own requests to a server with userOAuth carry
// when it has no credential of the hub's: a static token (spec.Token) is
// sent as it is; without one, a grant's token, which cred then redacts.
func userHub(spec config.ServerSpec, grants calltoken.Grants, cred *credentials.Set) func(context.Context) string {
	if spec.Token != nil || spec.BearerToken != "" || grants == nil {
		return nil
	}
	return func(ctx context.Context) string { return cred.Hold(grants.Any(ctx)) }
}

// Exchange is the server's token exchange, nil without one: its counts
// are metrics.
func (c *Client) Exchange() *tokenexchange.Exchanger { return c.exchange }

package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/identity"
	"github.com/purko-io/mcp-hub/internal/secrets"
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

// behalf is one call's exchanged token.
type behalf struct {
	token   string
	refused atomic.Bool // the server answered a request of the call 401
}

// onBehalf returns the context a call of a server with token exchange (x)
// is sent under: one whose requests carry the token exchanged for the
// caller whose token ctx carries. Without token exchange (x nil), ctx and
// nil.
func onBehalf(ctx context.Context, x *tokenexchange.Exchanger) (context.Context, *behalf, error) {
	if x == nil {
		return ctx, nil, nil
	}
	subj := identity.SubjectFrom(ctx)
	tok, err := x.Token(ctx, subj)
	if err != nil {
		return nil, nil, err
	}
	if seen := identity.SeenIn(ctx); seen != nil {
		*seen = tok.Seen
	}
	b := &behalf{token: tok.AccessToken}
	refused := func() {
		b.refused.Store(true)
		x.Forget(subj, tok.AccessToken)
	}
	return oauthclient.WithCallToken(ctx, tok.AccessToken, refused), b, nil
}

// failed is the error of a call the server failed: when it refused the
// caller's exchanged token, that, which is the caller's and not counted
// against the server (its breaker, its health), since one caller whose
// permissions there changed must not take the server from the others.
func (b *behalf) failed(server string, err error) error {
	if b == nil || err == nil || !b.refused.Load() {
		return err
	}
	return &ExchangedTokenRefusedError{Server: server}
}

// ExchangedTokenRefusedError says a server refused (401) the token the hub
// exchanged for the caller: the caller may no longer be allowed there. The
// cached token is dropped; the next call exchanges again.
type ExchangedTokenRefusedError struct{ Server string }

func (e *ExchangedTokenRefusedError) Error() string {
	return fmt.Sprintf("upstream %s refused the token exchanged for this caller (HTTP 401); the next call exchanges it again", e.Server)
}

// Exchange is the server's token exchange, nil without one: its counts
// are metrics.
func (c *Client) Exchange() *tokenexchange.Exchanger { return c.exchange }

// result is res without the call's exchanged token.
func (b *behalf) result(res json.RawMessage) json.RawMessage {
	if b == nil {
		return res
	}
	return withoutToken(res, b.token)
}

// withoutToken replaces token in an upstream's answer with secrets.Marker:
// an upstream that writes the request it got into its result must not
// hand the caller the token minted for it.
func withoutToken(raw json.RawMessage, token string) json.RawMessage {
	if token == "" || !bytes.Contains(raw, []byte(token)) {
		return raw
	}
	return bytes.ReplaceAll(raw, []byte(token), []byte(secrets.Marker))
}

// errWithoutToken is err with the call's exchanged token replaced by secrets.Marker in its text,
// when it holds it. An upstream's JSON-RPC error stays one, redacted; any
// other becomes plain text, so that nothing unwraps to the token.
func (b *behalf) errWithoutToken(err error) error {
	if b == nil {
		return err
	}
	token := b.token
	var rpc *RPCError
	switch {
	case errors.As(err, &rpc):
		if !strings.Contains(rpc.Message, token) && !bytes.Contains(rpc.Data, []byte(token)) {
			return err
		}
		return &RPCError{Code: rpc.Code, Message: strings.ReplaceAll(rpc.Message, token, secrets.Marker), Data: withoutToken(rpc.Data, token)}
	case strings.Contains(err.Error(), token):
		return errors.New(strings.ReplaceAll(err.Error(), token, secrets.Marker))
	}
	return err
}

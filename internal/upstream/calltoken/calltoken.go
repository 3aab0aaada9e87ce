// Package calltoken is the token one call carries in place of the hub's:
// one minted for its caller (token exchange) or the caller's own grant at
// the server's authorization server (user OAuth). The call's HTTP
// requests carry it (oauthclient.WithCallToken), what comes back is kept
// free of it, and a 401 to it is the caller's, not the server's: one
// caller whose permissions there changed must not take the server (its
// breaker, its health) from the others.
//
// It is apart from the upstream client because it is one job whatever
// gives the token, and the client's methods only bracket their requests
// with it.
package calltoken

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/purko-io/mcp-hub/internal/identity"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/secrets"
	"github.com/purko-io/mcp-hub/internal/upstream/oauthclient"
)

// Token is a call's token and who the server sees with it.
type Token struct {
	Value string
	Seen  identity.Seen
	// Refused, when set, runs when the server answers a request of the
	// call 401: the giver drops the token so the next call gets another.
	Refused func()
}

// Source gives each call the token of the caller its context carries
// (identity.SubjectFrom, identity.UserFrom).
type Source interface {
	CallToken(ctx context.Context) (Token, error)
	// Kind names the way in the refusal a caller reads: "exchanged for
	// this caller", "of this caller's grant".
	Kind() string
}

// Call is one call's token.
type Call struct {
	server, kind, token string
	refused             atomic.Bool // the server answered a request of the call 401
}

// On returns the context a call of server is sent under: one whose
// requests carry the token src gives for the caller ctx carries. Without
// a source (src nil), ctx and a nil *Call, whose methods change nothing.
func On(ctx context.Context, src Source, server string) (context.Context, *Call, error) {
	if src == nil {
		return ctx, nil, nil
	}
	tok, err := src.CallToken(ctx)
	if err != nil {
		return nil, nil, err
	}
	if seen := identity.SeenIn(ctx); seen != nil {
		*seen = tok.Seen
	}
	c := &Call{server: server, kind: src.Kind(), token: tok.Value}
	refused := func() {
		c.refused.Store(true)
		if tok.Refused != nil {
			tok.Refused()
		}
	}
	return oauthclient.WithCallToken(ctx, tok.Value, refused), c, nil
}

// Failed is the error of a call the server failed: when it refused the
// call's token, a *RefusedError, which is the caller's.
func (c *Call) Failed(err error) error {
	if c == nil || err == nil || !c.refused.Load() {
		return err
	}
	return &RefusedError{Server: c.server, Kind: c.kind}
}

// RefusedError says a server refused (401) the token of a caller's call:
// the caller may no longer be allowed there. The token is dropped; the
// next call gets another.
type RefusedError struct{ Server, Kind string }

func (e *RefusedError) Error() string {
	return fmt.Sprintf("upstream %s refused the token %s (HTTP 401); the next call gets a new one", e.Server, e.Kind)
}

// Result is res without the call's token.
func (c *Call) Result(res json.RawMessage) json.RawMessage {
	if c == nil {
		return res
	}
	return without(res, c.token)
}

// without replaces token in an upstream's answer with secrets.Marker: an
// upstream that writes the request it got into its result must not hand
// the caller the token minted for it.
func without(raw json.RawMessage, token string) json.RawMessage {
	if token == "" || !bytes.Contains(raw, []byte(token)) {
		return raw
	}
	return bytes.ReplaceAll(raw, []byte(token), []byte(secrets.Marker))
}

// Err is err with the call's token replaced by secrets.Marker in its
// text, when it holds it. An upstream's JSON-RPC error stays one,
// redacted; any other becomes plain text, so that nothing unwraps to the
// token.
func (c *Call) Err(err error) error {
	if c == nil || err == nil || c.token == "" {
		return err
	}
	token := c.token
	var rpc *jsonrpc.Error
	switch {
	case errors.As(err, &rpc):
		if !strings.Contains(rpc.Message, token) && !bytes.Contains(rpc.Data, []byte(token)) {
			return err
		}
		return &jsonrpc.Error{Code: rpc.Code, Message: strings.ReplaceAll(rpc.Message, token, secrets.Marker), Data: without(rpc.Data, token)}
	case strings.Contains(err.Error(), token):
		return errors.New(strings.ReplaceAll(err.Error(), token, secrets.Marker))
	}
	return err
}

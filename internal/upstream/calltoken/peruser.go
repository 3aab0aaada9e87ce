package calltoken

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/identity"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/upstream/relay"
)

// Grants are the callers' own grants at one server's authorization
// server (servers[].userOAuth); the wiring gives them (usergrants).
type Grants interface {
	// Token returns user's access token there and who the server sees
	// with it. Without a grant, the error is a *jsonrpc.Error with code
	// -32042 (URL elicitation required) whose elicitation is the sign-in
	// link for user and this server.
	Token(ctx context.Context, user string) (token, subject string, err error)
	// Refused drops token after the server refused it (401).
	Refused(user, token string)
	// Await waits until user has a grant (a sign-in under way ends) or
	// ctx ends.
	Await(ctx context.Context, user string) error
	// Any is a token for the hub's own requests (handshake, lists,
	// health) when the server has no service credential: the grant that
	// was refreshed last, "" when nobody signed in yet.
	Any(ctx context.Context) string
}

// URLRounds is what a caller's relay says when it takes a URL-mode
// elicitation as a round of its call (a 2026-07-28 caller that declared
// elicitation.url): the sign-in is asked there and the call goes on when
// it is done, instead of failing with -32042 for the caller to retry.
type URLRounds interface{ ElicitsURLInRounds() bool }

// PerUser is the Source of a server reached as each caller's own account.
func PerUser(g Grants) Source { return perUser{g} }

type perUser struct{ g Grants }

func (perUser) Kind() string { return "of this caller's own grant" }

func (p perUser) CallToken(ctx context.Context) (Token, error) {
	if p.g == nil {
		return Token{}, errors.New("this server is reached as each caller's own account (userOAuth), and this hub keeps no grants (no state directory, no Kubernetes Secret)")
	}
	user := identity.UserFrom(ctx)
	tok, sub, err := p.g.Token(ctx, user)
	if link := signIn(err); link != nil {
		if r, ok := relay.From(ctx).(URLRounds); ok && r.ElicitsURLInRounds() {
			tok, sub, err = p.inRound(ctx, user, *link)
		}
	}
	if err != nil {
		return Token{}, err
	}
	return Token{Value: tok, Seen: identity.Seen{Subject: sub}, Refused: func() { p.g.Refused(user, tok) }}, nil
}

// inRound asks the caller to sign in as a round of its call and waits for
// the grant.
func (p perUser) inRound(ctx context.Context, user string, link mcp.ElicitationParams) (string, string, error) {
	res, err := relay.From(ctx).Elicit(ctx, mcp.ElicitationRequest{Params: link})
	if err != nil {
		return "", "", fmt.Errorf("asking the caller to sign in: %w", err)
	}
	if res.Action != mcp.ElicitationResponseActionAccept {
		return "", "", fmt.Errorf("the caller did not sign in (%s): the call needs the caller's own account at this server", res.Action)
	}
	if err := p.g.Await(ctx, user); err != nil {
		return "", "", fmt.Errorf("waiting for the caller's sign-in: %w", err)
	}
	return p.g.Token(ctx, user)
}

// signIn is the sign-in elicitation of a -32042 error, nil for any other.
func signIn(err error) *mcp.ElicitationParams {
	if e := Elicitations(err); len(e) == 1 {
		return &e[0]
	}
	return nil
}

// Elicitations are the URL elicitations of a URL elicitation required
// error (-32042), none for any other error.
func Elicitations(err error) []mcp.ElicitationParams {
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != mcp.URL_ELICITATION_REQUIRED {
		return nil
	}
	var data mcp.URLElicitationRequiredError
	if json.Unmarshal(rpc.Data, &data) != nil {
		return nil
	}
	return data.Elicitations
}

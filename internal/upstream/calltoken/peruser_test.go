package calltoken

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/identity"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/upstream/relay"
)

// grants is a user's grant that arrives when a sign-in completes.
type grants struct {
	mu       sync.Mutex
	signedIn map[string]bool
	refused  []string
}

func (g *grants) Token(_ context.Context, user string) (string, string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.signedIn[user] {
		data, _ := json.Marshal(mcp.URLElicitationRequiredError{Elicitations: []mcp.ElicitationParams{{
			Mode: mcp.ElicitationModeURL, ElicitationID: "e1", URL: "https://hub.example/oauth/connect/x", Message: "Sign in"}}})
		return "", "", &jsonrpc.Error{Code: mcp.URL_ELICITATION_REQUIRED, Message: "sign in first", Data: data}
	}
	return "token-of-" + user, user + "@upstream", nil
}

func (g *grants) Refused(user, token string)          { g.refused = append(g.refused, user+":"+token) }
func (g *grants) Await(context.Context, string) error { return nil }
func (g *grants) Any(context.Context) string          { return "" }

// asker is a 2026-07-28 caller's relay: it answers the sign-in round.
type asker struct {
	relay.Relay
	url    bool
	action mcp.ElicitationResponseAction
	asked  []mcp.ElicitationParams
	done   func()
}

func (a *asker) ElicitsURLInRounds() bool { return a.url }

func (a *asker) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	a.asked = append(a.asked, req.Params)
	if a.action == mcp.ElicitationResponseActionAccept {
		a.done()
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: a.action}}, nil
}

func TestPerUserSignIn(t *testing.T) {
	for _, tc := range []struct {
		name      string
		url       bool
		action    mcp.ElicitationResponseAction
		wantToken string
		wantErr   string
		wantAsked int
	}{
		{"asked as a round, accepted", true, mcp.ElicitationResponseActionAccept, "token-of-alice", "", 1},
		{"asked as a round, declined", true, mcp.ElicitationResponseActionDecline, "", "the caller did not sign in (decline)", 1},
		{"a caller without URL rounds gets -32042", false, mcp.ElicitationResponseActionAccept, "", "sign in first", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &grants{signedIn: map[string]bool{}}
			a := &asker{url: tc.url, action: tc.action, done: func() { g.signedIn["alice"] = true }}
			ctx := relay.With(identity.WithUser(context.Background(), "alice"), a)
			tok, err := PerUser(g).CallToken(ctx)
			if tok.Value != tc.wantToken || (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("CallToken = %q, %v; want %q, %q", tok.Value, err, tc.wantToken, tc.wantErr)
			}
			if len(a.asked) != tc.wantAsked || (tc.wantAsked > 0 && (a.asked[0].Mode != mcp.ElicitationModeURL || a.asked[0].ElicitationID != "e1")) {
				t.Fatalf("asked %+v", a.asked)
			}
			if tc.wantToken != "" {
				if tok.Seen.Subject != "alice@upstream" {
					t.Errorf("seen %+v", tok.Seen)
				}
				tok.Refused()
				if len(g.refused) != 1 || g.refused[0] != "alice:token-of-alice" {
					t.Errorf("refused %v", g.refused)
				}
			}
			if tc.wantErr == "sign in first" && len(Elicitations(err)) != 1 {
				t.Errorf("the -32042 lost its elicitation: %v", err)
			}
		})
	}
	if _, err := PerUser(nil).CallToken(context.Background()); err == nil || !strings.Contains(err.Error(), "keeps no grants") {
		t.Errorf("without grants: %v", err)
	}
}

// TestCallKeepsItsTokenOut: a call's token never comes back in its
// answer or error, and a 401 to it is the caller's refusal.
func TestCallKeepsItsTokenOut(t *testing.T) {
	g := &grants{signedIn: map[string]bool{"bob": true}}
	ctx, c, err := On(identity.WithUser(context.Background(), "bob"), PerUser(g), "notes")
	if err != nil {
		t.Fatal(err)
	}
	if ctx == nil || c == nil {
		t.Fatal("no call")
	}
	if got := string(c.Result(json.RawMessage(`{"echo":"Bearer token-of-bob"}`))); strings.Contains(got, "token-of-bob") {
		t.Errorf("result %s", got)
	}
	rpc := &jsonrpc.Error{Code: -32000, Message: "bad token-of-bob", Data: json.RawMessage(`"token-of-bob"`)}
	if got := c.Err(rpc); strings.Contains(got.Error(), "token-of-bob") || !errors.As(got, new(*jsonrpc.Error)) {
		t.Errorf("error %v", got)
	}
	if err := c.Failed(errors.New("HTTP 401")); err.Error() != "HTTP 401" {
		t.Errorf("a failure before any 401: %v", err)
	}
}

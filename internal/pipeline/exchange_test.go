package pipeline

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/identity"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// TestRunCarriesTheCallersToken: the backend of a call gets the caller's
// own token to exchange, and the audit line names whom the upstream saw,
// never a token; a caller without one carries nothing.
func TestRunCarriesTheCallersToken(t *testing.T) {
	const raw = "eyJ.caller-token.sig"
	var got identity.Subject
	b := backendFunc(func(ctx context.Context, _ registry.Call) (json.RawMessage, error) {
		got = identity.SubjectFrom(ctx)
		if seen := identity.SeenIn(ctx); seen != nil {
			*seen = identity.Seen{Subject: "alice@example.com", Actor: "mcp-hub"}
		}
		return json.RawMessage(`{"content":[]}`), nil
	})
	tp := newTestPipeline(t, Options{}, registry.HubRoute(b, "t", autonomy.Class{ReadOnly: true}), nil)

	caller := fullCaller
	caller.Subject = identity.OAuthSubject(raw, "https://idp.example", time.Now().Add(time.Hour))
	if out := tp.Run(context.Background(), caller, "s1", jsonrpc.ToolCall{Name: "t"}, nil); out.Outcome != OK {
		t.Fatalf("outcome %q", out.Outcome)
	}
	if got.Kind() != identity.OAuth || got.Issuer() != "https://idp.example" {
		t.Fatalf("the backend got subject %v, want the caller's OAuth token", got)
	}
	a := tp.audit(t)
	if a["upstream_subject"] != "alice@example.com" || a["upstream_actor"] != "mcp-hub" {
		t.Fatalf("audit line %v: want upstream_subject and upstream_actor", a)
	}
	if strings.Contains(tp.log.String(), raw) {
		t.Fatal("the audit line holds the caller's token")
	}

	if out := tp.Run(context.Background(), fullCaller, "s1", jsonrpc.ToolCall{Name: "t"}, nil); out.Outcome != OK {
		t.Fatalf("outcome %q", out.Outcome)
	}
	if got.Kind() != identity.None {
		t.Fatalf("a caller without a token carried %v", got)
	}
	if _, ok := tp.audit(t)["upstream_subject"]; ok {
		t.Fatal("an upstream subject without an exchange")
	}
}

package callers_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/identity"
)

// reviewer answers for the ServiceAccount tokens it knows, and refuses
// the others with the status the cluster would mean.
type reviewer map[string]callers.ClusterIdentity

func (r reviewer) Review(_ context.Context, token string) (callers.ClusterIdentity, error) {
	if id, ok := r[token]; ok {
		return id, nil
	}
	if token == "sa-unreachable" {
		return callers.ClusterIdentity{}, &callers.ReviewError{Status: http.StatusServiceUnavailable, Err: errors.New("token review: connection refused")}
	}
	return callers.ClusterIdentity{}, errors.New("token review: not authenticated")
}

// TestAuthenticate: who each request is, at what level, or how it is
// refused (status, message, challenge).
func TestAuthenticate(t *testing.T) {
	tokens := []callers.TokenCaller{
		{Name: "reader", Token: "tok-r", Ceiling: autonomy.Restricted},
		{Name: "ops", Token: "tok-ops", Ceiling: autonomy.Full, Tools: []string{"get_issue"}, Admin: true},
	}
	sa := reviewer{
		"sa-exec":  {Caller: "system:serviceaccount:purko:exec", Agent: "purko/triage", Level: "supervised", PodUID: "4c1d2e3f-pod"},
		"sa-wrong": {Caller: "system:serviceaccount:purko:odd", Agent: "purko/odd", Level: "bold"},
	}
	closed := callers.NewAuth(tokens, nil, sa)
	open := callers.NewAuth(tokens, new(autonomy.Supervised), nil)
	for _, tc := range []struct {
		name    string
		auth    *callers.Auth
		header  map[string]string
		want    callers.Caller // Name, Level, Admin, Agent, Workflow are compared
		agent   string         // the VerifiedAgent
		allow   bool           // an allow-list is set
		status  int            // a refusal's
		msg     string         // in the refusal's message
		challen string         // the refusal's WWW-Authenticate
		subject identity.Kind  // the caller's token a server with token exchange may trade
		pod     string         // the pod its token is bound to: its run
	}{
		{name: "token", auth: closed, header: map[string]string{"Authorization": "Bearer tok-r"},
			want: callers.Caller{Name: "reader", Level: autonomy.Restricted}},
		{name: "token, scheme in any case, admin with allow-list", auth: closed, header: map[string]string{"Authorization": "BEARER tok-ops"},
			want: callers.Caller{Name: "ops", Level: autonomy.Full, Admin: true}, allow: true},
		{name: "lower level asked", auth: closed, header: map[string]string{"Authorization": "Bearer tok-ops", callers.HeaderAutonomyLevel: "restricted"},
			want: callers.Caller{Name: "ops", Level: autonomy.Restricted, Admin: true}, allow: true},
		{name: "higher level asked", auth: closed, header: map[string]string{"Authorization": "Bearer tok-r", callers.HeaderAutonomyLevel: "full"},
			status: http.StatusForbidden, msg: "reader may use at most"},
		{name: "unknown level asked", auth: closed, header: map[string]string{"Authorization": "Bearer tok-r", callers.HeaderAutonomyLevel: "bold"},
			status: http.StatusBadRequest, msg: callers.HeaderAutonomyLevel},
		{name: "no credentials", auth: closed, status: http.StatusUnauthorized, msg: "credentials required", challen: `Bearer realm="mcp-hub"`},
		{name: "a token of no one", auth: open, header: map[string]string{"Authorization": "Bearer nope"},
			status: http.StatusUnauthorized, msg: "not a token of this hub", challen: `Bearer realm="mcp-hub"`},
		{name: "anonymous, executor headers", auth: open, header: map[string]string{callers.HeaderAgent: "purko/x", callers.HeaderWorkflow: "wf", callers.HeaderStep: "2"},
			want: callers.Caller{Name: "anonymous", Level: autonomy.Supervised, Agent: "purko/x", Workflow: "wf"}},
		{name: "ServiceAccount: its agent is verified, a header cannot change it", auth: closed,
			header: map[string]string{"Authorization": "Bearer sa-exec", callers.HeaderAgent: "purko/other"},
			want:   callers.Caller{Name: "system:serviceaccount:purko:exec", Level: autonomy.Supervised, Agent: "purko/triage"}, agent: "purko/triage",
			subject: identity.ServiceAccount, pod: "4c1d2e3f-pod"},
		{name: "ServiceAccount with an unknown level", auth: closed, header: map[string]string{"Authorization": "Bearer sa-wrong"},
			status: http.StatusForbidden, msg: "autonomyLevel"},
		{name: "review refused", auth: closed, header: map[string]string{"Authorization": "Bearer sa-none"},
			status: http.StatusUnauthorized, msg: "not authenticated", challen: `Bearer realm="mcp-hub"`},
		{name: "review impossible", auth: closed, header: map[string]string{"Authorization": "Bearer sa-unreachable"},
			status: http.StatusServiceUnavailable, msg: "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodPost, "/mcp", nil)
			r.RemoteAddr = "10.0.0.7:1234"
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			c, refused := tc.auth.Authenticate(r)
			if tc.status != 0 {
				if refused == nil {
					t.Fatalf("admitted as %+v, want %d", c, tc.status)
				}
				if refused.Status != tc.status || !strings.Contains(refused.Msg, tc.msg) {
					t.Errorf("refused %d %q, want %d with %q", refused.Status, refused.Msg, tc.status, tc.msg)
				}
				if got := tc.auth.Challenge(refused); got != tc.challen {
					t.Errorf("challenge %q, want %q", got, tc.challen)
				}
				if strings.Contains(refused.Msg, "tok-") || strings.Contains(refused.Msg, "sa-") {
					t.Errorf("refusal %q shows the token", refused.Msg)
				}
				return
			}
			if refused != nil {
				t.Fatalf("refused: %d %s", refused.Status, refused.Msg)
			}
			if c.Name != tc.want.Name || c.Level != tc.want.Level || c.Admin != tc.want.Admin || c.Agent != tc.want.Agent || c.Workflow != tc.want.Workflow {
				t.Errorf("caller %+v, want %+v", c, tc.want)
			}
			if c.VerifiedAgent() != tc.agent {
				t.Errorf("verified agent %q, want %q", c.VerifiedAgent(), tc.agent)
			}
			if c.Subject.Kind() != tc.subject {
				t.Errorf("subject token %v, want kind %d", c.Subject, tc.subject)
			}
			if c.Subject.Pod() != tc.pod {
				t.Errorf("subject's pod %q, want %q", c.Subject.Pod(), tc.pod)
			}
			if (c.Allow != nil) != tc.allow {
				t.Errorf("allow-list %v, want one: %v", c.Allow, tc.allow)
			}
		})
	}
}

// TestLocalUserIsAdmin: only the anonymous caller of a hub without auth
// becomes admin, never a token without admin: true.
func TestLocalUserIsAdmin(t *testing.T) {
	auth := callers.NewAuth([]callers.TokenCaller{{Name: "ci", Token: "tok-ci", Ceiling: autonomy.Full}}, new(autonomy.Full), nil).LocalUserIsAdmin()
	r, _ := http.NewRequest(http.MethodGet, "/api/mcp/tools", nil)
	if c, _ := auth.Authenticate(r); !c.Admin {
		t.Errorf("anonymous local user %+v is not admin", c)
	}
	r.Header.Set("Authorization", "Bearer tok-ci")
	if c, _ := auth.Authenticate(r); c.Admin {
		t.Errorf("token caller %+v became admin", c)
	}
}

// TestFromFailsClosed: a context without a caller may do nothing.
func TestFromFailsClosed(t *testing.T) {
	if c := callers.From(context.Background()); c.Level != autonomy.Manual || c.Admin || c.Name != "unauthenticated" {
		t.Errorf("caller of an empty context: %+v", c)
	}
	want := callers.Caller{Name: "ci", Level: autonomy.Full}
	if c := callers.From(callers.With(context.Background(), want)); c.Name != "ci" || c.Level != autonomy.Full {
		t.Errorf("From(With(%+v)) = %+v", want, c)
	}
}

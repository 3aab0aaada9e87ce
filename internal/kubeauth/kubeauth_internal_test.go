package kubeauth

import (
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/purko-io/mcp-hub/internal/toolspec"
)

func TestAgentSpec(t *testing.T) {
	cases := []struct {
		name  string
		spec  any // nil: no spec
		level string
		tools []string
		err   string
	}{
		{name: "level and both tool shapes", spec: map[string]any{
			"autonomyLevel": "supervised",
			"tools":         []any{"read_file", map[string]any{"name": "search", "server": "docs"}, " read_file "},
		}, level: "supervised", tools: []string{"read_file", "search"}},
		{name: "no tools: all", spec: map[string]any{"autonomyLevel": "ha"}, level: "ha"},
		{name: "empty tools: all", spec: map[string]any{"autonomyLevel": "ri", "tools": []any{}}, level: "ri"},
		{name: "level kept raw", spec: map[string]any{"autonomyLevel": "Full"}, level: "Full"},
		{name: "no spec", err: "no spec.autonomyLevel"},
		{name: "no level", spec: map[string]any{"tools": []any{"x"}}, err: "no spec.autonomyLevel"},
		{name: "empty level", spec: map[string]any{"autonomyLevel": " "}, err: "empty spec.autonomyLevel"},
		{name: "numeric level", spec: map[string]any{"autonomyLevel": int64(2)}, err: "spec.autonomyLevel is a int64"},
		{name: "tools not a list", spec: map[string]any{"autonomyLevel": "full", "tools": "read_file"}, err: "spec.tools is a string"},
		{name: "object without a name", spec: map[string]any{"autonomyLevel": "full", "tools": []any{"a", map[string]any{"server": "x"}}}, err: "spec.tools[1]"},
		{name: "empty name", spec: map[string]any{"autonomyLevel": "full", "tools": []any{""}}, err: "spec.tools[0]"},
		{name: "number item", spec: map[string]any{"autonomyLevel": "full", "tools": []any{int64(1)}}, err: "spec.tools[0]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: map[string]any{}}
			if tc.spec != nil {
				obj.Object["spec"] = tc.spec
			}
			level, tools, err := agentSpec(obj)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || level != tc.level || !slices.Equal(tools, tc.tools) {
				t.Errorf("= %q %q %v, want %q %q", level, tools, err, tc.level, tc.tools)
			}
		})
	}
}

// TestAgentGuardrails reads the keys of spec.guardrails the hub enforces,
// as Purko writes them (a list or the executor's comma-separated string;
// a number or a numeric string), ignores the ones it leaves to the
// executor, and refuses what it cannot read, naming the key.
func TestAgentGuardrails(t *testing.T) {
	cases := []struct {
		name       string
		guardrails any
		want       *toolspec.Guardrails
		err        string
	}{
		{name: "none"},
		{name: "only the executor's keys", guardrails: map[string]any{"costLimitUSD": 2.5, "maxExecutionTime": "10m"}},
		{name: "Purko's shape", guardrails: map[string]any{"maxIterations": int64(20), "contentFilters": []any{"pii", "no-secrets-in-output"}, "costLimitUSD": 1.0},
			want: &toolspec.Guardrails{ContentFilters: []string{"pii", "no-secrets-in-output"}, MaxIterations: 20}},
		{name: "as the executor's variables", guardrails: map[string]any{"maxIterations": "15", "contentFilters": "pii, secrets", "contentFilterMode": "block"},
			want: &toolspec.Guardrails{ContentFilters: []string{"pii", "secrets"}, ContentFilterMode: "block", MaxIterations: 15}},
		{name: "a float that is whole", guardrails: map[string]any{"maxIterations": 7.0}, want: &toolspec.Guardrails{MaxIterations: 7}},
		{name: "unknown filter", guardrails: map[string]any{"contentFilters": []any{"pii", "no-emails"}}, err: `spec.guardrails.contentFilters: unknown content filter "no-emails"`},
		{name: "bad mode", guardrails: map[string]any{"contentFilters": []any{"pii"}, "contentFilterMode": "mask"}, err: "spec.guardrails.contentFilterMode"},
		{name: "fraction", guardrails: map[string]any{"maxIterations": 2.5}, err: "spec.guardrails.maxIterations: 2.5 is not a whole number"},
		{name: "word", guardrails: map[string]any{"maxIterations": "many"}, err: `spec.guardrails.maxIterations: "many" is not a number`},
		{name: "not an object", guardrails: []any{"pii"}, err: "spec.guardrails is a []interface {}, not an object"},
		{name: "filter not a string", guardrails: map[string]any{"contentFilters": []any{int64(1)}}, err: "spec.guardrails.contentFilters[0]"},
		{name: "human approval", guardrails: map[string]any{"humanApprovalRequired": true, "approvalFor": []any{"merge_*", "delete_file"}},
			want: &toolspec.Guardrails{HumanApprovalRequired: true, ApprovalFor: []string{"merge_*", "delete_file"}}},
		{name: "human approval as a string", guardrails: map[string]any{"humanApprovalRequired": "true"}, want: &toolspec.Guardrails{HumanApprovalRequired: true}},
		{name: "human approval off", guardrails: map[string]any{"humanApprovalRequired": false}},
		{name: "human approval not a bool", guardrails: map[string]any{"humanApprovalRequired": "sometimes"}, err: `spec.guardrails.humanApprovalRequired: "sometimes" is not true or false`},
		{name: "approvalFor without approval", guardrails: map[string]any{"approvalFor": []any{"merge_*"}}, err: "spec.guardrails.approvalFor: set without humanApprovalRequired"},
		{name: "approvalFor not a list", guardrails: map[string]any{"humanApprovalRequired": true, "approvalFor": "merge_*"}, err: "spec.guardrails.approvalFor is a string, not a list"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := map[string]any{"autonomyLevel": "full"}
			if tc.guardrails != nil {
				spec["guardrails"] = tc.guardrails
			}
			got, err := agentGuardrails(&unstructured.Unstructured{Object: map[string]any{"spec": spec}})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("= %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestServiceAccountUser(t *testing.T) {
	for user, want := range map[string]string{
		"system:serviceaccount:purko:executor": "purko/executor",
		"system:serviceaccount:purko":          "",
		"system:serviceaccount::executor":      "",
		"system:serviceaccount:purko:":         "",
		"system:serviceaccount:a:b:c":          "",
		"admin":                                "",
		"system:node:n1":                       "",
	} {
		ns, name, ok := serviceAccount(user)
		got := ""
		if ok {
			got = ns + "/" + name
		}
		if got != want {
			t.Errorf("serviceAccount(%q) = %q, want %q", user, got, want)
		}
	}
}

func TestJWTExpiry(t *testing.T) {
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	tok := enc(`{"alg":"RS256"}`) + "." + enc(fmt.Sprintf(`{"exp":%d,"sub":"x"}`, exp.Unix())) + ".sig"
	if got, ok := jwtExpiry(tok); !ok || !got.Equal(exp) {
		t.Errorf("jwtExpiry = %v %v, want %v", got, ok, exp)
	}
	for _, bad := range []string{"", "opaque-token", "a.b", "a.!!!.c", "a." + enc(`{"sub":"x"}`) + ".c", "a." + enc("not json") + ".c"} {
		if got, ok := jwtExpiry(bad); ok {
			t.Errorf("jwtExpiry(%q) = %v, want none", bad, got)
		}
	}
}

func TestRedact(t *testing.T) {
	const token = "secret-token-value"
	err := redact(fmt.Errorf("kubeauth: %w: server said %s", ErrUnauthenticated, token), token)
	if strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "server said <token>") {
		t.Errorf("redacted: %v", err)
	}
	if !errors.Is(err, ErrUnauthenticated) || errors.Is(err, ErrNotAgent) {
		t.Errorf("redacted error lost or changed its class: %v", err)
	}
	plain := errors.New("nothing to hide")
	if redact(plain, token) != plain {
		t.Error("an error without the token was replaced")
	}
}

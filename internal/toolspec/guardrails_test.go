package toolspec

import (
	"strings"
	"testing"
)

// TestParseFilter: Purko's names, short and long, read as one filter each;
// a regex filter splits at its last colon; what is unknown or malformed is
// an error naming it.
func TestParseFilter(t *testing.T) {
	tests := []struct {
		in      string
		want    Filter
		wantErr string
	}{
		{in: "pii", want: Filter{Name: FilterPII}},
		{in: "no-pii", want: Filter{Name: FilterPII}},
		{in: " Secrets ", want: Filter{Name: FilterSecrets}},
		{in: "no-secrets-in-output", want: Filter{Name: FilterSecrets}},
		{in: `regex:\d{2}:\d{2}:[time]`, want: Filter{Name: FilterRegex, Pattern: `\d{2}:\d{2}`, Replacement: "[time]"}},
		{in: `regex:ACME-\d+:`, want: Filter{Name: FilterRegex, Pattern: `ACME-\d+`}},
		{in: "pi", wantErr: `unknown content filter "pi" (known: pii, no-pii, secrets, no-secrets-in-output, regex:PATTERN:REPLACEMENT)`},
		{in: "regex:abc", wantErr: `content filter "regex:abc": a regex filter is regex:PATTERN:REPLACEMENT`},
		{in: "regex::x", wantErr: "empty pattern"},
		{in: "regex:a(:x", wantErr: "missing closing )"},
		{in: "regex:a*:x", wantErr: "matches the empty text"},
		{in: "regex:" + strings.Repeat("a", 1100) + ":x", wantErr: "at most 1024"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseFilter(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want it to say %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// TestGuardrailsValidate names every bad key, and every unknown filter at
// once.
func TestGuardrailsValidate(t *testing.T) {
	tests := []struct {
		g       Guardrails
		wantErr string
	}{
		{g: Guardrails{ContentFilters: []string{"pii", "no-secrets-in-output"}, ContentFilterMode: "block", MaxIterations: 20}},
		{g: Guardrails{ContentFilters: []string{"pii", "emails", "tokens"}}, wantErr: `contentFilters: unknown content filter "emails"`},
		{g: Guardrails{ContentFilterMode: "mask"}, wantErr: `contentFilterMode: "mask" is not one of redact, block`},
		{g: Guardrails{MaxIterations: -1}, wantErr: "maxIterations: -1 is negative"},
		{g: Guardrails{MaxIterations: 20, MaxIterationsPerHour: 200}},
		{g: Guardrails{MaxIterationsPerHour: -5}, wantErr: "maxIterationsPerHour: -5 is negative (0 or absent: no cap)"},
		{g: Guardrails{HumanApprovalRequired: true, ApprovalFor: []string{"merge_*", "delete_file"}, ApprovalMode: "elicit"}},
		{g: Guardrails{HumanApprovalRequired: true, ApprovalFor: []string{"merge_["}}, wantErr: `approvalFor: "merge_[" is not a valid tool pattern`},
		{g: Guardrails{ApprovalFor: []string{"merge_*"}}, wantErr: "approvalFor: set without humanApprovalRequired: true"},
		{g: Guardrails{HumanApprovalRequired: true, ApprovalMode: "slack"}, wantErr: `approvalMode: "slack" is not one of api, elicit`},
	}
	for _, tt := range tests {
		err := tt.g.Validate()
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%+v: error %v, want %q", tt.g, err, tt.wantErr)
		}
	}
	if err := (&Guardrails{ContentFilters: []string{"emails", "tokens"}}).Validate(); err == nil || !strings.Contains(err.Error(), `"tokens"`) {
		t.Errorf("the second unknown filter is not named: %v", err)
	}
}

// TestGuardrailsMerge: guardrails only narrow: every filter of both,
// block over redact, the lower cap; nil and empty change nothing.
func TestGuardrailsMerge(t *testing.T) {
	a := &Guardrails{ContentFilters: []string{"pii"}, MaxIterations: 30}
	b := &Guardrails{ContentFilters: []string{"secrets", "pii"}, ContentFilterMode: "block", MaxIterations: 10}
	m := a.Merge(b)
	if strings.Join(m.ContentFilters, ",") != "pii,secrets" || !m.Block() || m.MaxIterations != 10 {
		t.Fatalf("merge %+v", m)
	}
	if m := (&Guardrails{MaxIterations: 5}).Merge(&Guardrails{ContentFilters: []string{"pii"}}); m.MaxIterations != 5 || len(m.ContentFilters) != 1 {
		t.Fatalf("a cap and a filter: %+v", m)
	}
	for _, tt := range []struct{ a, b, want int }{{0, 100, 100}, {100, 0, 100}, {100, 40, 40}, {40, 100, 40}} {
		m := (&Guardrails{MaxIterations: 1, MaxIterationsPerHour: tt.a}).Merge(&Guardrails{MaxIterations: 1, MaxIterationsPerHour: tt.b})
		if m.MaxIterationsPerHour != tt.want {
			t.Errorf("maxIterationsPerHour %d merged with %d: %d, want %d", tt.a, tt.b, m.MaxIterationsPerHour, tt.want)
		}
	}
	if (&Guardrails{MaxIterationsPerHour: 1}).Empty() {
		t.Error("guardrails with only maxIterationsPerHour are empty")
	}
	if (&Guardrails{HumanApprovalRequired: true}).Empty() {
		t.Error("guardrails with only humanApprovalRequired are empty")
	}
	var none *Guardrails
	if none.Merge(nil) != nil || none.Merge(a) != a || a.Merge(nil) != a || a.Merge(&Guardrails{}) != a {
		t.Fatal("nil or empty guardrails changed a merge")
	}
	if len(a.ContentFilters) != 1 {
		t.Fatalf("merge changed its receiver: %+v", a)
	}
}

// TestApprovalMerge: an approval policy only narrows too: held if either
// holds, every tool if either says every tool, the globs of both, and the
// caller's own client (elicit) only when both say so.
func TestApprovalMerge(t *testing.T) {
	every := &Guardrails{HumanApprovalRequired: true}
	merges := &Guardrails{HumanApprovalRequired: true, ApprovalFor: []string{"merge_*"}, ApprovalMode: ApprovalElicit}
	deletes := &Guardrails{HumanApprovalRequired: true, ApprovalFor: []string{"delete_*"}, ApprovalMode: ApprovalElicit}
	filters := &Guardrails{ContentFilters: []string{"pii"}}
	for _, tt := range []struct {
		name     string
		a, b     *Guardrails
		patterns string
		mode     string
	}{
		{"filters and globs", filters, merges, "merge_*", ApprovalElicit},
		{"globs and filters", merges, filters, "merge_*", ApprovalElicit},
		{"globs of both", merges, deletes, "merge_*,delete_*", ApprovalElicit},
		{"every tool wins", merges, every, "", ""},
		{"every tool wins, the other way", every, deletes, "", ""},
	} {
		m := tt.a.Merge(tt.b)
		if !m.HumanApprovalRequired || strings.Join(m.ApprovalFor, ",") != tt.patterns || m.ApprovalMode != tt.mode && !(tt.mode == "" && m.ApprovalMode == ApprovalAPI) {
			t.Errorf("%s: %+v", tt.name, m)
		}
	}
	if m := merges.Merge(every); m.ApprovalMode == ApprovalElicit {
		t.Errorf("elicit and api merged to elicit: %+v", m)
	}
	if len(merges.ApprovalFor) != 1 {
		t.Fatalf("merge changed its receiver: %+v", merges)
	}
}

func TestNeedsApproval(t *testing.T) {
	g := &Guardrails{HumanApprovalRequired: true, ApprovalFor: []string{"merge_*"}}
	for _, tt := range []struct {
		g                   *Guardrails
		published, original string
		want                bool
	}{
		{nil, "merge_pull_request", "merge_pull_request", false},
		{&Guardrails{ContentFilters: []string{"pii"}}, "delete_file", "delete_file", false},
		{&Guardrails{HumanApprovalRequired: true}, "delete_file", "delete_file", true},
		{g, "github_merge_pull_request", "merge_pull_request", true},
		{g, "merge_pull_request", "merge_pull_request", true},
		{g, "delete_file", "delete_file", false},
	} {
		if got := tt.g.NeedsApproval(tt.published, tt.original); got != tt.want {
			t.Errorf("%+v NeedsApproval(%s, %s) = %v", tt.g, tt.published, tt.original, got)
		}
	}
}

package autonomy

import "testing"

func TestAllowed(t *testing.T) {
	ro := Class{ReadOnly: true, Reason: "read verb \"get\""}
	wr := Class{Reason: "write verb \"create\""}
	tests := []struct {
		level      Level
		read, writ bool
	}{
		{Manual, false, false},
		{Restricted, true, false},
		{Supervised, true, true},
		{Full, true, true},
		{Level(-1), false, false},
		{Level(99), false, false},
	}
	for _, tt := range tests {
		if got := Allowed(tt.level, ro); got != tt.read {
			t.Errorf("Allowed(%v, read-only) = %v, want %v", tt.level, got, tt.read)
		}
		if got := Allowed(tt.level, wr); got != tt.writ {
			t.Errorf("Allowed(%v, write) = %v, want %v", tt.level, got, tt.writ)
		}
	}
}

func TestDenial(t *testing.T) {
	tests := []struct {
		level Level
		tool  string
		want  string
	}{
		{Restricted, "create_issue", "BLOCKED: Restricted autonomy — write tool 'create_issue' not allowed."},
		{Restricted, "github_merge_pull_request", "BLOCKED: Restricted autonomy — write tool 'github_merge_pull_request' not allowed."},
		{Manual, "get_issue", "BLOCKED: Manual autonomy — no tools allowed."},
		{Manual, "", "BLOCKED: Manual autonomy — no tools allowed."},
		{Level(7), "x", "BLOCKED: Level(7) autonomy — tool 'x' not allowed."},
	}
	for _, tt := range tests {
		if got := Denial(tt.level, tt.tool); got != tt.want {
			t.Errorf("Denial(%v, %q) = %q, want %q", tt.level, tt.tool, got, tt.want)
		}
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"get_issue", "get_issue"},
		{"Get-Issue", "get_issue"},
		{"GET-ISSUE", "get_issue"},
		{"  code-sandbox ", "code_sandbox"},
		{"a.b/c", "a.b/c"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Normalize(tt.in); got != tt.want {
			t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAllowlist(t *testing.T) {
	tests := []struct {
		name                string
		list                []string
		published, original string
		want                bool
	}{
		{"empty list permits all", nil, "github_create_issue", "create_issue", true},
		{"empty slice permits all", []string{}, "x", "x", true},
		{"published name", []string{"github_get_issue"}, "github_get_issue", "get_issue", true},
		{"original name", []string{"get_issue"}, "github_get_issue", "get_issue", true},
		{"case and dash", []string{"get-ISSUE"}, "get_issue", "get_issue", true},
		{"published variant", []string{"GitHub-Get-Issue"}, "github_get_issue", "get_issue", true},
		{"entry with spaces", []string{" get_issue "}, "get_issue", "get_issue", true},
		{"not listed", []string{"get_issue"}, "search_code", "search_code", false},
		{"prefix is not a match", []string{"get"}, "get_issue", "get_issue", false},
		{"no glob", []string{"get_*"}, "get_issue", "get_issue", false},
		{"blank entries restrict to nothing", []string{"", "  "}, "get_issue", "get_issue", false},
		{"blank names never match", []string{"", "x"}, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NewAllowlist(tt.list).Permits(tt.published, tt.original); got != tt.want {
				t.Errorf("Permits(%q, %q) with %q = %v, want %v", tt.published, tt.original, tt.list, got, tt.want)
			}
		})
	}
	var nilList *Allowlist
	if !nilList.Permits("anything", "anything") {
		t.Error("a nil *Allowlist must permit every tool")
	}
	var zero Allowlist
	if !zero.Permits("anything", "anything") {
		t.Error("a zero Allowlist must permit every tool")
	}
}

func TestAllowlistKey(t *testing.T) {
	var nilList *Allowlist
	tests := []struct {
		name string
		a, b *Allowlist
		same bool
	}{
		{"nil and empty both permit all", nilList, NewAllowlist(nil), true},
		{"built twice from the same names", NewAllowlist([]string{"a", "b"}), NewAllowlist([]string{"a", "b"}), true},
		{"order, case, dashes and blanks do not matter", NewAllowlist([]string{"Get-Issue", "b", ""}), NewAllowlist([]string{"b", "get_issue"}), true},
		{"other names", NewAllowlist([]string{"a"}), NewAllowlist([]string{"b"}), false},
		{"a subset", NewAllowlist([]string{"a"}), NewAllowlist([]string{"a", "b"}), false},
		{"blanks permit nothing, not all", NewAllowlist([]string{" "}), NewAllowlist(nil), false},
		{"names are not run together", NewAllowlist([]string{"ab", "c"}), NewAllowlist([]string{"a", "bc"}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.Key() == tt.b.Key(); got != tt.same {
				t.Errorf("Key() %q vs %q: equal = %v, want %v", tt.a.Key(), tt.b.Key(), got, tt.same)
			}
		})
	}
}

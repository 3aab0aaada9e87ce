package autonomy

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func ptr(b bool) *bool { return &b }

func TestClassifyRules(t *testing.T) {
	c := NewClassifier(Config{
		ConfigOverrides: map[string]Overrides{
			"github": {ReadOnly: []string{"get_*", "push_files", "frobnicate"}, Write: []string{"get_secret*"}},
			"both":   {ReadOnly: []string{"x_*"}, Write: []string{"x_*"}},
			"split":  {Write: []string{"dump_*"}},
			"curated": {Write: []string{"drop_*"}, ReadOnly: []string{"list_*"},
				Hinted: map[string]bool{"create_issue": true, "list_keys": false, "drop_all": true, "get_x*": true}},
		},
		AnnotationOverrides: map[string]Overrides{
			"github": {ReadOnly: []string{"create_issue"}, Write: []string{"frobnicate", "list_*"}},
			"split":  {ReadOnly: []string{"dump_*", "zap"}},
			"kube":   {ReadOnly: []string{"kubectl_*"}},
			"akube":  {Hinted: map[string]bool{"get_pods": false}},
		},
		TrustedServers: []string{"trusted", "kube"},
	})
	hub := func(p string) string { return `operator override (hub config): pattern "` + p + `"` }
	ann := func(p string) string { return `operator override (MCPServer annotation): pattern "` + p + `"` }
	hinted := func(src string, ro bool) string {
		return fmt.Sprintf("operator override (%s): tools.overrides readOnlyHint %t", src, ro)
	}
	tests := []struct {
		name string
		tool Tool
		ro   bool
		why  string
	}{
		// Rule 1: operator overrides, hub config before annotations.
		{"hub read-only glob", Tool{Server: "github", Name: "get_issue"}, true, hub("get_*")},
		{"hub write beats hub read-only", Tool{Server: "github", Name: "get_secret_value"}, false, hub("get_secret*")},
		{"write wins within a source", Tool{Server: "both", Name: "x_y"}, false, hub("x_*")},
		{"hub config beats annotation", Tool{Server: "github", Name: "frobnicate"}, true, hub("frobnicate")},
		{"hub write beats annotation read-only", Tool{Server: "split", Name: "dump_db"}, false, hub("dump_*")},
		{"annotation read-only", Tool{Server: "split", Name: "zap"}, true, ann("zap")},
		{"annotation write beats verbs", Tool{Server: "github", Name: "list_secrets"}, false, ann("list_*")},
		{"annotation read-only beats verbs", Tool{Server: "github", Name: "create_issue"}, true, ann("create_issue")},
		{"override beats Purko list", Tool{Server: "github", Name: "push_files"}, true, hub("push_files")},
		{"override beats trusted hints", Tool{Server: "kube", Name: "kubectl_delete", DestructiveHint: ptr(true)}, true, ann("kubectl_*")},
		{"overrides are per server", Tool{Server: "gitlab", Name: "zap"}, false, "unknown: treated as write"},
		{"overrides match the original name exactly", Tool{Server: "github", Name: "GET_ISSUE"}, true, `read verb "get"`},
		{"override readOnlyHint true beats a write verb", Tool{Server: "curated", Name: "create_issue"}, true, hinted("hub config", true)},
		{"override readOnlyHint false beats a read pattern", Tool{Server: "curated", Name: "list_keys"}, false, hinted("hub config", false)},
		{"write pattern beats override readOnlyHint true", Tool{Server: "curated", Name: "drop_all"}, false, hub("drop_*")},
		{"override readOnlyHint is by exact name", Tool{Server: "curated", Name: "get_xy"}, true, `read verb "get"`},
		{"override readOnlyHint false from an annotation", Tool{Server: "akube", Name: "get_pods"}, false, hinted("MCPServer annotation", false)},
		{"override applies to API tools", Tool{Server: "github", Name: "get_x", Kind: API, Method: "POST"}, true, hub("get_*")},

		// Rule 2: Purko's write list.
		{"Purko list", Tool{Server: "gitlab", Name: "merge_pull_request"}, false, "Purko write list"},
		{"Purko list read verb", Tool{Server: "gitlab", Name: "pull_request_review_write"}, false, "Purko write list"},
		{"Purko list separator variant", Tool{Server: "gitlab", Name: "code_sandbox"}, false, "Purko write list"},
		{"Purko list case variant", Tool{Server: "gitlab", Name: "Execute-Code"}, false, "Purko write list"},
		{"Purko list beats trusted readOnlyHint", Tool{Server: "trusted", Name: "issue_write", ReadOnlyHint: ptr(true)}, false, "Purko write list"},
		{"Purko list beats API GET", Tool{Name: "create_branch", Kind: API, Method: "GET"}, false, "Purko write list"},
		{"Purko list applies to builtins", Tool{Name: "code-sandbox", Kind: Builtin}, false, "Purko write list"},

		// Rule 3: annotations of trusted servers only.
		{"trusted readOnlyHint", Tool{Server: "trusted", Name: "frobnicate", ReadOnlyHint: ptr(true)}, true, "readOnlyHint from trusted server"},
		{"trusted readOnlyHint beats write verb", Tool{Server: "trusted", Name: "delete_thing", ReadOnlyHint: ptr(true)}, true, "readOnlyHint from trusted server"},
		{"trusted readOnlyHint false", Tool{Server: "trusted", Name: "get_issue", ReadOnlyHint: ptr(false)}, false, "readOnlyHint=false from trusted server"},
		{"trusted destructiveHint", Tool{Server: "trusted", Name: "get_issue", DestructiveHint: ptr(true)}, false, "destructiveHint from trusted server"},
		// The spec: destructiveHint counts only when readOnlyHint is false
		// (mcp-go sets destructiveHint=true on every tool by default).
		{"trusted readOnlyHint outweighs destructiveHint", Tool{Server: "trusted", Name: "get_issue", ReadOnlyHint: ptr(true), DestructiveHint: ptr(true)}, true, "readOnlyHint from trusted server"},
		{"trusted destructive write stays a write", Tool{Server: "trusted", Name: "get_issue", ReadOnlyHint: ptr(false), DestructiveHint: ptr(true)}, false, "destructiveHint from trusted server"},
		{"trusted destructiveHint false alone falls through", Tool{Server: "trusted", Name: "get_issue", DestructiveHint: ptr(false)}, true, `read verb "get"`},
		{"trusted without hints falls through", Tool{Server: "trusted", Name: "create_issue"}, false, `write verb "create"`},
		{"untrusted readOnlyHint ignored", Tool{Server: "github", Name: "frobnicate_thing", ReadOnlyHint: ptr(true)}, false,
			`unknown: treated as write; its readOnlyHint: true was ignored: server "github" is not trusted (trustAnnotations: true on the server lets its hints decide)`},
		{"untrusted readOnlyHint ignored, write verb", Tool{Server: "fs", Name: "delete_thing", ReadOnlyHint: ptr(true)}, false,
			`write verb "delete"; its readOnlyHint: true was ignored: server "fs" is not trusted (trustAnnotations: true on the server lets its hints decide)`},
		{"untrusted readOnlyHint agreeing with the name", Tool{Server: "fs", Name: "read_file", ReadOnlyHint: ptr(true)}, true, `read verb "read"`},
		{"untrusted readOnlyHint false says nothing of it", Tool{Server: "fs", Name: "directory_tree", ReadOnlyHint: ptr(false)}, false, "unknown: treated as write"},
		{"untrusted destructiveHint ignored", Tool{Server: "gitlab", Name: "get_issue", DestructiveHint: ptr(true), ReadOnlyHint: ptr(false)}, true, `read verb "get"`},
		{"hints ignored for API tools", Tool{Server: "trusted", Name: "x", Kind: API, Method: "POST", ReadOnlyHint: ptr(true)}, false, `API method "POST"`},

		// Rule 4 and 5: verbs, then unknown.
		{"read verb", Tool{Server: "s", Name: "list_pods"}, true, `read verb "list"`},
		{"write verb", Tool{Server: "s", Name: "create_issue"}, false, `write verb "create"`},
		{"write verb wins", Tool{Server: "s", Name: "get_and_delete"}, false, `write verb "delete"`},
		{"noun-verb as object", Tool{Server: "s", Name: "get_commit"}, true, `read verb "get"`},
		{"noun-verb as verb", Tool{Server: "s", Name: "scale_deployment"}, false, `write verb "scale"`},
		{"unknown", Tool{Server: "s", Name: "frobnicate"}, false, "unknown: treated as write"},
		{"empty name", Tool{Server: "s", Name: ""}, false, "unknown: treated as write"},

		// Builtins.
		{"builtin static-analysis", Tool{Name: "static-analysis", Kind: Builtin}, true, `builtin "static-analysis"`},
		{"builtin trigger-workflow", Tool{Name: "trigger-workflow", Kind: Builtin}, false, `builtin "trigger-workflow"`},
		{"builtin unknown", Tool{Name: "list_things", Kind: Builtin}, false, "unknown builtin: treated as write"},

		// API tools.
		{"API GET", Tool{Name: "delete_user", Kind: API, Method: "GET"}, true, `API method "GET"`},
		{"API head lower case", Tool{Name: "x", Kind: API, Method: " head "}, true, `API method "HEAD"`},
		{"API POST", Tool{Name: "search_users", Kind: API, Method: "POST"}, false, `API method "POST"`},
		{"API PUT", Tool{Name: "x", Kind: API, Method: "PUT"}, false, `API method "PUT"`},
		{"API PATCH", Tool{Name: "x", Kind: API, Method: "patch"}, false, `API method "PATCH"`},
		{"API DELETE", Tool{Name: "x", Kind: API, Method: "DELETE"}, false, `API method "DELETE"`},
		{"API OPTIONS", Tool{Name: "x", Kind: API, Method: "OPTIONS"}, false, `API method "OPTIONS"`},
		{"API no method", Tool{Name: "get_x", Kind: API}, false, "API method missing: treated as write"},

		{"unknown kind", Tool{Name: "get_x", Kind: Kind(9)}, false, "unknown tool kind 9: treated as write"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.Classify(tt.tool)
			want := Class{ReadOnly: tt.ro, Reason: tt.why}
			if got != want {
				t.Errorf("Classify(%+v) = %+v, want %+v", tt.tool, got, want)
			}
		})
	}
}

func TestClassifyVerbs(t *testing.T) {
	tests := []struct {
		name string
		ro   bool
		why  string
	}{
		// GitHub MCP reads.
		{"get_issue", true, `read verb "get"`},
		{"list_pull_requests", true, `read verb "list"`},
		{"search_code", true, `read verb "search"`},
		{"get_file_contents", true, `read verb "get"`},
		{"pull_request_read", true, `read verb "read"`},
		{"issue_read", true, `read verb "read"`},
		{"get_commit", true, `read verb "get"`},
		{"list_commits", true, `read verb "list"`},
		{"get_release_by_tag", true, `read verb "get"`},
		{"get_latest_release", true, `read verb "get"`},
		{"list_tags", true, `read verb "list"`},
		{"get_label", true, `read verb "get"`},
		{"get_workflow_run", true, `read verb "get"`},
		{"get_workflow_run_logs", true, `read verb "get"`},
		{"download_workflow_run_artifact", true, `read verb "download"`},
		{"get_pull_request_status", true, `read verb "get"`},
		{"list_open_issues", true, `read verb "list"`},
		{"get_me", true, `read verb "get"`},
		// GitLab, Jira, Kubernetes reads.
		{"get_merge_request", true, `read verb "get"`},
		{"list_merge_requests", true, `read verb "list"`},
		{"jira_search", true, `read verb "search"`},
		{"jira_get_issue", true, `read verb "get"`},
		{"confluence_get_comments", true, `read verb "get"`},
		{"list_pods", true, `read verb "list"`},
		{"describe_pod", true, `read verb "describe"`},
		{"get_logs", true, `read verb "get"`},
		{"pods_log", true, `read verb "log"`},
		{"kubectl_get", true, `read verb "get"`},
		{"rollout_history_view", false, `write verb "rollout"`},
		{"explain_resource", true, `read verb "explain"`},
		{"namespaces_list", true, `read verb "list"`},
		{"export_dashboard", true, `read verb "export"`},
		{"query_database", true, `read verb "query"`},
		{"getPodStatus", true, `read verb "get"`},
		{"fetch.url", true, `read verb "fetch"`},
		{"repo/browse", true, `read verb "browse"`},
		{"ns:status", true, `read verb "status"`},
		// Writes.
		{"create_issue", false, `write verb "create"`},
		{"update_issue", false, `write verb "update"`},
		{"delete_repository", false, `write verb "delete"`},
		{"kubectl_apply", false, `write verb "apply"`},
		{"scale_deployment", false, `write verb "scale"`},
		{"kubectl_scale", false, `write verb "scale"`},
		{"restart_pod", false, `write verb "restart"`},
		{"run_query", false, `write verb "run"`},
		{"run_workflow", false, `write verb "run"`},
		{"rerun_workflow_run", false, `write verb "rerun"`},
		{"send_message", false, `write verb "send"`},
		{"pods_exec", false, `write verb "exec"`},
		{"pods_run", false, `write verb "run"`},
		{"merge_merge_request", false, `write verb "merge"`},
		{"jira_transition_issue", false, `write verb "transition"`},
		{"jira_link_to_epic", false, `write verb "link"`},
		{"mark_all_notifications_read", false, `write verb "mark"`},
		{"dismiss_notification", false, `write verb "dismiss"`},
		{"label_write", false, `write verb "write"`},
		{"commit_changes", false, `write verb "commit"`},
		{"tag_release", false, `write verb "tag"`},
		{"open_issue", false, `write verb "open"`},
		// Fail closed.
		{"get_and_delete", false, `write verb "delete"`},
		{"getAndDelete", false, `write verb "delete"`},
		{"get_dElEtE", false, `write verb "delete"`},
		{"GET_DELETE", false, `write verb "delete"`},
		{"list+drop", false, `write verb "drop"`},
		{"get_and_commit", false, `write verb "commit"`},
		{"check_then_merge", false, `write verb "merge"`},
		{"commit_get", false, `write verb "commit"`},
		{"search_or_create", false, `write verb "create"`},
		{"status_update", false, `write verb "update"`},
		{"frobnicate", false, "unknown: treated as write"},
		{"getissue", false, "unknown: treated as write"},
		{"listing", false, "unknown: treated as write"},
		{"_-./: ", false, "unknown: treated as write"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := classifyName(tt.name)
			if want := (Class{ReadOnly: tt.ro, Reason: tt.why}); got != want {
				t.Errorf("classifyName(%q) = %+v, want %+v", tt.name, got, want)
			}
		})
	}
}

func TestTokenize(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"get_issue", []string{"get", "issue"}},
		{"get-issue.v2/x:y z", []string{"get", "issue", "v2", "v", "2", "x", "y", "z"}},
		{"getPullRequest", []string{"getpullrequest", "get", "pull", "request"}},
		{"GetHTTPServer", []string{"gethttpserver", "get", "http", "server"}},
		{"listS3Buckets", []string{"lists3buckets", "list", "s", "3", "buckets"}},
		{"LIST_PODS", []string{"list", "pods"}},
		{"dElEtE", []string{"delete", "d", "el", "et", "e"}},
		{"__a__", []string{"a"}},
		{"", nil},
		{"ÜberGet", []string{"überget", "über", "get"}},
	}
	for _, tt := range tests {
		if got := tokenize(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("tokenize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestVerbListsDisjoint(t *testing.T) {
	for _, pair := range []struct {
		a, b   map[string]bool
		an, bn string
	}{
		{writeVerbs, readVerbs, "write", "read"},
		{nounVerbs, readVerbs, "noun", "read"},
		{writeVerbs, nounVerbs, "write", "noun"},
		{conjunctions, readVerbs, "conjunction", "read"},
		{conjunctions, writeVerbs, "conjunction", "write"},
		{conjunctions, nounVerbs, "conjunction", "noun"},
	} {
		for w := range pair.a {
			if pair.b[w] {
				t.Errorf("%q is both a %s verb and a %s verb", w, pair.an, pair.bn)
			}
		}
	}
	for _, set := range []map[string]bool{writeVerbs, nounVerbs, readVerbs} {
		for w := range set {
			if toks := tokenize(w); len(toks) != 1 || toks[0] != w {
				t.Errorf("verb %q does not tokenize to itself: %q", w, toks)
			}
		}
	}
}

func TestValidatePatterns(t *testing.T) {
	tests := []struct {
		in      []string
		wantErr []string
	}{
		{nil, nil},
		{[]string{"get_*", "list_?", "[a-z]*_read", "exact_name"}, nil},
		{[]string{"get_["}, []string{`"get_["`}},
		{[]string{"ok", "", "  ", " get_*", "a\\"}, []string{`""`, `"  "`, `" get_*"`, `"a\\"`}},
	}
	for _, tt := range tests {
		err := ValidatePatterns(tt.in)
		if (err != nil) != (len(tt.wantErr) > 0) {
			t.Fatalf("ValidatePatterns(%q) = %v", tt.in, err)
		}
		for _, w := range tt.wantErr {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ValidatePatterns(%q) = %q, does not name %s", tt.in, err, w)
			}
		}
	}
}

func TestClassifyInvalidPatternsFailClosed(t *testing.T) {
	c := NewClassifier(Config{
		ConfigOverrides:     map[string]Overrides{"bad": {Write: []string{"["}}},
		AnnotationOverrides: map[string]Overrides{"badro": {ReadOnly: []string{"[", "get_*"}}},
	})
	got := c.Classify(Tool{Server: "bad", Name: "get_issue"})
	if want := (Class{Reason: `operator override (hub config): invalid write pattern "[": treated as write`}); got != want {
		t.Errorf("malformed write pattern: got %+v, want %+v", got, want)
	}
	got = c.Classify(Tool{Server: "badro", Name: "delete_x"})
	if want := (Class{Reason: `write verb "delete"`}); got != want {
		t.Errorf("malformed read-only pattern must match nothing: got %+v, want %+v", got, want)
	}
	got = c.Classify(Tool{Server: "badro", Name: "get_x"})
	if want := (Class{ReadOnly: true, Reason: `operator override (MCPServer annotation): pattern "get_*"`}); got != want {
		t.Errorf("valid pattern next to a malformed one: got %+v, want %+v", got, want)
	}
}

func TestClassifierCopiesConfig(t *testing.T) {
	ro := []string{"zap"}
	cfg := Config{
		ConfigOverrides: map[string]Overrides{"s": {ReadOnly: ro}},
		TrustedServers:  []string{"t"},
	}
	c := NewClassifier(cfg)
	ro[0] = "other"
	cfg.ConfigOverrides["s"] = Overrides{Write: []string{"zap"}}
	cfg.TrustedServers[0] = "u"
	if got := c.Classify(Tool{Server: "s", Name: "zap"}); !got.ReadOnly {
		t.Errorf("classifier followed a later change of its config: %+v", got)
	}
	if got := c.Classify(Tool{Server: "t", Name: "zap", ReadOnlyHint: ptr(true)}); !got.ReadOnly {
		t.Errorf("classifier followed a later change of TrustedServers: %+v", got)
	}
}

func TestNilClassifier(t *testing.T) {
	var c *Classifier
	if got := c.Classify(Tool{Name: "get_issue"}); !got.ReadOnly {
		t.Errorf("nil classifier: get_issue = %+v", got)
	}
	if got := c.Classify(Tool{Name: "x", ReadOnlyHint: ptr(true)}); got.ReadOnly {
		t.Errorf("nil classifier trusted a hint: %+v", got)
	}
}

// TestPurkoListAlwaysWrite checks every entry of Purko's list on its own,
// including the ones whose names look read-only to the verb rules.
func TestPurkoListAlwaysWrite(t *testing.T) {
	c := NewClassifier(Config{TrustedServers: []string{"gh"}})
	for name := range purkoWrites {
		for _, kind := range []Kind{MCP, Builtin, API} {
			got := c.Classify(Tool{Server: "gh", Name: name, Kind: kind, Method: "GET", ReadOnlyHint: ptr(true)})
			if got != (Class{Reason: "Purko write list"}) {
				t.Errorf("%s (kind %d) = %+v", name, kind, got)
			}
		}
	}
	if len(purkoWrites) != 20 {
		t.Errorf("Purko write list has %d entries, want 20", len(purkoWrites))
	}
}

package autonomy

import (
	"path"
	"strings"
	"testing"
	"unicode"
)

// fuzzConfig has overrides and a trusted server, so the fuzzer crosses
// every rule.
var fuzzConfig = Config{
	ConfigOverrides: map[string]Overrides{
		"srv": {ReadOnly: []string{"safe_*", "pull_*"}, Write: []string{"safe_danger*"}},
	},
	AnnotationOverrides: map[string]Overrides{
		"srv":     {ReadOnly: []string{"*_ro", "issue_write"}},
		"trusted": {Write: []string{"*_rw"}},
	},
	TrustedServers: []string{"trusted"},
}

// readOverride reports whether any operator read-only pattern matches name
// on server, regardless of precedence.
func readOverride(server, name string) bool {
	for _, m := range []map[string]Overrides{fuzzConfig.ConfigOverrides, fuzzConfig.AnnotationOverrides} {
		for _, p := range m[server].ReadOnly {
			if ok, _ := path.Match(p, name); ok {
				return true
			}
		}
	}
	return false
}

func FuzzClassify(f *testing.F) {
	f.Add("get_issue", uint8(0), "", false, false, false, false, false)
	f.Add("get_and_delete", uint8(0), "", false, false, false, false, false)
	f.Add("getAndDelete", uint8(0), "", true, true, true, false, false)
	f.Add("delete_x", uint8(0), "", true, true, true, true, false)
	f.Add("safe_delete", uint8(0), "", false, false, false, false, false)
	f.Add("safe_danger_list", uint8(0), "", false, false, false, false, false)
	f.Add("merge_pull_request", uint8(0), "", true, true, true, false, false)
	f.Add("pull_request_review_write", uint8(0), "", false, false, false, false, false)
	f.Add("get_commit", uint8(0), "", false, false, false, false, false)
	f.Add("get_and_commit", uint8(0), "", false, false, false, false, false)
	f.Add("static-analysis", uint8(1), "", false, false, false, false, false)
	f.Add("trigger-workflow", uint8(1), "", false, false, false, false, false)
	f.Add("delete_user", uint8(2), "GET", false, false, false, false, false)
	f.Add("list_users", uint8(2), "POST", false, false, false, false, false)
	f.Add("dElEtE_ro", uint8(0), "", false, false, false, false, false)
	f.Add("x_rw", uint8(0), "", true, true, true, false, false)
	f.Add("\xff\xfeget", uint8(3), "\x00", true, false, true, true, true)
	f.Add("0", uint8(0), "", true, true, true, true, true) // trusted: readOnlyHint outweighs destructiveHint

	c := NewClassifier(fuzzConfig)
	f.Fuzz(func(t *testing.T, name string, kindByte uint8, method string, trusted, roSet, ro, dSet, d bool) {
		server := "srv"
		if trusted {
			server = "trusted"
		}
		tool := Tool{Server: server, Name: name, Kind: Kind(kindByte % 4), Method: method}
		if roSet {
			tool.ReadOnlyHint = &ro
		}
		if dSet {
			tool.DestructiveHint = &d
		}

		cl := c.Classify(tool)
		if cl.Reason == "" {
			t.Fatalf("Classify(%+v) gave no reason", tool)
		}
		if again := c.Classify(tool); again != cl {
			t.Fatalf("Classify(%+v) is not deterministic: %+v then %+v", tool, cl, again)
		}
		if Allowed(Restricted, cl) && !cl.ReadOnly {
			t.Fatalf("Restricted allows a write: %+v -> %+v", tool, cl)
		}
		if Allowed(Manual, cl) {
			t.Fatalf("Manual allows %+v -> %+v", tool, cl)
		}
		if !Allowed(Supervised, cl) || !Allowed(Full, cl) {
			t.Fatalf("Supervised/Full refuse %+v -> %+v", tool, cl)
		}
		if !cl.ReadOnly {
			return
		}

		// From here the tool was classified read-only; find out whether
		// anything but an operator read-only override could have said so.
		if readOverride(server, name) {
			return
		}
		if purkoWrites[Normalize(name)] {
			t.Fatalf("Purko write-list tool %q is read-only: %+v", name, cl)
		}
		switch tool.Kind {
		case API:
			if m := strings.ToUpper(strings.TrimSpace(method)); m != "GET" && m != "HEAD" {
				t.Fatalf("API %s tool %q is read-only: %+v", m, name, cl)
			}
			return // GET and HEAD are read-only whatever the name says
		case Builtin:
			if Normalize(name) != "static_analysis" {
				t.Fatalf("builtin %q is read-only: %+v", name, cl)
			}
			return
		case MCP:
			// A trusted server's own word: readOnlyHint=true makes a tool
			// read-only whatever destructiveHint says, which the MCP spec
			// defines only for tools that are not read-only.
			if trusted && tool.ReadOnlyHint != nil && *tool.ReadOnlyHint {
				if cl.Reason != "readOnlyHint from trusted server" {
					t.Fatalf("trusted read-only hint on %q classified by %q", name, cl.Reason)
				}
				return
			}
		default:
			t.Fatalf("unknown kind %d is read-only: %+v", tool.Kind, cl)
		}

		// An MCP tool read-only by its verbs: it must contain a read verb,
		// and no write verb, by the package tokenizer or by a plain split.
		toks := tokenize(name)
		plain := strings.FieldsFunc(name, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		for i := range plain {
			plain[i] = strings.ToLower(plain[i])
		}
		hasRead := false
		for _, tok := range append(toks, plain...) {
			if writeVerbs[tok] {
				t.Fatalf("%q has write verb %q but is read-only: %+v", name, tok, cl)
			}
			hasRead = hasRead || readVerbs[tok]
		}
		if !hasRead {
			t.Fatalf("%q has no read verb but is read-only: %+v", name, cl)
		}
		// A noun-verb is only an object after a read verb in its clause.
		readSeen := false
		for _, tok := range toks {
			switch {
			case conjunctions[tok]:
				readSeen = false
			case readVerbs[tok]:
				readSeen = true
			case nounVerbs[tok] && !readSeen:
				t.Fatalf("%q has verb %q before any read verb but is read-only: %+v", name, tok, cl)
			}
		}
	})
}

package secretscan

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

// testConfig has one rule or allowlist per behaviour under test, so each
// case below fails for one reason.
const testConfig = `
title = "test rules"

[[allowlists]]
description = "global"
paths = ['''\.png$''']
regexes = [
    '''(?i)^example''',
    '''^KEEPME''',
]
stopwords = ["dummy"]

[[allowlists]]
targetRules = ["vault-id"]
regexes = ['''^ZZZZ''']

[[rules]]
id = "demo-token"
description = "Demo token"
regex = '''\b(demo_[a-z0-9]{16})\b'''
entropy = 3
keywords = ["demo_"]
[[rules.allowlists]]
regexTarget = "line"
regexes = ['''#\s*fixture''']
[[rules.allowlists]]
condition = "AND"
regexes = ['''^demo_0''']
stopwords = ["test"]
[[rules.allowlists]]
description = "never allows here: scanned text has no path"
condition = "AND"
paths = ['''.*''']
regexes = ['''demo_''']

[[rules]]
id = "pair-secret"
description = "Key and value"
regex = '''(?i)[\w.-]*(key|secret)\s*=\s*"([a-z0-9]{12,})"'''
secretGroup = 2
keywords = ["key", "secret"]
[[rules.allowlists]]
regexTarget = "match"
regexes = ['''(?i)public[_-]?key''']

[[rules]]
id = "vault-id"
description = "Vault id"
regex = '''\b[A-Z]{4}[0-9]{8}\b'''
keywords = ["VAULT"]

[[rules]]
id = "generic-token"
description = "Generic token"
regex = '''token\s*=\s*"[a-z_]*?([a-z0-9]{16})"'''
keywords = ["token"]

[[rules]]
id = "newline-led"
description = "Match that starts with a newline"
regex = '''\n[ ]*(nl_[0-9]{6})'''
keywords = ["nl_"]

[[rules]]
id = "php-only"
description = "Bound to a path the text does not have"
regex = '''php_[0-9]+'''
path = '''\.php$'''
keywords = ["php_"]

[[rules]]
id = "any-path"
description = "Bound to a path pattern that accepts the empty path"
regex = '''anyp_[0-9]+'''
path = '''.*'''
keywords = ["anyp_"]

[[rules]]
id = "p12-file"
description = "Path-only rule"
path = '''\.p12$'''
`

// found renders findings as rule@line:column=secret for comparison.
func found(fs []Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s@%d:%d=%s", f.RuleID, f.Line, f.Column, f.Secret))
	}
	return out
}

// scanCase is a text and the findings wanted in it, as found renders them.
type scanCase struct {
	name, text string
	want       []string
}

func runScanCases(t *testing.T, s *Scanner, cases []scanCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := s.Scan(context.Background(), tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if got := found(fs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Scan(%q)\n got  %v\n want %v", tc.text, got, tc.want)
			}
		})
	}
}

func TestScan(t *testing.T) {
	s := New(testConfig)
	cases := []scanCase{
		{"secret found", "x = demo_a1b2c3d4e5f6g7h8\n",
			[]string{"demo-token@1:5=demo_a1b2c3d4e5f6g7h8"}},
		{"found on a later line", "a\nb\n  x = demo_a1b2c3d4e5f6g7h8",
			[]string{"demo-token@3:7=demo_a1b2c3d4e5f6g7h8"}},
		{"no secret", "x = os.Getenv(\"DEMO_TOKEN\")\n", []string{}},
		{"entropy at or below the threshold", "x = demo_aaaaaaaaaaaaaaaa\n", []string{}},
		{"keyword missing", "id: ABCD12345678\n", []string{}},
		{"keyword present, in another case", "Vault id: ABCD12345678\n",
			[]string{"vault-id@1:11=ABCD12345678"}},
		{"global stopword, case-insensitive", "x = demo_dummy12345678901\n", []string{}},
		{"global regex", "key = \"example12345abc\"\n", []string{}},
		{"a flag of one joined global regex holds for the next", "key = \"keepme123456\"\n", []string{}},
		{"global allowlist targeting the rule", "vault ZZZZ12345678\n", []string{}},
		{"global allowlist targeting another rule", "vault zzzz key = \"zzzz12345678\"\n",
			[]string{"pair-secret@1:19=zzzz12345678"}},
		{"secretGroup picks the value", "api_key = \"a9b8c7d6e5f4\"\n",
			[]string{"pair-secret@1:12=a9b8c7d6e5f4"}},
		{"value on the line after the key: the match's line and column", "x := 1\napi_key =\n  \"a9b8c7d6e5f4\"\n",
			[]string{"pair-secret@2:1=a9b8c7d6e5f4"}},
		{"allowlist on the match", "public_key = \"a9b8c7d6e5f4\"\n", []string{}},
		{"allowlist on the line", "x = demo_a1b2c3d4e5f6g7h8 # fixture\n", []string{}},
		{"AND allowlist, both checks pass", "x = demo_0test1a2b3c4d5e6\n", []string{}},
		{"AND allowlist, regex only", "x = demo_0a1b2c3d4e5f6g7h\n",
			[]string{"demo-token@1:5=demo_0a1b2c3d4e5f6g7h"}},
		{"AND allowlist, stopword only", "x = demo_1test2a3b4c5d6e7\n",
			[]string{"demo-token@1:5=demo_1test2a3b4c5d6e7"}},
		{"gitleaks:allow on the line", "x = demo_a1b2c3d4e5f6g7h8 // gitleaks:allow\n", []string{}},
		{"gitleaks:allow on another line", "// gitleaks:allow\nx = demo_a1b2c3d4e5f6g7h8",
			[]string{"demo-token@2:5=demo_a1b2c3d4e5f6g7h8"}},
		{"generic finding yields to a specific one on its line", "token = \"demo_a1b2c3d4e5f6g7h8\"\n",
			[]string{"demo-token@1:10=demo_a1b2c3d4e5f6g7h8"}},
		{"generic finding alone stays", "token = \"zzzz9y8x7w6v5u4t3s2r\"\n",
			[]string{"generic-token@1:14=9y8x7w6v5u4t3s2r"}},
		// As in gitleaks, the group is looked for again in the trimmed
		// match, where this regex no longer matches: the secret is all of it.
		{"leading newline of a match is trimmed", "a\n  nl_123456\n",
			[]string{"newline-led@2:1=  nl_123456"}},
		{"rule bound to a path", "php_123\n", []string{}},
		{"rule whose path pattern accepts no path", "anyp_123\n",
			[]string{"any-path@1:1=anyp_123"}},
		{"several rules, file order", "api_key = \"a9b8c7d6e5f4\"\nx = demo_a1b2c3d4e5f6g7h8\n",
			[]string{"demo-token@2:5=demo_a1b2c3d4e5f6g7h8", "pair-secret@1:12=a9b8c7d6e5f4"}},
	}
	runScanCases(t, s, cases)
}

// The default rules on credentials of well-known shapes, and on look-alikes
// their allowlists are there for.
func TestScanDefaultRules(t *testing.T) {
	s := Default()
	cases := []scanCase{
		{"AWS access key", "AWS = 'AKIAZ3MSJV5WKQ7TYRXB'\n",
			[]string{"aws-access-token@1:8=AKIAZ3MSJV5WKQ7TYRXB"}},
		{"GitHub token in a comment", "package p\n// token: ghp_Yq4mX2Vb9Lk8Rt7Wn3Zp6Hs1Dj5Fc0Ga2Ee4\n",
			[]string{"github-pat@2:11=ghp_Yq4mX2Vb9Lk8Rt7Wn3Zp6Hs1Dj5Fc0Ga2Ee4"}},
		{"generic key", "client_secret = \"q8Zr3kLw9Xv2Tb7Nc4Hy\"\n",
			[]string{"generic-api-key@1:18=q8Zr3kLw9Xv2Tb7Nc4Hy"}},
		{"AWS example key (allowlisted)", "AWS = 'AKIAIOSFODNN7EXAMPLE'\n", []string{}},
		{"generic key with a stopword", "client_secret = \"q8Zr3kLw9Xv2Tb7Nc4Hy_sample\"\n", []string{}},
		{"template placeholder (global allowlist)", "client_secret = \"${CLIENT_SECRET}\"\n", []string{}},
		{"environment lookup", "token = os.Getenv(\"GITHUB_TOKEN\")\n", []string{}},
	}
	runScanCases(t, s, cases)
}

// Every [[rules]] entry of the embedded file compiles into a rule, in file
// order: none is dropped on the way.
func TestDefaultRulesAllCompile(t *testing.T) {
	rs, err := Default().rules()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	entries := 0
	for line := range strings.Lines(defaultConfig) {
		line = strings.TrimSpace(line)
		if line == "[[rules]]" {
			entries++
		}
		if id, ok := strings.CutPrefix(line, "id = "); ok {
			ids = append(ids, strings.Trim(id, `"`))
		}
	}
	if entries == 0 || len(rs.rules) != entries || len(ids) != entries {
		t.Fatalf("compiled %d rules; the file has %d [[rules]] and %d ids", len(rs.rules), entries, len(ids))
	}
	active := 0
	for i, r := range rs.rules {
		if r.id != ids[i] {
			t.Errorf("rule %d is %q, the file's is %q", i, r.id, ids[i])
		}
		if !r.inert {
			active++
			if r.re == nil || len(r.keywords) == 0 {
				t.Errorf("rule %q: regex %v, %d keywords", r.id, r.re, len(r.keywords))
			}
		}
	}
	if len(rs.global) == 0 {
		t.Error("the global allowlist did not compile")
	}
	t.Logf("%d rules compiled, %d apply to text without a file name, %d distinct keywords", len(rs.rules), active, len(rs.keywords))
}

func TestCompileErrors(t *testing.T) {
	const rule = "[[rules]]\nid = \"r\"\nregex = '''(a)(b)'''\n"
	cases := []struct{ name, config, want string }{
		{"a key the scanner does not implement", rule + "[[rules.required]]\nid = \"x\"\n", "does not implement"},
		{"bad regex", "[[rules]]\nid = \"r\"\nregex = '''(a'''\n", `"r": regex`},
		{"secretGroup beyond the groups", rule + "secretGroup = 3\n", "secretGroup 3"},
		{"no id", "[[rules]]\nregex = '''a'''\n", "no id"},
		{"neither regex nor path", "[[rules]]\nid = \"r\"\n", "neither regex nor path"},
		{"same id twice", rule + rule, "defined twice"},
		{"unknown condition", rule + "[[rules.allowlists]]\ncondition = \"XOR\"\nregexes = ['''a''']\n", "condition"},
		{"unknown regexTarget", rule + "[[rules.allowlists]]\nregexTarget = \"file\"\nregexes = ['''a''']\n", "regexTarget"},
		{"empty allowlist", rule + "[[rules.allowlists]]\ndescription = \"nothing\"\n", "empty"},
		{"bad allowlist regex", rule + "[[rules.allowlists]]\nregexes = ['''(''']\n", "regex"},
		{"target rule missing", rule + "[[allowlists]]\ntargetRules = [\"nope\"]\nregexes = ['''a''']\n", `"nope"`},
		{"both global forms", rule + "[allowlist]\nregexes = ['''a''']\n[[allowlists]]\nregexes = ['''b''']\n", "cannot both"},
		{"not TOML", "[[rules]\n", "reading the secret rules"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.config).Scan(context.Background(), "ab")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestZeroScanner(t *testing.T) {
	if _, err := (&Scanner{}).Scan(context.Background(), "ab"); err == nil {
		t.Error("a Scanner without rules scanned")
	}
}

// Scans that start together on a fresh Scanner compile its rules once and
// all see the same findings (run with -race).
func TestScanConcurrent(t *testing.T) {
	s := Default()
	text := "AWS = 'AKIAZ3MSJV5WKQ7TYRXB'\n// token: ghp_Yq4mX2Vb9Lk8Rt7Wn3Zp6Hs1Dj5Fc0Ga2Ee4\n"
	const n = 8
	results := make([][]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			fs, err := s.Scan(context.Background(), text)
			if err != nil {
				t.Error(err)
			}
			results[i] = found(fs)
		})
	}
	wg.Wait()
	for i := range results {
		if len(results[i]) != 2 || !reflect.DeepEqual(results[i], results[0]) {
			t.Errorf("scan %d: %v, scan 0: %v", i, results[i], results[0])
		}
	}
}

func TestScanStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fs, err := Default().Scan(ctx, "AWS = 'AKIAZ3MSJV5WKQ7TYRXB'\n")
	if !errors.Is(err, context.Canceled) || len(fs) != 0 {
		t.Errorf("Scan after cancel: %v, %v", found(fs), err)
	}
}

func TestShannonEntropy(t *testing.T) {
	cases := []struct {
		s    string
		want float64
	}{
		{"", 0},
		{"aaaa", 0},
		{"abab", 1},
		{"abcdefgh", 3},
		{"0123456789abcdef", 4},
	}
	for _, tc := range cases {
		if got := shannonEntropy(tc.s); got != tc.want {
			t.Errorf("shannonEntropy(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

// TestAllowlistsCheapestFirst: a rule's allowlists, its own and the
// global ones, are checked cheapest first, and one that reads the whole
// line (all of a long text) last, whatever order the file lists them in.
func TestAllowlistsCheapestFirst(t *testing.T) {
	const config = `
[[allowlists]]
regexTarget = "line"
regexes = ['''x''']
[[allowlists]]
regexes = ['''aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa|bbbbbbbbbbbbbbbbbbbbbbbbbb''']
[[rules]]
id = "r"
regex = '''key=(\w+)'''
keywords = ["key"]
[[rules.allowlists]]
regexTarget = "match"
regexes = ['''cccccccccc''']
[[rules.allowlists]]
stopwords = ["dddd"]
`
	rs, err := compile(config)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range rs.rules[0].allow {
		switch {
		case a.regex == nil:
			got = append(got, "stopwords")
		default:
			got = append(got, a.regex.String())
		}
	}
	want := []string{"stopwords", "(?:cccccccccc)", "(?:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa|bbbbbbbbbbbbbbbbbbbbbbbbbb)", "(?:x)"}
	if !slices.Equal(got, want) {
		t.Fatalf("allowlists in the order %q, want %q", got, want)
	}
	// Or'ed, the order changes nothing found.
	for _, tc := range []struct {
		text string
		want int
	}{{"key=abc", 1}, {"key=xyz", 0}, {"key=ccccccccccq", 0}, {"key=ddddq", 0}, {"key=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 0}} {
		found, err := New(config).Scan(context.Background(), tc.text)
		if err != nil || len(found) != tc.want {
			t.Errorf("Scan(%q) = %d findings (%v), want %d", tc.text, len(found), err, tc.want)
		}
	}
}

package secretscan

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPlanWindow(t *testing.T) {
	cases := []struct {
		name, expr string
		keywords   []string
		want       windowPlan
	}{
		{"literal prefix", `\b(ghp_[0-9a-zA-Z]{36})\b`, []string{"ghp_"}, windowPlan{windowed: true, before: 0, after: 0}},
		{"keyword factored by the parser", `\b((?:A3T[A-Z0-9]|AKIA|ASIA)[A-Z2-7]{16})\b`, []string{"a3t", "akia", "asia"}, windowPlan{windowed: true, before: 0, after: 0}},
		{"keyword straddling parts", `sk-(?:proj|admin)-[a-z]{20}`, []string{"sk-proj", "sk-admin"}, windowPlan{windowed: true, before: 0, after: 0}},
		{"case-insensitive keyword", `(?i)token[ ]*=\s{0,2}([a-z0-9]{16})`, []string{"token"}, windowPlan{windowed: true, before: 0, after: 2}},
		{"newlines before the keyword", `\s?\s?key=([a-z]{8})`, []string{"key"}, windowPlan{windowed: true, before: 2, after: 0}},
		{"a match without the keyword", `\b([a-f0-9]{40}|sgp_[a-f0-9]{40})\b`, []string{"sgp_"}, windowPlan{}},
		{"keyword elsewhere", `pat[a-z]{14}`, []string{"airtable"}, windowPlan{}},
		{"unbounded newlines", `-----BEGIN[\s\S]{64,}?KEY-----`, []string{"-----begin"}, windowPlan{}},
		{"optional keyword", `(?:key)?=[a-z]{8}`, []string{"key"}, windowPlan{}},
		{"no keywords", `[a-z]{8}`, nil, windowPlan{}},
		{"required punctuation", `[a-z]{2,8}://[a-z]{1,9}:([^\s@]{3,20})@[a-z]`, []string{"@"}, windowPlan{windowed: true, required: []literal{{s: "://"}}}},
		{"required words", `(?i)name: ?([a-z]{1,20})\n {0,4}Value:([a-z]{8})`, []string{"name:"}, windowPlan{windowed: true, after: 1, required: []literal{{s: "name:", fold: true}, {s: "value:", fold: true}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := planWindow(tc.expr, tc.keywords)
			if tc.want.required == nil {
				got.required = nil // the cases about lines
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("planWindow(%q) = %+v, want %+v", tc.expr, got, tc.want)
			}
		})
	}
}

// differentialTexts are texts the windowed and the whole-text scan must
// agree on: the static-analysis corpus, the detect corpus, source code with
// keywords on every line, and credentials placed against window edges.
func differentialTexts(t *testing.T) []string {
	texts := []string{sourceLines(1000), sourceLines(37)}
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "static", "*.txt"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(b))
	}
	corpora, _ := filepath.Glob(filepath.Join("..", "..", "guardrails", "testdata", "heldout", "*.jsonl"))
	for _, name := range append([]string{filepath.Join("..", "..", "guardrails", "detect", "testdata", "corpus.jsonl")}, corpora...) {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var item struct{ Text string }
			if json.Unmarshal(sc.Bytes(), &item) == nil {
				texts = append(texts, item.Text)
			}
		}
		f.Close()
	}
	creds := []string{
		"AKIAZ3MSJV5WKQ7TYRXB",
		"ghp_Yq4mX2Vb9Lk8Rt7Wn3Zp6Hs1Dj5Fc0Ga2Ee4",
		"xoxb-2718281828-3141592653-Qm9Rb3Jx8Tn2Vw5Zy7Lp4Kc",
		"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
		"sk_live_4eC39HqLyjWDarjtT1zdp7dcQ9xR",
		"glpat-Zq8Xw7Vu6Ts5Rp4On3Ml",
		"\"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Zq8Xw7Vu6Ts5Rp4On3Ml2Kj1Ih0Gf9Ed8Cb7Aa6Zy5Xx4Ww3Vv2Uu1Tt0Ss9Rr8Qq7Pp6Oo5Nn4Mm3Ll2Kk1Jj0Ii9Hh8Gg7Ff6Ee5Dd4Cc3Bb2Aa1\n-----END RSA PRIVATE KEY-----",
	}
	layouts := []string{
		"%s",
		"token = \"%s\"",
		"password:\n\n  %s\n",
		"api_key =\r\n\"%s\"\r\n",
		"\n\n\nkey\n\n\n\n\n\n\n\n\n\n\n= %s\nkey=1",
		"curl -u admin:%s https://h\n",
		"x %s\ny %s\nsecret: %s",
		"postgres://app:%s@db:5432/app",
		"<add key=\"ApiKey\" value=\"%s\" />",
		"  - name: API_TOKEN\n    value: \"%s\"\n",
		"variable \"db_password\" {\n  sensitive = true\n  default   = \"%s\"\n}",
		"docker login -u ci -p %s registry.example.com",
		"Authorization: Bearer %s, next",
		"Sourcegraph\n" + strings.Repeat("commit 0123456789abcdef0123456789abcdef01234567\n", 3) + "%s",
	}
	for _, c := range creds {
		for _, l := range layouts {
			texts = append(texts, strings.ReplaceAll(l, "%s", c))
		}
	}
	return texts
}

// TestWindowedMatchesWhole holds the windowed scan to the whole-text scan,
// with gitleaks' rules alone and with the hub's.
func TestWindowedMatchesWhole(t *testing.T) {
	ctx := context.Background()
	texts := differentialTexts(t)
	if len(texts) < 60 {
		t.Fatalf("%d texts, want more", len(texts))
	}
	for name, s := range map[string]*Scanner{"default": Default(), "hub": Hub()} {
		rs, err := s.rules()
		if err != nil {
			t.Fatal(err)
		}
		for i, text := range texts {
			whole, err1 := rs.scanWhole(ctx, text)
			windowed, err2 := rs.scanWindowed(ctx, text)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s rules, text %d: %v, %v", name, i, err1, err2)
			}
			if !reflect.DeepEqual(located(whole), located(windowed)) {
				t.Errorf("%s rules, text %d (%d bytes): whole %v, windowed %v", name, i, len(text), located(whole), located(windowed))
			}
		}
	}
}

// TestGateReadsPastItsMatch: a gate that consumes nothing before the
// keyword (here \b, the alternation's shortest start) must still see the
// text after it, or it rejects every occurrence and the windowed scan
// misses what the whole-text scan finds.
func TestGateReadsPastItsMatch(t *testing.T) {
	const config = `
[[rules]]
id = "connect-string"
regex = '''(?i)(?:\bjdbc:oracle:thin:|\bsqlplus[ \t]+)[\w$#]{1,30}/([^\s@/]{3,64})@'''
keywords = ["oracle:thin:", "sqlplus"]
`
	rs, err := New(config).rules()
	if err != nil {
		t.Fatal(err)
	}
	if r := rs.rules[0]; !r.window.windowed || r.gate == nil {
		t.Fatalf("the rule is not windowed and gated: %+v, gate %v", r.window, r.gate != nil)
	}
	for _, text := range []string{"jdbc:oracle:thin:app/s3cr3tPw@db:1521/ORCL", "x\n$ sqlplus app/s3cr3tPw@//db:1521/ORCL\n"} {
		whole, _ := rs.scanWhole(context.Background(), text)
		windowed, _ := rs.scanWindowed(context.Background(), text)
		if len(whole) != 1 || !reflect.DeepEqual(located(whole), located(windowed)) {
			t.Errorf("%q: whole %v, windowed %v", text, located(whole), located(windowed))
		}
	}
}

// TestGateFollow: the byte after a keyword turns an occurrence away
// without the gate's regex only where no match of the gate can have it
// there: every byte that the gate accepts right after a keyword is in
// its follow set, and "api" in a URL path is turned away.
func TestGateFollow(t *testing.T) {
	rs, err := Hub().rules()
	if err != nil {
		t.Fatal(err)
	}
	gated := 0
	for i := range rs.rules {
		r := &rs.rules[i]
		if r.gate == nil {
			continue
		}
		for j, key := range r.gate.keys {
			follow, k := key.follow, rs.keywords[r.keywords[j]]
			if follow == nil {
				continue
			}
			gated++
			// What a gate reads after its keyword: a byte, then what makes
			// the rest of a generic rule's gate match.
			for c := range 256 {
				for _, tail := range []string{"", "=", " = ", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "\"abcdefghijkl\""} {
					for _, kk := range []string{k, strings.ToUpper(k)} {
						text := kk + string([]byte{byte(c)}) + tail + "abcdefghijklmnopqrstuvwxyz0123456789"
						if r.gate.re.MatchString(text) && !follow[c] {
							t.Errorf("%s: the gate matches %q, but %q is not in the follow set of %q", r.id, text, rune(c), k)
						}
					}
				}
			}
		}
	}
	if gated == 0 {
		t.Fatal("no gate has a follow set")
	}
	text := "GET /api/v1/items?page=2"
	i := strings.Index(text, "api")
	for _, r := range rs.rules {
		j := slices.IndexFunc(r.keywords, func(k int) bool { return rs.keywords[k] == "api" })
		if r.id == "generic-api-key" && r.gate.opens(text, j, hit{Start: i, End: i + 3}, nil) {
			t.Errorf("generic-api-key's gate opens on %q", text)
		}
	}
}

// TestGateCacheRepeats: a text that repeats the same occurrences (a list
// of results) scans, with its gates' tries remembered, as the whole-text
// scan does: every repetition is found, on its own line or not.
func TestGateCacheRepeats(t *testing.T) {
	rs, err := Hub().rules()
	if err != nil {
		t.Fatal(err)
	}
	item := `{"title":"rotate the deploy token","body":"the signing key to the vault","config":"api_key = 'Zq8vR2mX7tLp4Wn9Kd3F'"}`
	for _, sep := range []string{",", "\n", "\n\n"} {
		text := strings.Repeat(item+sep, 3*minCachedHits)
		whole, _ := rs.scanWhole(context.Background(), text)
		windowed, _ := rs.scanWindowed(context.Background(), text)
		if len(whole) < 3*minCachedHits || !reflect.DeepEqual(located(whole), located(windowed)) {
			t.Errorf("separator %q: whole %d findings, windowed %d, or they differ", sep, len(whole), len(windowed))
		}
	}
}

// TestGateCacheAnswers: the cache answers what the gate's regex says of
// each input, however many inputs share a slot, and for each gate.
func TestGateCacheAnswers(t *testing.T) {
	rs, err := Hub().rules()
	if err != nil {
		t.Fatal(err)
	}
	var gates []*gate
	for i := range rs.rules {
		switch rs.rules[i].id {
		case "generic-api-key", "generic-key", "generic-secret", "jwt":
			gates = append(gates, rs.rules[i].gate)
		}
	}
	opened := 0
	c := newGateCache()
	for round := range 4 {
		for i := range 4 * gateCacheSize {
			text := fmt.Sprintf("key = 'Zq8vR2mX7tLp4Wn9Kd3F%d'", i)
			if i%2 == 1 {
				text = fmt.Sprintf("key to the vault %d", i)
			}
			// Each round leaves one more gate out: a slot is read again by
			// the gate that wrote it and by others.
			for _, g := range gates[min(round, len(gates)):] {
				got, want := c.match(g, text), g.re.MatchString(text)
				if got != want {
					t.Fatalf("round %d, %q: cached %v, the regex %v", round, text, got, want)
				}
				if want {
					opened++
				}
			}
		}
	}
	if len(gates) != 4 || opened == 0 {
		t.Fatalf("%d gates opened %d times: the test tries nothing", len(gates), opened)
	}
}

// located renders findings without their secrets (rule, line, column,
// offsets), so a failure prints no credential.
func located(fs []Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, strings.Join([]string{f.RuleID, strconv.Itoa(f.Line), strconv.Itoa(f.Column), strconv.Itoa(f.Start), strconv.Itoa(f.End)}, ":"))
	}
	return out
}

// TestOffsets: text[Start:End] is the secret the finding names.
func TestOffsets(t *testing.T) {
	for _, s := range []*Scanner{Default(), Hub()} {
		for i, text := range differentialTexts(t) {
			fs, err := s.Scan(context.Background(), text)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fs {
				if f.Start < 0 || f.End > len(text) || text[f.Start:f.End] != f.Secret {
					t.Errorf("text %d: %s at %d:%d is not its secret", i, f.RuleID, f.Start, f.End)
				}
			}
		}
	}
}

// TestFoldTraps: a character that case-folds to an ASCII letter makes the
// scan whole, where gitleaks' lower-casing sees the keyword.
func TestFoldTraps(t *testing.T) {
	s := Default()
	text := "api_\u212aey = \"q8Zr3kLw9Xv2Tb7Nc4Hy\"\n"
	rs, _ := s.rules()
	whole, _ := rs.scanWhole(context.Background(), text)
	got, err := s.Scan(context.Background(), text)
	if err != nil || !reflect.DeepEqual(located(got), located(whole)) {
		t.Errorf("Scan %v, %v; whole-text scan %v", located(got), err, located(whole))
	}
}

// TestKeywordsSurviveJSONEscapes: no keyword holds a character JSON writes
// as an escape other than \uXXXX (control characters, '"', '\', '/'), nor
// '>' or '&' (which encoders write as \uXXXX; '<' is in "<add key=", so
// Maybe takes a \u003c as a possible keyword letter), nor a non-ASCII one. So a
// keyword in a JSON string is in the document's raw bytes unless a \uXXXX
// escape writes one of its letters, which detect's Secrets.Maybe checks.
func TestKeywordsSurviveJSONEscapes(t *testing.T) {
	rs, err := Hub().rules() // gitleaks' keywords and the hub's
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range rs.keywords {
		for i := 0; i < len(k); i++ {
			if c := k[i]; c < 0x20 || c >= 0x80 || strings.IndexByte("\"\\/>&", c) >= 0 {
				t.Errorf("keyword %q holds %q", k, c)
			}
		}
	}
}

// TestGateChecksAreNecessary: the cheap looks before a gate's regex (the
// head before a keyword inside the gate's first part, what must come
// soon after a keyword) turn an occurrence away only where the regex
// would not match there, or where another occurrence tries the same
// start; on source code dense with keywords they turn many away.
func TestGateChecksAreNecessary(t *testing.T) {
	rs, err := Hub().rules()
	if err != nil {
		t.Fatal(err)
	}
	var code strings.Builder
	for i := range 200 {
		fmt.Fprintf(&code, "\ttoken%d := auth.Key(ctx, secret, password[%d]) // api key %d, access-key\n", i, i, i)
		fmt.Fprintf(&code, "cmd --api-key=%x --password %d --client-secret 'v%dxx' TOKEN: \"q%dabcdef\"\n", i*7919, i, i, i)
	}
	texts := append(differentialTexts(t), code.String())
	var headsOff, needOff int
	for _, text := range texts {
		hits := rs.index.Hits(text, nil)
		for i := range rs.rules {
			g := rs.rules[i].gate
			if g == nil {
				continue
			}
			tried, passed := map[int]bool{}, map[int]bool{}
			for _, h := range hits {
				j := slices.Index(rs.rules[i].keywords, h.Keyword)
				if j < 0 {
					continue
				}
				for _, p := range g.keys[j].at {
					q := h.Start - p.o
					if q < 0 {
						continue
					}
					after := p.after(text, h.Start)
					soon := p.o != 0 || g.keys[j].needs.met(text, h.End)
					headsOff += boolInt(!after)
					needOff += boolInt(after && !soon)
					tried[q] = true
					passed[q] = passed[q] || after && soon
				}
			}
			for q := range tried {
				if !passed[q] && g.re.MatchString(text[q:min(len(text), q+g.maxLen+utf8.UTFMax)]) {
					t.Errorf("%s: the gate matches at %d of %q, but its checks turned every occurrence there away",
						rs.rules[i].id, q, text[q:min(len(text), q+40)])
				}
			}
		}
	}
	if headsOff == 0 || needOff == 0 {
		t.Errorf("heads turned %d occurrences away, needs %d: want both", headsOff, needOff)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestWindowBarrier: a window ends at the first byte on each side that no
// part of the rule can match, and a window without the punctuation every
// match holds is not searched: around the "@" of an e-mail address the
// URL-password rule reads the address alone, where counting stop bytes
// gave it kilobytes, and does not run its regex there.
func TestWindowBarrier(t *testing.T) {
	rs, err := Hub().rules()
	if err != nil {
		t.Fatal(err)
	}
	var r *rule
	for i := range rs.rules {
		if rs.rules[i].id == "url-password" {
			r = &rs.rules[i]
		}
	}
	if r == nil || !r.window.windowed {
		t.Fatal("no windowed url-password rule")
	}
	text := strings.Repeat("GET /api/v1/items?page=2 status=200 dur=12ms ", 100) + `Customer "olga.kowalska@fabrikam.de" asked. ` + strings.Repeat("x ", 500)
	at := strings.IndexByte(text, '@')
	w := (&scan{text: text}).window(hit{Start: at, End: at + 1}, r.window.before, r.window.after, &r.reach)
	// Back to the quote before the address; on to the one character
	// after the "@" the rule needs (its byte bound).
	if got := text[w[0]:w[1]]; !strings.HasPrefix(got, `"olga.kowalska@`) || len(got) > 32 {
		t.Errorf("the window around the address is %d bytes: %.80q", len(got), got)
	}
	if r.window.holds(text[w[0]:w[1]]) || !slices.Contains(r.window.required, literal{s: "://"}) {
		t.Errorf("required %v: the window around an address holds them", r.window.required)
	}
	url := "postgres://app:s3cr3t-Passw0rd@db:5432/app"
	at = strings.IndexByte(url, '@')
	w = (&scan{text: url}).window(hit{Start: at, End: at + 1}, r.window.before, r.window.after, &r.reach)
	if !r.window.holds(url[w[0]:w[1]]) || w[0] != 0 {
		t.Errorf("the window around a URL's password is %q", url[w[0]:w[1]])
	}
	found, err := Hub().Scan(context.Background(), "see "+url+" and "+text)
	if err != nil || !slices.ContainsFunc(found, func(f Finding) bool { return f.RuleID == "url-password" && f.Secret == "s3cr3t-Passw0rd" }) {
		t.Errorf("the URL's password was not found: %+v %v", found, err)
	}
}

// TestGateTails: a gate that starts at its keyword looks at what comes
// before it only through its rule's tails ("signing_" before "key" for
// generic-key): the keys of a manifest ("key: api-token") are turned away
// before the regex, and the windowed scan still finds what the whole-text
// scan finds, the signing keys among them.
func TestGateTails(t *testing.T) {
	rs, err := Hub().rules()
	if err != nil {
		t.Fatal(err)
	}
	var g *gate
	for i := range rs.rules {
		if rs.rules[i].id == "generic-key" {
			g = rs.rules[i].gate
		}
	}
	if g == nil || !slices.Contains(g.tails, "signing_") {
		t.Fatalf("generic-key's gate has no tails %q", g.tails)
	}
	var sb strings.Builder
	for i := range 300 {
		fmt.Fprintf(&sb, "      - name: API_TOKEN\n        valueFrom:\n          secretKeyRef: {name: web-secrets, key: api-token-%d}\n", i)
		if i%30 == 0 {
			fmt.Fprintf(&sb, "      SIGNING_KEY: \"k%dQw8Zr2Lm5TxPb7\"\n      monkey: \"banana-bread-%d\"\n", i, i)
		}
	}
	text := sb.String()
	turned := 0
	for _, h := range rs.index.Hits(text, nil) {
		if rs.keywords[h.Keyword] == "key" && !g.afterTail(text, h.Start) {
			turned++
		}
	}
	if turned < 300 {
		t.Errorf("the tails turned %d occurrences of \"key\" away, want the manifest's 300 or more", turned)
	}
	ctx := context.Background()
	whole, err1 := rs.scanWhole(ctx, text)
	windowed, err2 := rs.scanWindowed(ctx, text)
	if err1 != nil || err2 != nil || !reflect.DeepEqual(located(whole), located(windowed)) {
		t.Fatalf("whole %v, windowed %v (%v, %v)", located(whole), located(windowed), err1, err2)
	}
	if n := len(slices.DeleteFunc(windowed, func(f Finding) bool { return f.RuleID != "generic-key" })); n != 10 {
		t.Errorf("generic-key found %d signing keys, want 10", n)
	}
}

package secretscan

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestDistinctRunIsNecessary: every string whose entropy is above a rule's
// holds a run of at least the distinct characters planDistinct asks for,
// ASCII or not (shannonEntropy counts probabilities over bytes), so a
// window without one holds no secret the rule keeps.
func TestDistinctRunIsNecessary(t *testing.T) {
	alphabets := []string{"ab", "abc", "0123456789abcdef", "aAbB.=-_+/", "éè", "éèa", "日本語ab", "\u212aK"}
	r := rand.New(rand.NewPCG(35, 1))
	for _, entropy := range []float64{0.5, 1, 1.05, 1.1, 1.5, 2, 3, 3.5, 4.5} {
		d := planDistinct(`([\w.=+/-]+|[^\x00-\x7f]+)+`, 0, entropy)
		if d == nil {
			if entropy >= 1.1 {
				t.Fatalf("entropy %v: no condition", entropy)
			}
			continue // "éa" has 1.057 bits
		}
		for range 4000 {
			alpha := []rune(alphabets[r.IntN(len(alphabets))])
			var sb strings.Builder
			for range 1 + r.IntN(40) {
				sb.WriteRune(alpha[r.IntN(len(alpha))])
			}
			s := sb.String()
			if shannonEntropy(s) > entropy && !d.met(s) {
				t.Fatalf("entropy %v: %q has %.3f bits, but met is false (wants %d distinct)", entropy, s, shannonEntropy(s), d.least)
			}
		}
	}
}

// TestPlanDistinct reads the secret's characters off the rules' regexes.
func TestPlanDistinct(t *testing.T) {
	generic := `(?i)[\w.-]{0,50}?(?:access|auth|(?-i:[Aa]pi|API)|credential|creds|key|passw(?:or)?d|secret|token)(?:[ \t\w.-]{0,20})[\s'"]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)[\x60'"\s=]{0,5}([\w.=-]{10,150}|[a-z0-9][a-z0-9+/]{11,}={0,3})(?:[\x60'"\s;]|\\[nr]|$)`
	cases := []struct {
		name, expr string
		group      int
		entropy    float64
		least      int // 0: no condition
		in, out    string
		met, unmet []string
	}{
		{name: "generic-api-key: group 1 always holds the secret", expr: generic, entropy: 3.5, least: 12,
			in: "aZ09_.=-+/", out: " :\"',;\\",
			met:   []string{`key = "Ab3dEf9hIjKl"`, "token: 0123456789ab"},
			unmet: []string{`key to the vault.","created_at":"2026-12-02T10:00:00Z"}`, "token: 0123456789aaaaaaaaaaa"}},
		{name: "a secret group", expr: `(?i)pat[:=]\s*(glpat-[a-z0-9]{20})`, group: 1, entropy: 3, least: 9,
			in: "glpatAZ09-", out: ":= _",
			met: []string{"glpat-abcdefgh"}, unmet: []string{"pat: glpat-aaaa"}},
		{name: "an optional group 1: the whole match", expr: `key(?:=(\w+))?[a-z]+`, entropy: 2, least: 5,
			in: "key=_a", out: " ."},
		{name: "a literal folded", expr: `(?i)(k)`, entropy: 2, least: 5, in: "kK"},
		{name: "low entropy: none", expr: generic, entropy: 1},
		{name: "no entropy: none", expr: generic},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := planDistinct(tc.expr, tc.group, tc.entropy)
			if tc.least == 0 {
				if d != nil {
					t.Fatalf("condition %+v, want none", d)
				}
				return
			}
			if d == nil || d.least != tc.least {
				t.Fatalf("condition %+v, want %d distinct", d, tc.least)
			}
			for _, c := range []byte(tc.in) {
				if !d.class[c] {
					t.Errorf("%q not in the class", c)
				}
			}
			for _, c := range []byte(tc.out) {
				if d.class[c] {
					t.Errorf("%q in the class", c)
				}
			}
			for _, s := range tc.met {
				if !d.met(s) {
					t.Errorf("met(%q) false", s)
				}
			}
			for _, s := range tc.unmet {
				if d.met(s) {
					t.Errorf("met(%q) true", s)
				}
			}
		})
	}
}

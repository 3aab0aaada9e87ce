// Command secrets writes the secrets half of the held-out corpus of issue
// 35: secrets.jsonl (items holding credentials) and secrets-negatives.jsonl
// (hard negatives) in internal/guardrails/testdata/heldout. From the
// repository's root:
//
//	go run ./internal/guardrails/testdata/heldout/gen/secrets
//
// Every value is generated here, at random with a fixed seed, in a shape a
// public source documents (SOURCES.md beside the data names each source key
// and its licence): token formats are facts (prefix, alphabet, length), no
// rule, code or prose of those sources is copied. The output is stable: run
// it twice, get the same bytes. The corpus was written before the hub's
// rules were tuned on it; an item is changed afterwards only when its label
// is wrong, never to make a rule pass.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// item is one line of the corpus, as internal/guardrails/heldout_test.go
// reads it.
type item struct {
	Text     string   `json:"text"`
	PII      []string `json:"pii"`
	Secrets  []string `json:"secrets"`
	Category string   `json:"category"`
	Source   string   `json:"source"`
}

// gen holds the generator's random source and what it has written so far.
type gen struct {
	r        *rand.Rand
	pos, neg []item
	seen     map[string]bool
}

func main() {
	out := flag.String("out", filepath.Join("internal", "guardrails", "testdata", "heldout"), "directory to write secrets.jsonl and secrets-negatives.jsonl to")
	seed := flag.Uint64("seed", 35, "seed of the random values; the committed files are seed 35's, other seeds draw fresh samples of the same shapes")
	flag.Parse()
	g := &gen{r: rand.New(rand.NewPCG(*seed, 2026)), seen: map[string]bool{}}
	g.providers()
	g.connectionStrings()
	g.configValues()
	g.commandLines()
	g.headers()
	g.toolOutputs()
	g.tokensAndKeys()
	g.negatives()
	for _, f := range []struct {
		name  string
		items []item
	}{{"secrets.jsonl", g.pos}, {"secrets-negatives.jsonl", g.neg}} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		for _, it := range f.items {
			if err := enc.Encode(it); err != nil {
				log.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(*out, f.name), b.Bytes(), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Fprintf(os.Stderr, "%d items with secrets, %d hard negatives\n", len(g.pos), len(g.neg))
}

// secret adds an item whose secrets are the given substrings of text.
func (g *gen) secret(category, source, text string, secrets ...string) {
	if len(secrets) == 0 {
		log.Fatalf("%s: an item with secrets needs at least one", category)
	}
	for _, s := range secrets {
		if s == "" || !strings.Contains(text, s) {
			log.Fatalf("%s: labelled value %q is not in %q", category, s, text)
		}
	}
	if g.seen[text] {
		return
	}
	g.seen[text] = true
	g.pos = append(g.pos, item{Text: text, PII: []string{}, Secrets: secrets, Category: "secret/" + category, Source: source})
}

// each adds n items of a category: text(v) for n values v, the secret.
func (g *gen) each(category, source string, n int, value func() string, text func(v string) string) {
	for range n {
		v := value()
		g.secret(category, source, text(v), v)
	}
}

// negative adds a hard negative: text holds no secret.
func (g *gen) negative(category, source, text string) {
	if g.seen[text] {
		return
	}
	g.seen[text] = true
	g.neg = append(g.neg, item{Text: text, PII: []string{}, Secrets: []string{}, Category: "negative/" + category, Source: source})
}

// Alphabets of the documented shapes.
const (
	upper  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	lower  = "abcdefghijklmnopqrstuvwxyz"
	digits = "0123456789"
	alnum  = upper + lower + digits
	lowAN  = lower + digits
	upAN   = upper + digits
	hexLow = "0123456789abcdef"
	hexUp  = "0123456789ABCDEF"
	b64    = alnum + "+/"
	b64url = alnum + "-_"
	b32    = upper + "234567"
)

// s returns n characters drawn from alphabet.
func (g *gen) s(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.r.IntN(len(alphabet))]
	}
	return string(b)
}

// n returns an int in [lo, hi].
func (g *gen) n(lo, hi int) int { return lo + g.r.IntN(hi-lo+1) }

func pick[T any](g *gen, xs []T) T { return xs[g.r.IntN(len(xs))] }

// b64pad returns n base64 characters (a multiple of 4 with padding when
// n%4 != 0 is asked for: the characters then end in '=').
func (g *gen) b64pad(n int) string {
	body := g.s(b64, n)
	switch n % 4 {
	case 2:
		return body + "=="
	case 3:
		return body + "="
	}
	return body
}

func (g *gen) uuid() string {
	return g.s(hexLow, 8) + "-" + g.s(hexLow, 4) + "-4" + g.s(hexLow, 3) + "-" + pick(g, []string{"8", "9", "a", "b"}) + g.s(hexLow, 3) + "-" + g.s(hexLow, 12)
}

// words are for passphrases, human passwords, names of things.
var words = []string{"amber", "anchor", "apple", "arrow", "aspen", "badger", "bamboo", "beacon", "birch", "blossom",
	"breeze", "canyon", "cedar", "cobalt", "comet", "coral", "cricket", "crystal", "dahlia", "delta", "ember", "falcon",
	"fennel", "fjord", "forest", "galaxy", "garnet", "glacier", "granite", "harbor", "hazel", "heron", "indigo", "iris",
	"jasper", "juniper", "kestrel", "lagoon", "lantern", "lemon", "lilac", "lotus", "maple", "marble", "meadow", "meteor",
	"mint", "nectar", "nimbus", "oak", "olive", "onyx", "orchid", "otter", "pebble", "pepper", "pine", "plum", "prairie",
	"quartz", "raven", "reef", "river", "saffron", "sage", "sequoia", "sierra", "spruce", "summit", "thistle", "tiger",
	"topaz", "tundra", "velvet", "violet", "walnut", "willow", "winter", "zephyr"}

// password returns a password of one of the shapes people and password
// managers make: random, random with symbols, word-and-digits, passphrase,
// hex, base64. safe restricts symbols to ones an unquoted value in a
// config file or shell keeps literally.
func (g *gen) password(safe bool) string {
	syms := "!#%*-_+=.~@^"
	if !safe {
		syms += "$&()[]{}<>;,:?/|"
	}
	switch g.r.IntN(6) {
	case 0:
		return g.s(alnum, g.n(14, 32))
	case 1:
		b := []byte(g.s(alnum, g.n(12, 24)))
		for range g.n(2, 4) {
			b[g.r.IntN(len(b))] = syms[g.r.IntN(len(syms))]
		}
		return string(b)
	case 2:
		w := pick(g, words)
		return strings.ToUpper(w[:1]) + w[1:] + g.s(digits, g.n(2, 4)) + string(syms[g.r.IntN(len(syms))])
	case 3:
		return pick(g, words) + "-" + pick(g, words) + "-" + pick(g, words) + "-" + g.s(digits, 2)
	case 4:
		return g.s(hexLow, 32)
	}
	return g.b64pad(g.n(22, 42))
}

// urlPassword returns a password written as URL userinfo holds it: what is
// not unreserved is percent-encoded.
func (g *gen) urlPassword() string {
	pw := g.password(false)
	var b strings.Builder
	for i := 0; i < len(pw); i++ {
		c := pw[i]
		if strings.IndexByte(alnum+"-._~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// Name forms of a variable given in UPPER_SNAKE.
func snake(name string) string { return strings.ToLower(name) }

func kebab(name string) string { return strings.ReplaceAll(strings.ToLower(name), "_", "-") }

func dotted(name string) string { return strings.ReplaceAll(strings.ToLower(name), "_", ".") }

func camel(name string) string {
	parts := strings.Split(strings.ToLower(name), "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

func pascal(name string) string {
	c := camel(name)
	return strings.ToUpper(c[:1]) + c[1:]
}

// Places things live: hosts, users, databases, regions.
var (
	dbUsers  = []string{"app", "api", "svc_orders", "reporting", "admin", "deploy", "analytics", "billing_rw", "etl", "web", "backend", "readonly"}
	dbNames  = []string{"orders", "app_production", "inventory", "analytics", "users", "billing", "events", "catalog", "crm", "ledger"}
	regions  = []string{"us-east-1", "eu-west-1", "eu-central-1", "ap-southeast-2", "us-west-2"}
	services = []string{"checkout", "payments", "search", "notifier", "ingest", "gateway", "scheduler", "reports", "auth", "sync"}
)

func (g *gen) host(kind string) string {
	svc := pick(g, services)
	switch kind {
	case "rds":
		return fmt.Sprintf("%s-db.%s.%s.rds.amazonaws.com", svc, g.s(lowAN, 12), pick(g, regions))
	case "azure-sql":
		return fmt.Sprintf("%s-sql-%s.database.windows.net", svc, g.s(lowAN, 5))
	case "atlas":
		return fmt.Sprintf("cluster0.%s.mongodb.net", g.s(lowAN, 5))
	case "internal":
		return fmt.Sprintf("%s-db.%s.svc.cluster.local", svc, pick(g, []string{"prod", "staging", "data"}))
	}
	return pick(g, []string{
		svc + "-db.internal",
		svc + ".db.example.com",
		"10.0." + fmt.Sprint(g.n(0, 20)) + "." + fmt.Sprint(g.n(2, 250)),
		svc + "-primary.prod.example.net",
		"db" + fmt.Sprint(g.n(1, 9)) + ".corp.example.org",
		"localhost",
	})
}

func (g *gen) timestamp() string {
	return fmt.Sprintf("2026-%02d-%02dT%02d:%02d:%02d.%03dZ", g.n(1, 12), g.n(1, 28), g.n(0, 23), g.n(0, 59), g.n(0, 59), g.n(0, 999))
}

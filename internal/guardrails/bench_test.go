package guardrails

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/purko-io/mcp-hub/internal/guardrails/detect"
	"github.com/purko-io/mcp-hub/internal/guardrails/normalize"
	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// BenchmarkFilterResult is what both content filters cost a 100 KB result
// (redacting what they find), against the result itself (b.SetBytes); and
// a 100 KB result of prose that their prefilters pass over (what looking
// for encoded text in it costs).
func BenchmarkFilterResult(b *testing.B) {
	prose, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text",
		"text": strings.Repeat("The quick brown fox jumps over a lazy dog; I said it twice. ", 1700)}}})
	for _, tc := range []struct {
		name     string
		findings bool
		raw      []byte
	}{{"clean", false, hubtest.ResultPage(false)}, {"two findings", true, hubtest.ResultPage(true)}, {"passed over", false, prose}} {
		b.Run(tc.name, func(b *testing.B) {
			g := New(Options{})
			spec := &toolspec.Guardrails{ContentFilters: []string{"pii", "secrets"}}
			raw := tc.raw
			out, rep, err := g.Filter(context.Background(), spec, Result, raw)
			if err != nil || rep.Found() != tc.findings || !json.Valid(out) {
				b.Fatalf("report %+v, error %v", rep, err)
			}
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, _, err := g.Filter(context.Background(), spec, Result, raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFilterStages is where BenchmarkFilterResult's clean case
// spends its time: each pass Filter makes over the 100 KB result, alone.
// The passes add up to the whole; a one-pass design (issue 35) would
// replace them with one automaton over the bytes, whose floor on this
// machine is about what the secrets detector's keyword automaton alone
// costs (a DFA step per byte).
func BenchmarkFilterStages(b *testing.B) {
	raw := hubtest.ResultPage(false)
	var doc struct{ Content []struct{ Text string } }
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc.Content) != 1 {
		b.Fatalf("the result page: %v", err)
	}
	text := doc.Content[0].Text
	pii, secrets := detect.NewPII(), detect.NewSecrets()
	var reader normalize.Reader
	texts := &sync.Pool{New: func() any { return new([]byte) }}
	ctx := context.Background()
	if _, err := secrets.Find(ctx, text, nil); err != nil { // compile the rules
		b.Fatal(err)
	}
	for _, st := range []struct {
		name string
		run  func()
	}{
		{"pii prefilter", func() { pii.Maybe(raw) }},
		{"secrets prefilter", func() { secrets.Maybe(raw) }},
		{"walk", func() { _, _ = rewriteStrings(raw, nopEditor{}, texts) }},
		{"readings", func() { reader.Views(text, nil) }},
		{"secrets", func() { _, _ = secrets.Find(ctx, text, nil) }},
		{"pii", func() { pii.Find(text, nil) }},
	} {
		b.Run(st.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				st.run()
			}
		})
	}
}

// nopEditor changes nothing: the walk alone.
type nopEditor struct{}

func (nopEditor) edit([]string) ([][]cut, error) { return nil, nil }
func (nopEditor) binary(string) bool             { return false }

// BenchmarkFilterKinds is Filter on each of toolOutputs: the kinds of
// text where one rule's gate or one detector's candidates are dense, and
// a cliff in its cost would show (a 100 KB manifest took 31 ms when
// generic-key's gate opened on every "key:").
func BenchmarkFilterKinds(b *testing.B) {
	g := New(Options{})
	spec := &toolspec.Guardrails{ContentFilters: []string{"pii", "secrets"}}
	for name, raw := range toolOutputs() {
		b.Run(strings.ReplaceAll(name, " ", "_"), func(b *testing.B) {
			if _, _, err := g.Filter(context.Background(), spec, Result, raw); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, _, err := g.Filter(context.Background(), spec, Result, raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// textResult is a tools/call result of one text part.
func textResult(s string) []byte {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}})
	return b
}

// toolOutputs returns ~100 KB documents of the kinds of tool results
// that wake the detectors on every line: source code, a Kubernetes
// manifest, a lockfile, a user list (structured, 900 addresses and
// phone numbers to redact), an access log, Markdown docs, CSV.
func toolOutputs() map[string][]byte {
	docs := map[string][]byte{}
	var sb strings.Builder
	for i := 0; sb.Len() < 100_000; i++ {
		fmt.Fprintf(&sb, "func handle%d(w http.ResponseWriter, r *http.Request) {\n\ttoken := r.Header.Get(\"Authorization\") // auth header %d\n\tif err := validateKey(ctx, token, %d); err != nil {\n\t\treturn fmt.Errorf(\"checking secret %d: %%w\", err)\n\t}\n\tcfg.Password = os.Getenv(\"DB_PASSWORD_%d\")\n}\n", i, i, i, i, i)
	}
	docs["go source"] = textResult(sb.String())
	sb.Reset()
	for i := 0; sb.Len() < 100_000; i++ {
		fmt.Fprintf(&sb, "    \"node_modules/@types/pkg%d\": {\n      \"version\": \"1.%d.0\",\n      \"resolved\": \"https://registry.npmjs.org/@types/pkg%d/-/pkg%d-1.%d.0.tgz\",\n      \"integrity\": \"sha512-%s==\",\n      \"dev\": true\n    },\n", i, i, i, i, i, strings.Repeat("Ab3dEf9hIj", 8))
	}
	docs["package-lock"] = textResult(sb.String())
	sb.Reset()
	for i := 0; sb.Len() < 100_000; i++ {
		fmt.Fprintf(&sb, "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: web-%d\n    namespace: prod\n    labels: {app: web, tier: frontend}\n  spec:\n    containers:\n    - name: web\n      image: registry.example.com/web:1.%d\n      env:\n      - name: API_TOKEN\n        valueFrom:\n          secretKeyRef: {name: web-secrets, key: api-token}\n      - name: LOG_LEVEL\n        value: info\n", i, i)
	}
	docs["k8s yaml"] = textResult(sb.String())
	var users []map[string]any
	for i := 0; len(users) < 900; i++ {
		users = append(users, map[string]any{"id": i, "name": "Olga Kowalska", "email": fmt.Sprintf("olga%d@fabrikam.de", i), "phone": fmt.Sprintf("+49 30 9018%04d", i), "created": "2026-12-02T10:00:00Z"})
	}
	b, _ := json.Marshal(map[string]any{"content": []any{}, "structuredContent": map[string]any{"users": users}})
	docs["user list"] = b
	sb.Reset()
	for i := 0; sb.Len() < 100_000; i++ {
		fmt.Fprintf(&sb, "10.0.%d.%d - - [02/Dec/2026:15:%02d:%02d +0000] \"GET /api/v1/items?page=%d&sort=desc HTTP/1.1\" 200 %d \"https://app.example.com/dashboard\" \"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36\"\n", i%256, i%200, i%60, i%60, i, 1000+i)
	}
	docs["access log"] = textResult(sb.String())
	sb.Reset()
	for i := 0; sb.Len() < 100_000; i++ {
		fmt.Fprintf(&sb, "## Section %d\n\nTo configure the client, set the `token` in your config file and restart. The API key is read from the environment; see [the docs](https://docs.example.com/auth#keys) for details. Passwords are never stored.\n\n```yaml\nauth:\n  token: ${TOKEN}\n```\n\n", i)
	}
	docs["markdown docs"] = textResult(sb.String())
	sb.Reset()
	for i := 0; sb.Len() < 100_000; i++ {
		fmt.Fprintf(&sb, "%d,2026-12-%02d,ORDER-%06d,%d.%02d,EUR,DE89370400440532%06d,completed\n", i, 1+i%28, i*7, i%1000, i%100, i)
	}
	docs["csv orders"] = textResult(sb.String())
	return docs
}

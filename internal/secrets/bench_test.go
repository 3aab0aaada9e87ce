package secrets

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// benchResult is a 100 KB tool result: text content of ordinary words,
// with the secret, when there is one, in the middle.
func benchResult(b *testing.B, secret string) []byte {
	b.Helper()
	text := strings.Repeat("The quick brown fox jumps over the lazy dog; lorem ipsum dolor sit amet. ", 1400)
	if secret != "" {
		text = text[:len(text)/2] + "Authorization: Bearer " + secret + " " + text[len(text)/2:]
	}
	raw, err := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": text}}})
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// BenchmarkRedactResult100KB is the cost of redacting one 100 KB result
// with the credentials of a typical upstream (a bearer token, a static
// header, a URL query secret), against one pass over the same bytes that
// every result gets anyway (json.Valid).
func BenchmarkRedactResult100KB(b *testing.B) {
	const token = "s3cr3t-bearer-T0KEN-0123456789abcdef"
	r := NewRedactor("Bearer "+token, "k3y-in-a-header-42", "api_key=q-s3cr3t-in-url-7", "q-s3cr3t-in-url-7")
	for _, bc := range []struct {
		name   string
		secret string
		run    func([]byte) []byte
	}{
		{"unredacted-pass", "", func(raw []byte) []byte {
			if !json.Valid(raw) {
				panic("invalid")
			}
			return raw
		}},
		{"no-secret", "", func(raw []byte) []byte { return r.Result(raw) }},
		{"one-secret", token, func(raw []byte) []byte { return r.Result(raw) }},
	} {
		raw := benchResult(b, bc.secret)
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				out := bc.run(raw)
				if bc.secret != "" && bytes.Contains(out, []byte(bc.secret)) {
					b.Fatal("secret left in the result")
				}
			}
		})
	}
}

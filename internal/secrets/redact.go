// Package secrets keeps the credentials the hub sends for its upstreams and
// api tools where they belong: out of every text that leaves the hub (a
// Redactor), and off every request that leaves the origin they were meant
// for (the redirect policies). A server that echoes the request in its
// error body, or redirects to another host, must not get a credential out
// through the hub.
//
// It is a leaf: upstream and apitools both use it, and it imports nothing
// of this module.
package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
)

// Marker replaces a credential in redacted text.
const Marker = "[redacted]"

// minAnywhere is the length from which a secret is redacted wherever it
// occurs. A shorter one is redacted only where it stands as a word of its
// own: a header value "1" or "json" would otherwise mangle every message
// that contains the character or the word, and so hide the reason the
// message exists to give.
const minAnywhere = 8

// minCut is the shortest start of a secret that is redacted at the very end
// of a text: a body cut at a length limit may end in the first part of a
// secret.
const minCut = 4

// A Redactor removes a fixed set of credentials, in the forms a server may
// echo them, from text. It is built once per upstream or api tool and is
// safe for concurrent use.
type Redactor struct {
	secrets []string // longest first, no duplicates, none empty
}

// NewRedactor returns a Redactor of values (what the hub sends: a token, a
// whole header value, a query value). Each value is also redacted as a
// server may write it back: URL query- and path-escaped, JSON-escaped (also
// with escaped slashes),
// base64-encoded. Of a header value with an auth scheme ("Bearer x",
// "Basic eA==") the credential part is the secret, and for Basic also the
// decoded user:password and the password. Empty values are ignored.
func NewRedactor(values ...string) *Redactor {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, v := range values {
		for _, f := range forms(v) {
			add(f)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return &Redactor{secrets: out}
}

// forms returns v and the encodings under which it may come back.
func forms(v string) []string {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	out := []string{v}
	if scheme, cred, ok := strings.Cut(v, " "); ok && isScheme(scheme) && strings.TrimSpace(cred) != "" {
		// The scheme stays readable ("Bearer [redacted]"): it tells what
		// kind of credential the server complained about.
		cred = strings.TrimSpace(cred)
		out = []string{cred}
		if strings.EqualFold(scheme, "Basic") {
			if dec, err := base64.StdEncoding.DecodeString(cred); err == nil {
				out = append(out, string(dec))
				if _, pw, ok := strings.Cut(string(dec), ":"); ok {
					out = append(out, pw)
				}
			}
		}
	}
	for _, s := range slices.Clone(out) {
		out = append(out, url.QueryEscape(s), url.PathEscape(s), jsonEscaped(s, true), jsonEscaped(s, false),
			strings.ReplaceAll(jsonEscaped(s, false), "/", `\/`)) // PHP and Java escape slashes
		if len(s) >= minCut {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
				out = append(out, enc.EncodeToString([]byte(s)))
			}
		}
	}
	return out
}

// isScheme reports whether s looks like an HTTP auth scheme (Bearer, Basic,
// Token, Digest, ApiKey…): one short word of letters.
func isScheme(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// jsonEscaped is s as it appears between the quotes of a JSON string.
func jsonEscaped(s string, escapeHTML bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(s); err != nil {
		return s
	}
	return strings.TrimSuffix(strings.TrimSuffix(b.String(), "\n"), `"`)[1:]
}

// Empty reports whether there is nothing to redact.
func (r *Redactor) Empty() bool { return r == nil || len(r.secrets) == 0 }

// String returns s with every secret replaced by Marker. A secret cut off
// at the very end of s (a body read up to a limit) is replaced as well.
func (r *Redactor) String(s string) string {
	if r.Empty() || s == "" {
		return s
	}
	type span struct{ start, end int }
	var spans []span
	for _, sec := range r.secrets {
		for from := 0; from < len(s); {
			i := strings.Index(s[from:], sec)
			if i < 0 {
				break
			}
			start, end := from+i, from+i+len(sec)
			if len(sec) >= minAnywhere || (!wordByte(s, start-1) && !wordByte(s, end)) {
				spans = append(spans, span{start, end})
			}
			from = start + 1
		}
		if len(sec) > minCut {
			// The longest start of sec (at least minCut long) that ends s.
			base := max(0, len(s)-(len(sec)-1))
			tail := s[base:]
			for from := 0; ; {
				i := strings.Index(tail[from:], sec[:minCut])
				if i < 0 {
					break
				}
				p := from + i
				if n := len(tail) - p; strings.HasPrefix(sec, tail[p:]) && (n >= minAnywhere || !wordByte(s, base+p-1)) {
					spans = append(spans, span{base + p, len(s)})
					break
				}
				from = p + 1
			}
		}
	}
	if len(spans) == 0 {
		return s
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for i := 0; i < len(spans); {
		start, end := spans[i].start, spans[i].end
		for i++; i < len(spans) && spans[i].start < end; i++ {
			end = max(end, spans[i].end)
		}
		b.WriteString(s[last:start])
		b.WriteString(Marker)
		last = end
	}
	b.WriteString(s[last:])
	return b.String()
}

// wordByte reports whether s[i] exists and is a letter or digit: a short
// secret next to one is part of a longer word, not the secret.
func wordByte(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return false
	}
	c := s[i]
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// Error returns err with its text redacted. The result still unwraps to err,
// so errors.Is and errors.As classify it as before; its Error() is the text
// that may leave the hub.
func (r *Redactor) Error(err error) error {
	if err == nil || r.Empty() {
		return err
	}
	msg := err.Error()
	red := r.String(msg)
	if red == msg {
		return err
	}
	return &redactedError{msg: red, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// JSON returns raw with every secret redacted, or nil when the redaction
// would leave it invalid JSON (a short secret that was a whole number).
func (r *Redactor) JSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || r.Empty() {
		return raw
	}
	red := r.String(string(raw))
	if red == string(raw) {
		return raw
	}
	if !json.Valid([]byte(red)) {
		return nil
	}
	return json.RawMessage(red)
}

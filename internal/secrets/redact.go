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
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unsafe"
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
	// inResults are the secrets Result looks for: those of the values
	// that cannot be taken for a word of what a tool answers.
	inResults []string
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
	var out, inResults []string
	for _, v := range values {
		fs := forms(v)
		for _, f := range fs {
			if f != "" && !seen[f] {
				seen[f] = true
				out = append(out, f)
				if !wordLike(fs[0]) {
					inResults = append(inResults, f)
				}
			}
		}
	}
	longestFirst := func(a, b string) int { return len(b) - len(a) }
	slices.SortFunc(out, longestFirst)
	slices.SortFunc(inResults, longestFirst)
	return &Redactor{secrets: out, inResults: inResults}
}

// wordLike reports whether a credential could as well be a word of a
// tool's answer: shorter than minAnywhere, or under 16 characters of
// letters and separators only ("platform" in X-Team: platform,
// "production", "json" in ?format=json). Such values are configured
// headers and query parameters far more often than they are secrets, and
// redacting them from results would garble every answer that uses the
// word; tokens, keys and passwords of any strength have digits or
// symbols, or are longer. They are still redacted from errors and logs.
func wordLike(v string) bool {
	if len(v) < minAnywhere {
		return true
	}
	if len(v) >= 16 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || strings.IndexByte(" -_./", c) >= 0) {
			return false
		}
	}
	return true
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
	spans := find(s, r.secrets, false)
	if spans == nil {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	writeRedacted(&b, s, spans)
	return b.String()
}

// span is where a secret is in a text: [start, end).
type span struct{ start, end int }

// find returns where secrets are in s, sorted by start; nil when nowhere.
// longOnly looks only for those that are redacted wherever they occur
// (minAnywhere and longer).
func find(s string, secrets []string, longOnly bool) []span {
	var spans []span
	for _, sec := range secrets {
		if longOnly && len(sec) < minAnywhere {
			continue
		}
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
				if n := len(tail) - p; strings.HasPrefix(sec, tail[p:]) && (n >= minAnywhere || !wordByte(s, base+p-1)) && (!longOnly || n >= minAnywhere) {
					spans = append(spans, span{base + p, len(s)})
					break
				}
				from = p + 1
			}
		}
	}
	if len(spans) > 1 {
		slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	}
	return spans
}

// writeRedacted writes s to w with Marker in place of every span;
// overlapping spans make one marker.
func writeRedacted(w io.StringWriter, s string, spans []span) {
	last := 0
	for i := 0; i < len(spans); {
		start, end := spans[i].start, spans[i].end
		for i++; i < len(spans) && spans[i].start < end; i++ {
			end = max(end, spans[i].end)
		}
		_, _ = w.WriteString(s[last:start])
		_, _ = w.WriteString(Marker)
		last = end
	}
	_, _ = w.WriteString(s[last:])
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

// JSON returns raw with every secret redacted: raw itself, not copied,
// when it holds none. Where replacing in the text would leave it invalid
// JSON (a short secret that stood as a whole number, a secret whose
// escaped form split an escape sequence), the values are redacted one by
// one instead: every string, member names too, as String does, and a
// number only by a secret as long as minAnywhere (it becomes the string
// Marker); the members keep their order. It returns nil only when raw
// was not JSON to begin with and held a secret.
func (r *Redactor) JSON(raw json.RawMessage) json.RawMessage {
	if r.Empty() {
		return raw
	}
	return redactJSON(raw, r.secrets)
}

// Result is JSON for what a tool, a resource or a prompt answers: it
// looks for every secret but the word-like ones (see wordLike), which a
// result may hold as the words they are. It is made for the way of every
// result: a result without a secret costs one search per secret form
// and no allocation.
func (r *Redactor) Result(raw json.RawMessage) json.RawMessage {
	if r.Empty() {
		return raw
	}
	return redactJSON(raw, r.inResults)
}

func redactJSON(raw json.RawMessage, secrets []string) json.RawMessage {
	if len(raw) == 0 || len(secrets) == 0 {
		return raw
	}
	// A read-only view of raw for the search; it does not outlive the
	// call, and what is returned is raw itself or a copy.
	s := unsafe.String(unsafe.SliceData(raw), len(raw))
	spans := find(s, secrets, false)
	if spans == nil {
		return raw
	}
	var red bytes.Buffer
	red.Grow(len(raw))
	writeRedacted(&red, s, spans)
	if insideStrings(s, spans) || json.Valid(red.Bytes()) {
		return red.Bytes()
	}
	out, err := jsonValues(raw, secrets)
	if err != nil {
		return nil
	}
	return out
}

// insideStrings reports whether every span of the JSON text s is surely
// within a string, away from any escape sequence, so that Marker in its
// place leaves the JSON as valid as it was; a pass over the whole text is
// then not needed. A span is when it holds no quote, backslash or control
// byte (so it does not leave the string it is in), a byte that JSON has
// nowhere but in strings (so that is where it is: not in a number or a
// literal), and no backslash in the five bytes before it (which could be
// the start of an escape it would cut: \u0041).
func insideStrings(s string, spans []span) bool {
	for _, sp := range spans {
		if strings.IndexByte(s[max(0, sp.start-5):sp.start], '\\') >= 0 {
			return false
		}
		stringOnly := false
		for i := sp.start; i < sp.end; i++ {
			c := s[i]
			if c == '"' || c == '\\' || c < 0x20 {
				return false
			}
			if !strings.ContainsRune("0123456789+-.eEtrufalsn{}[],: ", rune(c)) {
				stringOnly = true
			}
		}
		if !stringOnly {
			return false
		}
	}
	return true
}

// jsonValues rewrites raw token by token with every string and number
// redacted.
func jsonValues(raw []byte, secrets []string) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out bytes.Buffer
	out.Grow(len(raw))
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	str := func(s string) error {
		if err := enc.Encode(s); err != nil {
			return err
		}
		out.Truncate(out.Len() - 1) // Encode ends the value with a newline
		return nil
	}
	// In each open container: whether it is an object, and how many
	// tokens (names and values) it has had.
	type frame struct {
		object bool
		n      int
	}
	var stack []frame
	sep := func() {
		if len(stack) == 0 {
			return
		}
		f := &stack[len(stack)-1]
		switch {
		case f.object && f.n%2 == 1:
			out.WriteByte(':')
		case f.n > 0:
			out.WriteByte(',')
		}
		f.n++
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				sep()
				stack = append(stack, frame{object: v == '{'})
			} else {
				stack = stack[:len(stack)-1]
			}
			out.WriteByte(byte(v))
		case string:
			sep()
			if spans := find(v, secrets, false); spans != nil {
				var b strings.Builder
				writeRedacted(&b, v, spans)
				v = b.String()
			}
			if err := str(v); err != nil {
				return nil, err
			}
		case json.Number:
			sep()
			if spans := find(string(v), secrets, true); spans != nil {
				if err := str(Marker); err != nil {
					return nil, err
				}
			} else {
				out.WriteString(string(v))
			}
		case bool:
			sep()
			out.WriteString(strconv.FormatBool(v))
		case nil:
			sep()
			out.WriteString("null")
		}
	}
	return out.Bytes(), nil
}

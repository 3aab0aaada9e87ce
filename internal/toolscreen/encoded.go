package toolscreen

import (
	"encoding/base64"
	"encoding/hex"
	"html"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Encoded payloads. A model decodes base64, hex, URL encoding and escape
// sequences without being asked, so an instruction written in one of them
// is still an instruction: each run of such text that decodes to text is
// screened as the text it decodes to, with every rule, the encoding named
// in the reason. A run that decodes to bytes that are not text (a digest,
// a PNG icon) is left alone: nothing there for a model to follow.

// Bounds of decoding: encodings inside encodings are followed twice deep,
// and at most maxDecoded bytes of decoded text are screened per
// definition, so a definition of megabytes of base64 costs no more than a
// large one.
const (
	maxDecodeDepth = 2
	maxDecoded     = 256 << 10
	minEncodedRun  = 16 // base64 of 12 bytes: "ignore all p"
	minEscapes     = 4  // escapes in one text before it is decoded whole
)

// encodings are the compiled expressions of the encoded runs.
type encodings struct {
	base64    *regexp.Regexp
	hexRun    *regexp.Regexp
	hexSpaced *regexp.Regexp
	escape    *regexp.Regexp // \uXXXX, \u{X}, \xXX, %XX, &#N; and &#xN;
}

func compileEncodings() *encodings {
	return &encodings{
		base64:    regexp.MustCompile(`[A-Za-z0-9+/_-]{16,}={0,2}`),
		hexRun:    regexp.MustCompile(`\b(?:0x)?(?:[0-9a-fA-F]{2}){10,}\b`),
		hexSpaced: regexp.MustCompile(`(?:[0-9a-fA-F]{2}[ :,-]){9,}[0-9a-fA-F]{2}`),
		escape:    regexp.MustCompile(`\\u\{[0-9a-fA-F]{1,6}\}|\\u[0-9a-fA-F]{4}|\\x[0-9a-fA-F]{2}|%[0-9a-fA-F]{2}|&#[xX][0-9a-fA-F]{1,6};|&#[0-9]{1,7};`),
	}
}

// encoded screens what the encoded runs of v decode to.
func (s *screener) encoded(where, v string) {
	if s.depth >= maxDecodeDepth || s.decoded >= maxDecoded || len(v) < minEncodedRun {
		return
	}
	e := s.re.enc
	if escapes := e.escape.FindAllStringIndex(v, minEscapes); len(escapes) >= minEscapes {
		if d := e.escape.ReplaceAllStringFunc(v, unescape); d != v {
			s.screenDecoded(where, "escape-decoded", d)
		}
	}
	for _, run := range e.base64.FindAllString(v, -1) {
		if d, ok := decodeBase64(run); ok {
			s.screenDecoded(where, "base64-decoded", d)
		}
	}
	for _, re := range []*regexp.Regexp{e.hexRun, e.hexSpaced} {
		for _, run := range re.FindAllString(v, -1) {
			run = strings.TrimPrefix(run, "0x")
			run = strings.NewReplacer(" ", "", ":", "", ",", "", "-", "").Replace(run)
			if b, err := hex.DecodeString(run); err == nil && isText(b) {
				s.screenDecoded(where, "hex-decoded", string(b))
			}
		}
	}
}

// screenDecoded screens decoded text d of where, the encoding named in
// the reasons of its hits.
func (s *screener) screenDecoded(where, how, d string) {
	if s.decoded >= maxDecoded {
		return
	}
	s.decoded += len(d)
	s.depth++
	defer func() { s.depth-- }()
	defer s.noted(how + ": ")()
	s.text(where, d)
}

// decodeBase64 decodes a run in any of base64's alphabets, padded or
// not; ok when it is text.
func decodeBase64(run string) (string, bool) {
	trimmed := strings.TrimRight(run, "=")
	enc := base64.RawStdEncoding
	if strings.ContainsAny(trimmed, "-_") {
		if strings.ContainsAny(trimmed, "+/") {
			return "", false
		}
		enc = base64.RawURLEncoding
	}
	// A run cut short (a missing last character) still decodes all but
	// its end.
	for cut := 0; cut < 4 && len(trimmed)-cut >= minEncodedRun; cut++ {
		b, err := enc.DecodeString(trimmed[:len(trimmed)-cut])
		if err == nil {
			return string(b), isText(b)
		}
	}
	return "", false
}

// isText says b is text a model reads: UTF-8, almost no control
// characters, mostly letters and digits, and a space between words.
func isText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	alnum, controls, spaces := 0, 0, 0
	for _, r := range string(b) {
		switch {
		case r == ' ' || r == '\n' || r == '\t' || r == '\r':
			spaces++
		case unicode.IsControl(r) || r == utf8.RuneError:
			controls++
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			alnum++
		}
	}
	n := utf8.RuneCount(b)
	return controls*20 <= n && alnum*2 >= n && spaces > 0
}

// unescape decodes one escape the escape expression matched.
func unescape(m string) string {
	switch {
	case strings.HasPrefix(m, `\u{`):
		return codeUnit(m[3:len(m)-1], 16)
	case strings.HasPrefix(m, `\u`):
		return codeUnit(m[2:], 16)
	case strings.HasPrefix(m, `\x`), strings.HasPrefix(m, "%"):
		// One byte of UTF-8: the bytes of a character follow each other.
		b, err := hex.DecodeString(m[len(m)-2:])
		if err != nil {
			return m
		}
		return string(b)
	default:
		return html.UnescapeString(m)
	}
}

func codeUnit(digits string, base int) string {
	n, err := strconv.ParseUint(digits, base, 32)
	if err != nil || n > unicode.MaxRune {
		return ""
	}
	return string(rune(n))
}

package normalize

import (
	"html"
	"strings"
	"unicode/utf8"
)

// unescape decodes the escapes in t (escape), twice when the first pass
// leaves escapes: "%255C" is "%5C" once decoded and "\" twice.
func unescape(t Text) Text {
	for range 2 {
		u, ok := unescapeOnce(t)
		if !ok {
			break
		}
		t = u
	}
	return t
}

// unescapeOnce decodes each escape of t.S; false when there is none.
func unescapeOnce(t Text) (Text, bool) {
	s := t.S
	// The next backslash, percent sign and ampersand, each found with one
	// IndexByte pass: most texts have none, or few.
	next := [3]int{nextByte(s, 0, '\\'), nextByte(s, 0, '%'), nextByte(s, 0, '&')}
	var w *builder
	var buf [utf8.UTFMax * 2]byte
	last := 0
	for {
		k := 0
		for j := 1; j < 3; j++ {
			if next[j] >= 0 && (next[k] < 0 || next[j] < next[k]) {
				k = j
			}
		}
		i := next[k]
		if i < 0 {
			break
		}
		out, n := escape(s, i, buf[:0])
		if n > 0 {
			if w == nil {
				src := t // only now on the heap
				w = &builder{src: &src, b: make([]byte, 0, len(s))}
			}
			w.keep(last, i)
			w.put(out, i, i+n)
			last = i + n
		}
		from := i + max(n, 1)
		for j := range next {
			if next[j] >= 0 && next[j] < from {
				next[j] = nextByte(s, from, "\\%&"[j])
			}
		}
	}
	if w == nil {
		return t, false
	}
	return w.text(last), true
}

func nextByte(s string, from int, c byte) int {
	if i := strings.IndexByte(s[from:], c); i >= 0 {
		return from + i
	}
	return -1
}

// escape decodes the escape at s[i:], one of \uXXXX (a UTF-16 surrogate pair
// as two), \u{X...}, \UXXXXXXXX, \xHH, %XX, %uXXXX and &#D...; &#xH...; &name;
// (the semicolon optional for the numeric ones, as browsers read them): it
// appends what the escape stands for to buf and returns it with the escape's
// length, 0 when s[i:] is no escape.
func escape(s string, i int, buf []byte) ([]byte, int) {
	rest := s[i:]
	switch {
	case strings.HasPrefix(rest, `\u{`):
		end := strings.IndexByte(rest, '}')
		if end < 4 || end > 9 {
			return nil, 0
		}
		if r, ok := hexRune(rest[3:end]); ok {
			return utf8.AppendRune(buf, r), end + 1
		}
	case strings.HasPrefix(rest, `\u`), strings.HasPrefix(rest, `%u`):
		r, ok := hexRune(cut(rest, 2, 6))
		if !ok {
			return nil, 0
		}
		if 0xD800 <= r && r < 0xDC00 && len(rest) >= 12 && rest[6] == rest[0] && rest[7] == 'u' {
			if lo, ok := hexRune(rest[8:12]); ok && 0xDC00 <= lo && lo < 0xE000 {
				return utf8.AppendRune(buf, 0x10000+(r-0xD800)<<10+(lo-0xDC00)), 12
			}
		}
		if 0xD800 <= r && r < 0xE000 {
			return nil, 0 // a lone surrogate stands for nothing
		}
		return utf8.AppendRune(buf, r), 6
	case strings.HasPrefix(rest, `\U`):
		if r, ok := hexRune(cut(rest, 2, 10)); ok && utf8.ValidRune(r) {
			return utf8.AppendRune(buf, r), 10
		}
	case strings.HasPrefix(rest, `\x`):
		if r, ok := hexRune(cut(rest, 2, 4)); ok {
			return append(buf, byte(r)), 4
		}
	case rest[0] == '%':
		return percent(rest, buf)
	case strings.HasPrefix(rest, "&#"):
		return charRef(rest, buf)
	case rest[0] == '&':
		end := 1
		for end < len(rest) && end <= 32 && isAlnum(rest[end]) {
			end++
		}
		if end > 2 && end < len(rest) && rest[end] == ';' {
			if u := html.UnescapeString(rest[:end+1]); u != rest[:end+1] {
				return append(buf, u...), end + 1
			}
		}
	}
	return nil, 0
}

// percent decodes a %XX escape, or the run of them that spells one UTF-8
// character (%C3%A9). A byte that starts no valid character is left as it
// is: "%DB_PASSWORD%" is a placeholder, not the byte 0xDB.
func percent(rest string, buf []byte) ([]byte, int) {
	var b [utf8.UTFMax]byte
	n := 0
	for i := 0; n < len(b); i += 3 {
		r, ok := hexRune(cut(rest, i+1, i+3))
		if !ok || rest[i] != '%' {
			break
		}
		b[n] = byte(r)
		n++
		if n == 1 && r < utf8.RuneSelf {
			return append(buf, b[0]), 3
		}
		if utf8.FullRune(b[:n]) {
			if r, size := utf8.DecodeRune(b[:n]); r != utf8.RuneError && size == n {
				return append(buf, b[:n]...), 3 * n
			}
			break
		}
	}
	return nil, 0
}

// charRef decodes a numeric character reference, &#65; or &#x41;.
func charRef(rest string, buf []byte) ([]byte, int) {
	start, base := 2, 10
	if len(rest) > 2 && (rest[2] == 'x' || rest[2] == 'X') {
		start, base = 3, 16
	}
	end := start
	var r rune
	for end < len(rest) && end-start < 8 {
		d := digitValue(rest[end])
		if d < 0 || d >= base {
			break
		}
		r = r*rune(base) + rune(d)
		end++
	}
	if end == start || r == 0 || !utf8.ValidRune(r) {
		return nil, 0
	}
	if end < len(rest) && rest[end] == ';' {
		end++
	}
	return utf8.AppendRune(buf, r), end
}

// cut returns s[i:j], or "" when s is shorter.
func cut(s string, i, j int) string {
	if len(s) < j {
		return ""
	}
	return s[i:j]
}

// hexRune reads hex digits, all of them (1 to 8).
func hexRune(h string) (rune, bool) {
	if h == "" || len(h) > 8 {
		return 0, false
	}
	var r rune
	for i := 0; i < len(h); i++ {
		d := digitValue(h[i])
		if d < 0 || d >= 16 {
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

func digitValue(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

package resultcap

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// A character is a Unicode code point, as the executor counts them. In
// valid UTF-8 each begins with a byte that is not a continuation byte
// (10xxxxxx), so counting them is counting those bytes, eight at a time:
// a text of 100,000 characters is counted in microseconds, where decoding
// it rune by rune takes a hundred.

// runeCount is the number of characters of b, an invalid byte counting
// one, as utf8.RuneCount counts them. (utf8.RuneCount copies the text
// from its first non-ASCII byte on to count it as a string.)
func runeCount(b []byte) int {
	if !utf8.Valid(b) {
		n := 0
		for i := 0; i < len(b); n++ {
			_, size := utf8.DecodeRune(b[i:])
			i += size
		}
		return n
	}
	n, i := len(b), 0
	for ; i+8 <= len(b); i += 8 {
		n -= continuations(binary.LittleEndian.Uint64(b[i:]))
	}
	for ; i < len(b); i++ {
		if !utf8.RuneStart(b[i]) {
			n--
		}
	}
	return n
}

// prefix returns the first n characters of s, valid UTF-8.
func prefix(s []byte, n int) []byte {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		starts := 8 - continuations(binary.LittleEndian.Uint64(s[i:]))
		if starts > n {
			break // the character after the first n begins in these eight bytes
		}
		n -= starts
	}
	for ; i < len(s); i++ {
		if utf8.RuneStart(s[i]) {
			if n == 0 {
				return s[:i]
			}
			n--
		}
	}
	return s
}

// continuations is the number of continuation bytes among the eight of w:
// those with the top bit set and the next clear.
func continuations(w uint64) int {
	return bits.OnesCount64(w &^ (w << 1) & 0x8080808080808080)
}

package detect

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestSkipSilent holds the eight-bytes-at-a-time skip to the class table:
// every byte value, at every place of a word and of the tail read byte
// by byte, stops it exactly when the table says it starts something Find
// reads.
func TestSkipSilent(t *testing.T) {
	const n = 21 // two words and a tail of five
	for b := range 256 {
		stops := class[b]&cSilent == 0
		for at := range n {
			text := []byte(strings.Repeat("a", n))
			text[at] = byte(b)
			want := n
			if stops {
				want = at
			}
			if got := skipSilent(string(text), 0); got != want {
				t.Fatalf("byte %#02x at %d of %d: skipped to %d, want %d", b, at, n, got, want)
			}
			if at > 0 {
				if got := skipSilent(string(text), at); got != want {
					t.Fatalf("byte %#02x at %d, from %d: skipped to %d, want %d", b, at, at, got, want)
				}
			}
		}
	}
}

// TestLastOpening holds lastOpening to strings.LastIndex on random parts of
// a numeric run.
func TestLastOpening(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 6))
	for range 20_000 {
		b := make([]byte, r.IntN(24))
		for i := range b {
			b[i] = " (()0-+."[r.IntN(8)]
		}
		s := string(b)
		if got, want := lastOpening(s), strings.LastIndex(s, " ("); got != want {
			t.Fatalf("lastOpening(%q) = %d, want %d", s, got, want)
		}
	}
}

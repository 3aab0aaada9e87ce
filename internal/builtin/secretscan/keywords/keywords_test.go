package keywords

import (
	"cmp"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestHits holds the automaton to a plain search of the
// lower-cased text, on random texts of keyword pieces read as one piece
// and, from twoHalves bytes on, as two interleaved halves: occurrences
// across the halves' boundary, in the second reader's lead-in and
// overlapping ones are all found, once each. A few keywords make a table
// of 16-bit states, thousands one of 32-bit states: both are held.
func TestHits(t *testing.T) {
	keywords := []string{"token", "ke", "key", "-----begin", "api", "pi_", "xox", "sk-ant-", "ß"}
	k := New(keywords)
	if k.next == nil {
		t.Fatalf("%d keywords: not a table of 16-bit states", len(keywords))
	}
	pieces := []string{"ToKeN", "KEY", "k", "e", "-----BEGIN", "aPi", "_", "x", "o", "sk-", "ANT-", " ", "\n", "ß", "ẞ", "\u00df", "é", "#"}
	r := rand.New(rand.NewPCG(35, 5))
	checkHits(t, k, keywords, pieces, r, 300)

	many := make([]string, 6000)
	for i := range many {
		w := make([]byte, 4+r.IntN(8))
		for j := range w {
			w[j] = "abcdefghijklmnopqrstuvwxyz0123456789_-"[r.IntN(38)]
		}
		many[i] = string(w)
	}
	wide := New(many)
	if wide.wide == nil {
		t.Fatalf("%d keywords: not a table of 32-bit states", len(many))
	}
	pieces = append([]string{" ", "-", "Q"}, many[:200]...)
	for i := range pieces {
		if i%3 == 0 {
			pieces[i] = strings.ToUpper(pieces[i])
		}
	}
	checkHits(t, wide, many, pieces, r, 27)

	// A keyword (holding another) at every place against the halves'
	// boundary.
	for at := twoHalves/2 - 20; at < twoHalves/2+20; at++ {
		text := strings.Repeat(".", at) + "TOKEN" + strings.Repeat(".", twoHalves-at)
		got := k.Hits(text, nil)
		slices.SortFunc(got, func(a, b Hit) int { return a.Start - b.Start })
		if want := []Hit{{0, at, at + 5}, {1, at + 2, at + 4}}; !reflect.DeepEqual(got, want) {
			t.Errorf("token at %d of %d bytes: hits %v", at, len(text), got)
		}
		if !k.Any([]byte(text)) {
			t.Errorf("token at %d: Any false", at)
		}
	}
	if k.Any([]byte(strings.Repeat("tok en", 5000))) {
		t.Error("Any true on a text without keywords")
	}
}

// checkHits holds k's Hits and Any, on rounds random texts of pieces, to a plain
// search for keywords in the lower-cased text.
func checkHits(t *testing.T, k *Index, keywords, pieces []string, r *rand.Rand, rounds int) {
	t.Helper()
	lengths := []int{0, 1, 7, twoHalves - 1, twoHalves, twoHalves + 1, twoHalves + 17, 3 * twoHalves, 20_000}
	for round := range rounds {
		var sb strings.Builder
		for sb.Len() < lengths[round%len(lengths)] {
			sb.WriteString(pieces[r.IntN(len(pieces))])
		}
		text := sb.String()
		var want []Hit
		lower := []byte(text)
		for i, c := range lower {
			lower[i] = lowerASCII(c)
		}
		for kw, w := range keywords {
			for at := 0; ; at++ {
				i := strings.Index(string(lower[at:]), w)
				if i < 0 {
					break
				}
				at += i
				want = append(want, Hit{kw, at, at + len(w)})
			}
		}
		got := k.Hits(text, nil)
		order := func(a, b Hit) int { return cmp.Or(a.Start-b.Start, a.Keyword-b.Keyword) }
		slices.SortFunc(got, order)
		slices.SortFunc(want, order)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("text of %d bytes: %d hits, want %d\ngot  %v\nwant %v", len(text), len(got), len(want), got, want)
		}
		if found := k.Any([]byte(text)); found != (len(want) > 0) || k.AnyIn(text) != found {
			t.Fatalf("text of %d bytes: Any %v, AnyIn %v with %d hits", len(text), found, k.AnyIn(text), len(want))
		}
	}
}

// TestGrouped: each keyword gets its own occurrences, in text order, and
// no others, and a text grouped after another sees nothing of it.
func TestGrouped(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var g Grouped
	for round := range 50 {
		keywords := 1 + rng.IntN(20)
		var hits []Hit
		for i := range rng.IntN(200) {
			hits = append(hits, Hit{Keyword: rng.IntN(keywords), Start: i, End: i + 1})
		}
		g.Group(hits, keywords)
		for k := range keywords + 1 {
			var want []Hit
			for _, h := range hits {
				if h.Keyword == k {
					want = append(want, h)
				}
			}
			if got := g.Of(k); !slices.Equal(got, want) {
				t.Fatalf("round %d, keyword %d: %v, want %v", round, k, got, want)
			}
			if (len(want) > 0) != slices.Contains(g.Found(), k) {
				t.Fatalf("round %d: keyword %d found %v, its occurrences %d", round, k, g.Found(), len(want))
			}
		}
		if !slices.IsSorted(g.Found()) {
			t.Fatalf("round %d: keywords found out of order: %v", round, g.Found())
		}
	}
	g.Reset()
	if len(g.Found()) != 0 || slices.ContainsFunc(g.n, func(n int32) bool { return n != 0 }) || slices.ContainsFunc(g.end, func(n int32) bool { return n != 0 }) {
		t.Fatalf("Reset left %v, %v, %v", g.Found(), g.n, g.end)
	}
}

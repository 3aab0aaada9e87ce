// Package keywords finds a set of keywords in a text in one pass,
// ignoring ASCII case: the secret scanner's anchors, every occurrence of
// every rule's keywords, where its rules' regexes then run.
package keywords

import "slices"

// Index finds its keywords in a text, ignoring ASCII case.
//
// It is an Aho-Corasick automaton compiled into a DFA over byte classes:
// one table step per byte, upper-case ASCII read as lower case by the
// class table, so the text is neither copied nor lower-cased first (the
// coregx/ahocorasick automaton it replaced needed both, 0.31 ms per
// 100 KB). A step waits on the one before (a load of the next state), so a
// long text is read as two halves whose steps interleave, each its own
// chain of loads: 0.2 -> 0.1 ms per 100 KB on the benchmark machine.
type Index struct {
	// class maps a byte to its column: 0 for bytes in no keyword,
	// upper-case ASCII letters to the column of their lower case.
	class [256]uint32
	// width is the number of columns, even; a state is numbered by half
	// the offset of its row (row*width/2), so a step is
	// next[2*state+class[c]], and the hub's 1,694 states of 48 columns
	// are numbered in 16 bits.
	width uint32
	// next is the table when the numbers fit in 16 bits, else wide: half
	// the bytes of a table of 32-bit numbers, so twice the rows stay in
	// the first-level cache. On the benchmark page with the hub's rules,
	// 0.17 -> 0.13 ms per 100 KB (a table that stays in that cache: 0.08).
	next []uint16
	wide []uint32
	// report: the states from report on end an occurrence of a keyword;
	// ends[(state-report)/(width/2)] lists those keywords.
	report uint32
	ends   [][]int32
	lens   []int // of each keyword
	maxLen int
}

// twoHalves is the shortest text read as two interleaved halves: below
// it the second half's lead-in (maxLen bytes read twice) and the set-up
// cost more than they save.
const twoHalves = 1024

// New compiles the keywords (ASCII case is ignored in them too). An
// empty keyword is in every text: New returns nil for it, or for none.
func New(keywords []string) *Index {
	if len(keywords) == 0 || slices.Contains(keywords, "") {
		return nil
	}
	k := &Index{lens: make([]int, len(keywords))}
	width := uint32(1)
	for i, w := range keywords {
		k.lens[i] = len(w)
		k.maxLen = max(k.maxLen, len(w))
		for j := range len(w) {
			if c := lowerASCII(w[j]); k.class[c] == 0 {
				k.class[c] = width
				width++
			}
		}
	}
	for c := 'A'; c <= 'Z'; c++ {
		k.class[c] = k.class[c+'a'-'A']
	}
	width += width % 2 // an unused column, so that a row's offset halves
	k.width = width

	// The trie: goto_[s*width+c] is the child of s over column c, or -1.
	goto_ := []int32{}
	grow := func() int32 {
		for range width {
			goto_ = append(goto_, -1)
		}
		return int32(len(goto_))/int32(width) - 1
	}
	grow() // the root, 0
	terminal := map[int32][]int32{}
	for i, w := range keywords {
		s := int32(0)
		for j := range len(w) {
			at := s*int32(width) + int32(k.class[lowerASCII(w[j])])
			if goto_[at] < 0 {
				child := grow()
				goto_[at] = child
			}
			s = goto_[at]
		}
		terminal[s] = append(terminal[s], int32(i))
	}
	states := len(goto_) / int(width)

	// Breadth first: each state's failure (its longest proper suffix in
	// the trie), its complete row, and the keywords ending at it.
	dfa := make([]int32, len(goto_))
	fail := make([]int32, states)
	out := make([][]int32, states) // the root's stays empty
	queue := []int32{0}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if s != 0 {
			out[s] = append(slices.Clone(terminal[s]), out[fail[s]]...)
		}
		for c := range int32(width) {
			child := goto_[s*int32(width)+c]
			if child < 0 {
				if s == 0 {
					dfa[c] = 0
				} else {
					dfa[s*int32(width)+c] = dfa[fail[s]*int32(width)+c]
				}
				continue
			}
			dfa[s*int32(width)+c] = child
			if s != 0 {
				fail[child] = dfa[fail[s]*int32(width)+c]
			}
			queue = append(queue, child)
		}
	}

	// Number the states that end a keyword last, so one comparison
	// tells a step that reports from one that does not.
	half := width / 2
	order := make([]uint32, states) // old -> new, as numbered in next
	n := uint32(0)
	for pass := range 2 {
		for s := range states {
			if (len(out[s]) > 0) == (pass == 1) {
				order[s] = n * half
				n++
			}
		}
		if pass == 0 {
			k.report = n * half
		}
	}
	table := make([]uint32, len(dfa))
	k.ends = make([][]int32, states-int(k.report/half))
	for s := range states {
		row := 2 * order[s]
		for c := range width {
			table[row+c] = order[dfa[uint32(s)*width+c]]
		}
		if order[s] >= k.report {
			k.ends[(order[s]-k.report)/half] = out[s]
		}
	}
	if n*half <= 1<<16 {
		k.next = make([]uint16, len(table))
		for i, v := range table {
			k.next[i] = uint16(v)
		}
	} else {
		k.wide = table
	}
	return k
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// Hit is one occurrence of a keyword (its index in New's list):
// text[Start:End].
type Hit struct{ Keyword, Start, End int }

// Hits appends every occurrence of every keyword to out, overlapping ones
// too, in no particular order.
func (k *Index) Hits(text string, out []Hit) []Hit {
	if k.next != nil {
		out, _ = find(k, k.next, text, out, false)
	} else {
		out, _ = find(k, k.wide, text, out, false)
	}
	return out
}

// Any reports whether one of the keywords occurs in text.
func (k *Index) Any(text []byte) bool { return occurs(k, text) }

// AnyIn is Any for a string.
func (k *Index) AnyIn(text string) bool { return occurs(k, text) }

func occurs[T string | []byte](k *Index, text T) (found bool) {
	if k.next != nil {
		_, found = find(k, k.next, text, nil, true)
	} else {
		_, found = find(k, k.wide, text, nil, true)
	}
	return found
}

// find appends the occurrences in text to out, or with first
// stops at the first one (and appends nothing).
//
// A long text is read as text[:mid] and text[mid-maxLen:]: the second
// reader's state is right from mid on (a state is the longest suffix read
// that is in the trie, at most maxLen bytes), and it reports only the
// occurrences ending after mid.
func find[T string | []byte, E uint16 | uint32](k *Index, next []E, text T, out []Hit, first bool) ([]Hit, bool) {
	class, report := &k.class, k.report
	n := len(text)
	var s uint32 // the state of the reader that reads to the end
	at := 0      // where it starts
	if n >= twoHalves && n >= 4*k.maxLen {
		mid := (n + k.maxLen) / 2
		var a uint32
		j := mid - k.maxLen
		for i := 0; i < mid; i, j = i+1, j+1 {
			a = uint32(next[2*a+class[text[i]]])
			s = uint32(next[2*s+class[text[j]]])
			if max(a, s) < report {
				continue
			}
			if first {
				return out, true
			}
			if a >= report {
				out = k.ended(out, a, i+1)
			}
			if s >= report && j >= mid {
				out = k.ended(out, s, j+1)
			}
		}
		at = j // past mid: the second reader reads on alone
	}
	for i := at; i < n; i++ {
		s = uint32(next[2*s+class[text[i]]])
		if s >= report {
			if first {
				return out, true
			}
			out = k.ended(out, s, i+1)
		}
	}
	return out, false
}

// ended appends the occurrences of the keywords state s ends at end.
func (k *Index) ended(out []Hit, s uint32, end int) []Hit {
	for _, kw := range k.ends[(s-k.report)/(k.width/2)] {
		out = append(out, Hit{int(kw), end - k.lens[kw], end})
	}
	return out
}

// Grouped is the occurrences of keywords in one text ordered by keyword,
// so that a reader wanting a few keywords reads their occurrences, not all
// of them: a 100 KB text has hundreds, and the secret scanner a dozen
// rules to visit, each with its own keywords. Keep one for the next text:
// its buffers are reused, and Reset clears only the keywords a text held
// (a short string with two occurrences does not touch the entries of the
// 350 others).
type Grouped struct {
	byKeyword []Hit
	// found lists the keywords that occur, in order; of keyword k, n[k]
	// occur, and end[k] is where they end in byKeyword; both are zero for
	// the others.
	found  []int
	n, end []int32
}

// Group orders hits, occurrences of an Index of keywords keywords, by
// keyword (a counting sort over the keywords that occur), in text order
// within one.
func (g *Grouped) Group(hits []Hit, keywords int) {
	g.Reset()
	if len(g.n) < keywords {
		g.n, g.end = make([]int32, keywords), make([]int32, keywords)
	}
	for _, h := range hits {
		if g.n[h.Keyword] == 0 {
			g.found = append(g.found, h.Keyword)
		}
		g.n[h.Keyword]++
	}
	slices.Sort(g.found)
	at := int32(0)
	for _, k := range g.found {
		g.end[k] = at // where its occurrences begin, for now
		at += g.n[k]
	}
	g.byKeyword = slices.Grow(g.byKeyword[:0], len(hits))[:len(hits)]
	for _, h := range hits {
		g.byKeyword[g.end[h.Keyword]] = h
		g.end[h.Keyword]++
	}
}

// Found returns the keywords that occur, in order.
func (g *Grouped) Found() []int { return g.found }

// Of returns keyword k's occurrences, in text order.
func (g *Grouped) Of(k int) []Hit {
	if k >= len(g.n) {
		return nil
	}
	return g.byKeyword[g.end[k]-g.n[k] : g.end[k]]
}

// Reset forgets the text grouped last.
func (g *Grouped) Reset() {
	for _, k := range g.found {
		g.n[k], g.end[k] = 0, 0
	}
	g.found = g.found[:0]
}

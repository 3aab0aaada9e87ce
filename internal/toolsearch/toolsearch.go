// Package toolsearch ranks tools by how well their name and description
// match a query, so a caller facing a catalog of thousands of tools can ask
// for the few it needs instead of reading them all. An Index is built once
// per catalog (data, not request-path work) and searched many times; it
// imports nothing of the hub's, so the caller decides which tools a search
// may return (the same decision that lists and runs them).
package toolsearch

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"unicode"
)

// BM25 parameters: the usual k1 and b, and how much more a term in a tool's
// name counts than one in its description (a name says what a tool is).
const (
	k1         = 1.2
	b          = 0.75
	nameWeight = 3.0
)

// Doc is one tool as the index reads it.
type Doc struct {
	Name, Description string
}

// Index is an immutable BM25 index over a list of tools; it is safe for
// concurrent searches.
type Index struct {
	postings map[string][]posting // term -> docs holding it
	lengths  []float64            // weighted length of each doc
	avgLen   float64
}

type posting struct {
	doc int
	tf  float64 // weighted term frequency
}

// Hit is one ranked tool: its position in the docs given to New.
type Hit struct {
	Doc   int
	Score float64
}

// New indexes docs; hits name them by their position.
func New(docs []Doc) *Index {
	ix := &Index{postings: map[string][]posting{}, lengths: make([]float64, len(docs))}
	total := 0.0
	for i, d := range docs {
		tf := map[string]float64{}
		for _, t := range Terms(d.Name) {
			tf[t] += nameWeight
		}
		for _, t := range Terms(d.Description) {
			tf[t]++
		}
		n := 0.0
		for t, f := range tf {
			ix.postings[t] = append(ix.postings[t], posting{doc: i, tf: f})
			n += f
		}
		ix.lengths[i] = n
		total += n
	}
	if len(docs) > 0 {
		ix.avgLen = total / float64(len(docs))
	}
	return ix
}

// Len is the number of indexed tools.
func (ix *Index) Len() int { return len(ix.lengths) }

// Search returns at most limit tools that match query, best first (ties by
// position), among those keep accepts. keep runs only on matching tools.
func (ix *Index) Search(query string, limit int, keep func(doc int) bool) []Hit {
	if limit <= 0 || len(ix.lengths) == 0 {
		return nil
	}
	scores := map[int]float64{}
	n := float64(len(ix.lengths))
	seen := map[string]bool{}
	for _, t := range Terms(query) {
		if seen[t] {
			continue
		}
		seen[t] = true
		ps := ix.postings[t]
		if len(ps) == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
		for _, p := range ps {
			norm := p.tf * (k1 + 1) / (p.tf + k1*(1-b+b*ix.lengths[p.doc]/ix.avgLen))
			scores[p.doc] += idf * norm
		}
	}
	hits := make([]Hit, 0, len(scores))
	for d, s := range scores {
		if keep == nil || keep(d) {
			hits = append(hits, Hit{Doc: d, Score: s})
		}
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Doc, b.Doc)
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits
}

// stopwords carry no meaning in a query for a tool ("create a pull
// request for the repo").
var stopwords = map[string]bool{
	"a": true, "an": true, "the": true, "of": true, "to": true, "in": true, "on": true, "for": true,
	"and": true, "or": true, "by": true, "with": true, "from": true, "is": true, "it": true, "at": true,
	"as": true, "be": true, "this": true, "that": true, "me": true, "my": true, "i": true, "all": true,
}

// Terms splits text into lower-case search terms: words split on anything
// but letters and digits, and on camelCase humps (createPullRequest ->
// create, pull, request), stop words dropped, plurals folded to the
// singular, so a query and a tool name meet on the same terms.
func Terms(text string) []string {
	var out []string
	var word []rune
	flush := func() {
		if len(word) > 0 {
			w := stem(strings.ToLower(string(word)))
			if !stopwords[w] {
				out = append(out, w)
			}
			word = word[:0]
		}
	}
	rs := []rune(text)
	for i, r := range rs {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			// A hump: lower->Upper, or the last capital of an acronym
			// before a lower-case letter (HTTPServer -> HTTP, Server).
			if i > 0 && unicode.IsUpper(r) && len(word) > 0 {
				prev := rs[i-1]
				if unicode.IsLower(prev) || unicode.IsDigit(prev) ||
					(unicode.IsUpper(prev) && i+1 < len(rs) && unicode.IsLower(rs[i+1])) {
					flush()
				}
			}
			word = append(word, r)
		default:
			flush()
		}
	}
	flush()
	return out
}

// stem folds the common English plurals: issues -> issue, repositories ->
// repository, boxes -> box. It is deliberately small: a query word and a
// tool's word only need to fold to the same term.
func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 4 && (strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "sses")):
		return w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:len(w)-1]
	}
	return w
}

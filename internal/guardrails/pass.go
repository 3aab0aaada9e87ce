package guardrails

import (
	"context"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/purko-io/mcp-hub/internal/guardrails/detect"
	"github.com/purko-io/mcp-hub/internal/guardrails/normalize"
)

// joinReach is how far from the boundary of two text parts their join is
// read: a finding that reaches further into both is not found across them.
// 4 KiB holds any credential gitleaks knows, a private key block included.
const joinReach = 4096

// shortText is the longest string that the detectors' prefilters read on
// its own before the detectors run on it.
const shortText = 256

// pass filters one document: it reads each group of strings rewriteStrings
// offers, runs the detectors on each reading, maps what they find back to
// the strings and redacts it, or only counts it in block mode.
type pass struct {
	g   *Guard
	ctx context.Context
	p   *policy
	// pii, secrets: the detector's prefilter passed the raw document, so
	// it may find something in a string as it is. A reading that is not
	// the string itself is prefiltered on its own.
	pii, secrets bool
	// piiAnswer, until piiDoc has read it, is where the PII prefilter
	// running beside the walk answers (pii is then not yet known).
	piiAnswer <-chan bool

	reader  normalize.Reader
	views   []normalize.Text
	found   []detect.Finding
	spans   []span
	quoted  []byte
	counts  map[[2]string]int
	markers map[string]string // by rule (marker)

	viewBuf [4]normalize.Text
	spanBuf [4]span
}

func newPass(ctx context.Context, g *Guard, p *policy) *pass {
	ps := &pass{g: g, ctx: ctx, p: p}
	ps.views, ps.spans = ps.viewBuf[:0], ps.spanBuf[:0]
	return ps
}

// span is a finding in one string of a group: its bytes [from, to).
type span struct {
	part     int
	from, to int
	rule     string
	// cont: the piece of a finding across parts that continues one in
	// the part before (counted there).
	cont bool
}

// binary is the editor's.
func (ps *pass) binary(s string) bool { return ps.reader.Binary(s) }

// edit is the editor's: it redacts what the filters find in a group.
func (ps *pass) edit(group []string) ([][]cut, error) {
	ps.spans = ps.spans[:0]
	for i, s := range group {
		err := ps.read(s, true, func(from, to int, rule string) {
			ps.spans = append(ps.spans, span{part: i, from: from, to: to, rule: rule})
		})
		if err != nil {
			return nil, err
		}
	}
	if len(group) > 1 {
		if err := ps.readJoined(group); err != nil {
			return nil, err
		}
	}
	if len(ps.spans) == 0 {
		return nil, nil
	}
	sort.Slice(ps.spans, func(i, j int) bool {
		a, b := ps.spans[i], ps.spans[j]
		if a.part != b.part {
			return a.part < b.part
		}
		if a.from != b.from {
			return a.from < b.from
		}
		return a.to > b.to
	})
	if ps.counts == nil {
		ps.counts = map[[2]string]int{}
	}
	var out [][]cut
	if !ps.p.block {
		out = make([][]cut, len(group))
	}
	for lo := 0; lo < len(ps.spans); {
		part := ps.spans[lo].part
		hi := lo
		for hi < len(ps.spans) && ps.spans[hi].part == part {
			hi++
		}
		merged := joinSpans(ps.spans[lo:hi])
		for _, s := range merged {
			if !s.cont {
				ps.counts[[2]string{ps.p.filterOf(s.rule), s.rule}]++
			}
		}
		if out != nil {
			out[part] = ps.redactions(group[part], merged)
		}
		lo = hi
	}
	return out, nil
}

// redactions are the cuts that replace each span of s (sorted, not
// overlapping) by its marker, "[redacted: rule]" or a regex filter's
// replacement: each whole characters, so the text written around it stays
// UTF-8 whatever bytes a detector's span began or ended in.
func (ps *pass) redactions(s string, spans []span) []cut {
	cuts := make([]cut, 0, len(spans))
	for _, f := range spans {
		from, to := f.from, f.to
		for from > 0 && from < len(s) && !utf8.RuneStart(s[from]) {
			from--
		}
		for to < len(s) && !utf8.RuneStart(s[to]) {
			to++
		}
		if n := len(cuts); n > 0 && from < cuts[n-1].to {
			from, to = cuts[n-1].to, max(to, cuts[n-1].to) // widened into the one before
		}
		cuts = append(cuts, cut{from: from, to: to, with: ps.marker(f.rule)})
	}
	return cuts
}

// marker is what replaces a finding of rule: "[redacted: rule]", or a
// regex filter's replacement; made once a pass (a list of 900 addresses
// has 900 findings of one rule).
func (ps *pass) marker(rule string) string {
	if m, ok := ps.markers[rule]; ok {
		return m
	}
	m := "[redacted: " + rule + "]"
	if i := slices.Index(ps.p.regexRules, rule); i >= 0 {
		m = ps.p.replacements[i]
	}
	if ps.markers == nil {
		ps.markers = map[string]string{}
	}
	ps.markers[rule] = m
	return m
}

// joinSpans joins the overlapping spans of one part (sorted by from, the
// longer first) in place: a finding is redacted whole even where another
// overlaps it. A joined span keeps the rule of its first.
func joinSpans(spans []span) []span {
	out := spans[:1]
	for _, s := range spans[1:] {
		last := &out[len(out)-1]
		if s.from < last.to {
			last.to = max(last.to, s.to)
			last.cont = last.cont || s.cont
			continue
		}
		out = append(out, s)
	}
	return out
}

// read runs the detectors on each reading of s and calls hit with the
// bytes of s that produced each finding. asIs: s is a string of the
// document, so the document's prefilter speaks for it as it is.
func (ps *pass) read(s string, asIs bool, hit func(from, to int, rule string)) error {
	if asIs && ps.secrets && len(s) >= overlapFrom {
		return ps.readLong(s, hit)
	}
	ps.views = ps.reader.Views(s, ps.views[:0])
	for k := range ps.views {
		if err := ps.readView(&ps.views[k], asIs, hit); err != nil {
			return err
		}
	}
	return nil
}

// readView runs the detectors on one reading of a string (see read).
func (ps *pass) readView(v *normalize.Text, asIs bool, hit func(from, to int, rule string)) error {
	// later: PII's answer on the document is pending, and asked for once
	// the secrets detector has read the string.
	pii, secrets, later := ps.pii, ps.secrets, ps.piiAnswer != nil
	switch {
	case !asIs || !v.Verbatim():
		pii, secrets = ps.maybe(v.S)
		later = false
	case (pii || later || secrets) && len(v.S) <= shortText:
		// A short string (a name, an enum value) costs a detector more
		// to set up than its prefilter to read; its own prefilter alone
		// is enough for PII (the document's is a shortcut).
		mp, ms := ps.maybe(v.S)
		pii, secrets = (pii || later) && mp, secrets && ms
		later = false
	}
	if !pii && !later && !secrets && len(ps.p.regexes) == 0 {
		return nil
	}
	found, err := ps.g.find(ps.ctx, ps.p, pii, secrets, v.S, ps.found[:0])
	if err != nil {
		return err
	}
	if later && ps.piiDoc() {
		found = ps.g.findPII(v.S, found)
	}
	for _, f := range found {
		from, to := v.Span(f.Start, f.End)
		hit(from, to, f.Rule)
	}
	ps.found = found[:0]
	return nil
}

// readLong reads a long string of the document, one the secrets detector
// reads (a tool's 100 KB text): while that detector reads the string and
// then its other readings are worked out, another core runs PII on it
// (waiting there for the document prefilter's answer when that is
// pending); the other readings are read after, one by one. The string is
// always one of its readings (normalize.Reader.Views).
//
// The shares are about even on the benchmark page: the secrets detector
// and the readings (0.2 + 0.09 ms in a loop) against PII (0.21 ms) and
// the other goroutine's start (0.05-0.15 ms in situ).
func (ps *pass) readLong(s string, hit func(from, to int, rule string)) error {
	type side struct {
		doc   bool // PII's answer on the document
		found []detect.Finding
	}
	var done chan side // none when the document holds no PII
	if ps.pii || ps.piiAnswer != nil {
		done = make(chan side, 1)
		doc, answer := ps.pii, ps.piiAnswer
		go func() {
			r := side{doc: doc}
			if answer != nil {
				r.doc = <-answer
			}
			if r.doc {
				r.found = ps.g.findPII(s, nil)
			}
			done <- r
		}()
	}
	found, err := ps.g.find(ps.ctx, ps.p, false, true, s, ps.found[:0])
	ps.views = ps.reader.Views(s, ps.views[:0])
	if done != nil {
		r := <-done
		ps.pii, ps.piiAnswer = r.doc, nil
		found = append(found, r.found...)
	}
	if err != nil {
		return err
	}
	for _, f := range found {
		hit(f.Start, f.End, f.Rule)
	}
	ps.found = found[:0]
	for k := range ps.views {
		if v := &ps.views[k]; !v.Verbatim() {
			if err := ps.readView(v, true, hit); err != nil {
				return err
			}
		}
	}
	return nil
}

// piiDoc waits for the PII prefilter's answer on the document, when it
// runs beside the walk, and returns it.
func (ps *pass) piiDoc() bool {
	if ps.piiAnswer != nil {
		ps.pii = <-ps.piiAnswer
		ps.piiAnswer = nil
	}
	return ps.pii
}

// maybe asks the policy's detectors' prefilters about a reading.
func (ps *pass) maybe(text string) (pii, secrets bool) {
	if !ps.p.pii && !ps.p.secrets {
		return false, false
	}
	// The prefilters read JSON; invalid UTF-8 is quoted as U+FFFD (the
	// error says only that), which no finding holds.
	ps.quoted, _ = jsontext.AppendQuote(ps.quoted[:0], text)
	return ps.p.pii && ps.g.pii().Maybe(ps.quoted), ps.p.secrets && ps.g.secrets().Maybe(ps.quoted)
}

// readJoined reads the join of a group's texts within joinReach of each
// boundary between two of them, and splits each finding there into its
// pieces in each text.
func (ps *pass) readJoined(group []string) error {
	join := strings.Join(group, "")
	starts := make([]int, len(group)+1) // of each text in join; then len(join)
	for i, s := range group {
		starts[i+1] = starts[i] + len(s)
	}
	hit := func(from, to int, rule string) {
		first := true
		for k := range group {
			lo, hi := max(from, starts[k]), min(to, starts[k+1])
			if lo >= hi {
				continue
			}
			ps.spans = append(ps.spans, span{part: k, from: lo - starts[k], to: hi - starts[k], rule: rule, cont: !first})
			first = false
		}
	}
	var windows [][2]int // around each boundary, the overlapping ones joined
	for _, b := range starts[1:len(group)] {
		lo, hi := max(0, b-joinReach), min(len(join), b+joinReach)
		if n := len(windows); n > 0 && lo <= windows[n-1][1] {
			windows[n-1][1] = hi
			continue
		}
		windows = append(windows, [2]int{lo, hi})
	}
	for _, w := range windows {
		lo, hi := w[0], w[1]
		for lo > 0 && !utf8.RuneStart(join[lo]) {
			lo--
		}
		for hi < len(join) && !utf8.RuneStart(join[hi]) {
			hi++
		}
		err := ps.read(join[lo:hi], false, func(from, to int, rule string) { hit(lo+from, lo+to, rule) })
		if err != nil {
			return err
		}
	}
	return nil
}

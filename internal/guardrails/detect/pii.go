package detect

import (
	"strings"

	"github.com/purko-io/mcp-hub/internal/guardrails/detect/phone"
)

// PII finds personal data: e-mail addresses, phone numbers, payment card
// numbers, IBANs, US social security numbers and the national ids of
// ids.go. Its only state is the phone number patterns it compiles on first
// use (safe for concurrent use), so one PII serves concurrent calls.
type PII struct {
	phones *phone.Rules
}

// NewPII returns a PII detector that reads national phone numbers as
// numbers of phone.NationalRegion (the US) and, written as their country
// writes them or labelled, of the other phone.NationalRegions.
func NewPII() *PII {
	return &PII{phones: phone.New()}
}

// Byte classes of the candidate scan.
const (
	cDigit = 1 << iota
	cUpper
	cLower
	cRun   // may continue a numeric run: digit, space, - . ( ) +
	cLocal // may be in an e-mail's local part
	cHost  // may be in an e-mail's domain
	// cQuiet starts nothing Find or Maybe reads (no digit, upper-case
	// letter, '@', '\\' or numeric run byte): a scan skips runs of them.
	cQuiet
	// cSilent starts nothing Find reads (no digit, upper-case letter or
	// '@'): what Find skips, white space among it (a numeric run is read
	// back from its first digit).
	cSilent
)

var class = func() (t [256]uint8) {
	for c := '0'; c <= '9'; c++ {
		t[c] |= cDigit | cRun | cLocal | cHost
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] |= cUpper | cLocal | cHost
		t[c+'a'-'A'] |= cLower | cLocal | cHost
	}
	for _, c := range " -.()+" {
		t[c] |= cRun
	}
	for _, c := range "._%+-" {
		t[c] |= cLocal
	}
	for _, c := range ".-" {
		t[c] |= cHost
	}
	for c := range t {
		if t[c]&(cDigit|cUpper|cRun) == 0 && c != '@' && c != '\\' {
			t[c] |= cQuiet
		}
		if t[c]&(cDigit|cUpper) == 0 && c != '@' {
			t[c] |= cSilent
		}
	}
	return t
}()

func isAlnum(c byte) bool { return class[c]&(cDigit|cUpper|cLower) != 0 }

// isWordByte reports whether c continues a token: a run or address next to
// it is part of something longer (an id, a hash, a path).
func isWordByte(c byte) bool { return isAlnum(c) || c == '_' }

// Find appends the personal data in text to out, in order of Start,
// non-overlapping.
func (p *PII) Find(text string, out []Finding) []Finding {
	n := len(text)
	done := 0 // numeric runs before this offset are decided
	for i := 0; i < n; i++ {
		c := text[i]
		k := class[c]
		switch {
		case k&cSilent != 0:
			i = skipSilent(text, i+1) - 1
		case k&cDigit != 0:
			if i < done {
				continue
			}
			end := runEnd(text, i)
			if (i == 0 || !isWordByte(text[i-1])) && mayHoldLetter(text, i, end) {
				if e, rule := digitLetterID(text, i); rule != "" {
					out = appendAfter(out, Finding{rule, i, e})
					done = e
					i = e - 1
					continue
				}
			}
			start := i
			for start > done && class[text[start-1]]&cRun != 0 {
				start--
			}
			end = slashJoin(text, start, end)
			out = p.numericRun(text, start, end, out)
			done = end
			i = end - 1
		case c == '@':
			if f, ok := findEmail(text, i); ok {
				out = appendAfter(out, f)
			}
		case k&cUpper != 0:
			if i > 0 && isWordByte(text[i-1]) {
				continue
			}
			end, rule := 0, ""
			if i+3 < n && class[text[i+1]]&cUpper != 0 && class[text[i+2]]&cDigit != 0 {
				if e, ok := findIBAN(text, i); ok {
					end, rule = e, RuleIBAN
				}
			}
			if rule == "" {
				end, rule = letterID(text, i, false)
			}
			if rule != "" {
				out = appendAfter(out, Finding{rule, i, end})
				i = end - 1
				done = end
			}
		}
	}
	return out
}

// numericRun splits the maximal run text[start:end] of digits, spaces and
// - . ( ) + into the numbers it lists (at " +" and at two or more
// separators in a row without a parenthesis) and decides each.
func (p *PII) numericRun(text string, start, end int, out []Finding) []Finding {
	from := start
	for i := start; i < end; {
		if class[text[i]]&cDigit != 0 {
			i++
			continue
		}
		j := i
		paren, plus := false, -1
		for j < end && class[text[j]]&cDigit == 0 {
			switch text[j] {
			case '(', ')':
				paren = true
			case '+':
				plus = j
			}
			j++
		}
		switch {
		case plus > start && j < end:
			out = p.part(text, from, plus, out)
			from = plus
		case j-i >= 2 && !paren && j < end:
			out = p.part(text, from, i, out)
			from = j
		}
		i = j
	}
	return p.part(text, from, end, out)
}

// part decides text[start:end]; when that finds nothing and the part has a
// " (" inside ("+31 6 1234 5678 (24/7)"), it decides the two sides of the
// last one.
func (p *PII) part(text string, start, end int, out []Finding) []Finding {
	n := len(out)
	out = p.numeric(text, start, end, out)
	if len(out) > n {
		return out
	}
	// Each side needs seven characters (numeric), so a part shorter than
	// nine is not split: most runs are a date or a count.
	if end-start < 9 {
		return out
	}
	if k := lastOpening(text[start:end]); k > 0 {
		out = p.numeric(text, start, start+k, out)
		out = p.numeric(text, start+k+1, end, out)
	}
	return out
}

// lastOpening is strings.LastIndex(s, " ("), without its set-up, which
// cost more than the search: a part is short, and most hold no
// parenthesis (a date, a time).
func lastOpening(s string) int {
	for k := strings.LastIndexByte(s, '('); k > 0; k = strings.LastIndexByte(s[:k], '(') {
		if s[k-1] == ' ' {
			return k - 1
		}
	}
	return -1
}

// skipSilent returns where the first byte from i on that is not silent
// is (a digit, an upper-case ASCII letter or '@'), len(text) if none. It
// reads eight bytes at a time: most bytes of a text are silent.
func skipSilent(text string, i int) int {
	for ; i+8 <= len(text); i += 8 {
		b := text[i : i+8]
		x := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		if between(x, '0'-1, '9'+1)|between(x, '@'-1, 'Z'+1) != 0 {
			break
		}
	}
	for i < len(text) && class[text[i]]&cSilent != 0 {
		i++
	}
	return i
}

// between has the high bit set in each byte of x that is above m and
// below n, with m <= 127 and n <= 128 ("hasbetween", Sean Eron Anderson's
// Bit Twiddling Hacks, public domain): no byte borrows from or carries
// into its neighbour, so each byte is decided alone.
func between(x uint64, m, n uint64) uint64 {
	const ones, low7, high = 0x0101010101010101, 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	return (ones*(127+n) - x&low7) &^ x & (x&low7 + ones*(127-m)) & high
}

// numeric decides what text[start:end], a part of a run, holds: a card
// number, an SSN, a national id or a phone number. It is trimmed to its
// digits (and a leading '+' or parenthesis); the characters around it must
// end a token.
func (p *PII) numeric(text string, start, end int, out []Finding) []Finding {
	for start < end && !(class[text[start]]&cDigit != 0 || text[start] == '+' || text[start] == '(') {
		start++
	}
	for end > start && !(class[text[end-1]]&cDigit != 0 || text[end-1] == ')') {
		end--
	}
	if end-start < 7 || (start > 0 && !mayStartAfter(text, start)) || (end < len(text) && !mayEndBefore(text, end)) {
		return out
	}
	// Parentheses around the whole number are the text's, not its own:
	// "(PESEL 11320289493)", "(320625-1458264)".
	opens, closes := strings.Count(text[start:end], "("), strings.Count(text[start:end], ")")
	switch {
	case text[end-1] == ')' && closes == 1 && (opens == 0 || opens == 1 && text[start] == '('):
		end--
		if opens == 1 {
			start++
		}
	case text[start] == '(' && opens == 1 && closes == 0:
		start++
	}
	run := text[start:end]
	s := shapeOf(run)
	if s.digits < 7 {
		return out
	}
	d := s.digitsOf(run)
	if s.isSSN() {
		if validSSN(d) {
			return appendAfter(out, Finding{RuleUSSSN, start, end})
		}
		return out
	}
	if s.digits >= 13 && s.digits <= 19 && s.mayBeCard() {
		if testCards[d] {
			return out
		}
		if validCard(d) {
			return appendAfter(out, Finding{RulePaymentCard, start, end})
		}
	}
	if rule := writtenID(text, start, &s, d); rule != "" {
		return appendAfter(out, Finding{rule, start, end})
	}
	if p.phoneNumber(text, start, run, &s, d) {
		return appendAfter(out, Finding{RulePhone, start, end})
	}
	return out
}

// phoneNumber reports whether run, text[start:], is a phone number: valid
// in its country after a '+' or the international prefix 00
// ("0049 30 901820"); a US number grouped as the US writes them; a
// national number of another of phone.NationalRegions written as that
// country writes its numbers; or, without any formatting, one valid in one
// of those countries right after a label ("Tel.", "電話"). A number
// without '+' labelled as another kind of number (an id's name,
// "Kundennummer") is not one.
func (p *PII) phoneNumber(text string, start int, run string, s *shape, d string) bool {
	if !s.formatted() {
		return s.digits <= 15 && labelsBefore(text, start, phoneLabelWindow, phoneLabelWords, false)&labelPhone != 0 && p.anyNational(d)
	}
	if !s.mayBePhone() {
		return false
	}
	if s.plus {
		return p.validPhone(run, *s)
	}
	// Without a '+', a number after a word naming another kind of number
	// ("Kundennummer 0341 806485", "TFN: 535 142 884") is that.
	if l := labelsBefore(text, start, phoneLabelWindow, phoneLabelWords, false); l != 0 && l&labelPhone == 0 {
		return false
	}
	if p.validPhone(run, *s) {
		return true
	}
	if len(d) > 4 && d[0] == '0' && d[1] == '0' && d[2] != '0' && run[0] != '(' {
		if n, ok := p.phones.Parse(d[2:], true); ok && p.phones.Valid(n) {
			return true // 00 and a calling code: a '+' as dialled from most countries
		}
	}
	return p.nationalElsewhere(text, start, s, d)
}

// nationalElsewhere reports whether d, the digits of a formatted number
// without '+', is a national number of a phone.NationalRegions other than
// the US, grouped as Format(NATIONAL) groups it ("030 123456", "06 12 34
// 56 78"), or with its first group so and the rest grouped otherwise
// ("030/1234567", "02-12345678") when it starts with the trunk prefix 0 or
// a label stands before it. Each region's layouts rule out most candidates
// before its patterns run.
func (p *PII) nationalElsewhere(text string, start int, s *shape, d string) bool {
	got := s.groups[:s.ngroups]
	if s.ngroups < 2 || s.ngroups == len(s.groups) {
		return false
	}
	labelled := -1 // unknown until needed: 0 no, 1 yes
	for r := 1; r < phone.NationalRegions; r++ {
		switch p.nationalFit(r, got, d) {
		case fitGrouped:
			return true
		case fitFirstGroup:
			if labelled < 0 {
				labelled = 0
				if d[0] == '0' || labelsBefore(text, start, phoneLabelWindow, phoneLabelWords, false)&labelPhone != 0 {
					labelled = 1
				}
			}
			if labelled == 1 {
				return true
			}
		}
	}
	return false
}

// How a written number fits a national region's numbers.
const (
	fitNone       = iota // no valid number of the region
	fitFirstGroup        // valid, its first group as the region writes it, the rest grouped otherwise
	fitGrouped           // valid and grouped as Format(NATIONAL) groups it
)

// nationalFit returns how the digits d, written in groups got, fit
// national region r's numbers.
func (p *PII) nationalFit(r int, got []int, d string) int {
	if !p.phones.MayWrite(r, len(d), got[0]) {
		return fitNone
	}
	n, ok := p.phones.ParseNational(d, r)
	if !ok || !p.phones.InNationalRegion(n, r) || !p.phones.Valid(n) {
		return fitNone
	}
	want := p.phones.NationalGroupsIn(n, r)
	switch {
	case equalInts(got, want):
		return fitGrouped
	case len(want) > 0 && want[0] == got[0]:
		return fitFirstGroup
	}
	return fitNone
}

// anyNational reports whether the bare digits d are a valid national
// number of one of phone.NationalRegions.
func (p *PII) anyNational(d string) bool {
	for r := range phone.NationalRegions {
		if !p.phones.MayWrite(r, len(d), 0) {
			continue
		}
		if n, ok := p.phones.ParseNational(d, r); ok && p.phones.InNationalRegion(n, r) && p.phones.Valid(n) {
			return true
		}
	}
	return false
}

// slashJoin extends the numeric run text[start:end] over a '/' where the
// slash is part of a number: after an area code ("030/901820", "02/123 45
// 67": one group of two to five digits starting with 0) and in a CNPJ
// ("12.345.678/0001-95"). Dates and ratios ("12/02/2026", "3/4") stay
// apart.
func slashJoin[T ~string | ~[]byte](text T, start, end int) int {
	if end+1 >= len(text) || text[end] != '/' || !isDigitByte(text[end+1]) || !isDigitByte(text[end-1]) {
		return end
	}
	i := start
	for i < end && !isDigitByte(text[i]) {
		i++
	}
	k := countDigits(text, i, 6)
	switch {
	case i+k == end && k >= 2 && k <= 5 && text[i] == '0': // an area code
	case end-i == 10 && k == 2 && text[i+2] == '.' && text[i+6] == '.' && countDigits(text, end+1, 5) == 4: // a CNPJ
	default:
		return end
	}
	e := end + 1
	for e < len(text) && class[text[e]]&cRun != 0 {
		e++
	}
	return e
}

// mayStartAfter reports whether a number may start at text[i] given what
// precedes it: not inside a word, not after "v1." or "abc-", not after a
// digit and ':' or '/' (times, dates, ratios).
func mayStartAfter(text string, i int) bool {
	prev := text[i-1]
	if isWordByte(prev) {
		return false
	}
	if i >= 2 {
		before := text[i-2]
		switch prev {
		case '.', '-', '#', '$':
			if isWordByte(before) {
				return false
			}
		case ':', '/', ',':
			if class[before]&cDigit != 0 {
				return false
			}
		}
	}
	return prev != '#' && prev != '$' // "#12345678", "$1 234 567" are no PII
}

// mayEndBefore reports whether a number may end before text[i]: not in a
// word, not before ':' or '/' and a digit (a time, a date, a ratio), not
// before '%', not before ".txt" or "-rc1".
func mayEndBefore(text string, i int) bool {
	next := text[i]
	if isWordByte(next) || next == '%' {
		return false
	}
	if i+1 < len(text) {
		after := text[i+1]
		switch next {
		case ':', '/', ',':
			return class[after]&cDigit == 0
		case '.', '-':
			return !isWordByte(after)
		}
	}
	return true
}

// shape is the layout of a numeric run.
type shape struct {
	digits       int
	groups       [8]int // digit-group lengths; the 8th holds the rest
	ngroups      int
	plus, parens bool
	seps         string // the distinct separators, in order of appearance
	sepRuns      bool   // two separators in a row somewhere (") " counts as one)
}

func shapeOf(run string) shape {
	var s shape
	inGroup := false
	lastSep := -2
	for i := 0; i < len(run); i++ {
		c := run[i]
		if class[c]&cDigit != 0 {
			s.digits++
			if !inGroup {
				if s.ngroups < len(s.groups) {
					s.ngroups++
				}
				inGroup = true
			}
			s.groups[s.ngroups-1]++
			continue
		}
		inGroup = false
		switch c {
		case '+':
			s.plus = true
			if i != 0 && !(i == 1 && run[0] == '(') {
				s.sepRuns = true // a '+' inside is no phone formatting; "(+49) 30 ..." is
			}
			continue
		case '(', ')':
			s.parens = true
			continue
		}
		if lastSep == i-1 {
			s.sepRuns = true
		}
		lastSep = i
		if !strings.ContainsRune(s.seps, rune(c)) {
			s.seps += string(c)
		}
	}
	return s
}

func (s shape) digitsOf(run string) string {
	var b strings.Builder
	b.Grow(s.digits)
	for i := 0; i < len(run); i++ {
		if class[run[i]]&cDigit != 0 {
			b.WriteByte(run[i])
		}
	}
	return b.String()
}

func (s shape) formatted() bool { return s.plus || s.parens || s.seps != "" }

// isSSN: AAA-GG-SSSS with one separator, dash, space or dot.
func (s shape) isSSN() bool {
	return !s.plus && !s.parens && !s.sepRuns && (s.seps == "-" || s.seps == " " || s.seps == ".") &&
		s.ngroups == 3 && s.groups[0] == 3 && s.groups[1] == 2 && s.groups[2] == 4
}

// mayBeCard: all digits, or groups (4-4-4-4, 4-6-5, 4-6-4, ...) split by
// one kind of separator, space or dash.
func (s shape) mayBeCard() bool {
	if s.plus || s.parens || s.sepRuns {
		return false
	}
	switch s.seps {
	case "":
		return true
	case " ", "-":
	default:
		return false
	}
	if s.ngroups == 3 && s.groups[0] == 4 && s.groups[1] == 6 && (s.groups[2] == 5 || s.groups[2] == 4) {
		return true
	}
	for g := range s.ngroups - 1 {
		if s.groups[g] != 4 {
			return false
		}
	}
	return s.ngroups >= 2 && s.ngroups <= 5 && s.groups[s.ngroups-1] >= 1 && s.groups[s.ngroups-1] <= 4
}

// mayBePhone rules out what formatting says is no phone number: bare digit
// strings (order numbers, ids, timestamps), dates (2026-12-02, 02.12.2026),
// dotted quads and versions.
func (s shape) mayBePhone() bool {
	if !s.formatted() || s.digits > 15 || s.sepRuns {
		return false
	}
	if s.plus {
		return true
	}
	g := s.groups[:s.ngroups]
	if len(g) == 3 && ((g[0] == 4 && g[1] <= 2 && g[2] <= 2) || (g[0] <= 2 && g[1] <= 2 && g[2] == 4)) {
		return false // a date
	}
	if strings.Contains(s.seps, ".") && len(g) < 5 {
		for _, n := range g {
			if n < 3 {
				return false // versions, IP addresses, decimals; not 01.23.45.67.89
			}
		}
	}
	return true
}

// validPhone judges a number as libphonenumber does (package phone): a '+'
// number must be valid in its country; a national one must be valid in the
// national region and grouped as that country groups its numbers (so
// "2026-12-02 12" is no DC number). A national number dialled through the
// international prefix to another country ("011 44 ...") is not taken:
// only the national region's grouping is known. The library takes such a
// number only when the prefix and code are written as one group and the
// rest in that country's national grouping ("01139 02 1234 5678"), a form
// seldom seen.
func (p *PII) validPhone(run string, s shape) bool {
	n, ok := p.phones.Parse(s.digitsOf(run), s.plus)
	if !ok || !p.phones.Valid(n) {
		return false
	}
	if s.plus {
		return true
	}
	if !p.phones.National(n) {
		return false
	}
	want := p.phones.NationalGroups(n)
	got := s.groups[:s.ngroups]
	if equalInts(got, want) {
		return true
	}
	// A national prefix or the country code written in front: 1-800-..., 0 30 ...
	return len(got) == len(want)+1 && equalInts(got[1:], want)
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// validSSN applies the SSA's rules: area not 000, 666 or 9xx, group not 00,
// serial not 0000; and leaves out the numbers printed in advertisements
// (078-05-1120, 219-09-9999), which are documentation, not a person's.
func validSSN[T digitsText](d T) bool {
	if len(d) != 9 {
		return false
	}
	area, group, serial := num(d, 0, 3), num(d, 3, 2), num(d, 5, 4)
	if area == 0 || area == 666 || area >= 900 || group == 0 || serial == 0 {
		return false
	}
	return !(area == 78 && group == 5 && serial == 1120) && !(area == 219 && group == 9 && serial == 9999)
}

// validCard: Luhn check and a known issuer's prefix and length.
func validCard(d string) bool {
	if !luhn(d) {
		return false
	}
	n := len(d)
	p2, p3, p4, p6 := num(d, 0, 2), num(d, 0, 3), num(d, 0, 4), num(d, 0, 6)
	switch {
	case d[0] == '4': // Visa
		return n == 13 || n == 16 || n == 19
	case p2 >= 51 && p2 <= 55, p4 >= 2221 && p4 <= 2720: // Mastercard
		return n == 16
	case p2 == 34 || p2 == 37: // American Express
		return n == 15
	case p4 == 6011 || p2 == 65 || (p3 >= 644 && p3 <= 649) || (p6 >= 622126 && p6 <= 622925): // Discover
		return n >= 16 && n <= 19
	case p4 >= 3528 && p4 <= 3589: // JCB
		return n >= 16 && n <= 19
	case (p3 >= 300 && p3 <= 305) || p2 == 36 || p2 == 38 || p2 == 39 || p4 == 3095: // Diners Club
		return n >= 14 && n <= 19
	case p2 == 62: // UnionPay
		return n >= 16 && n <= 19
	case p2 == 50 || (p2 >= 56 && p2 <= 69): // Maestro
		return n >= 12 && n <= 19
	}
	return false
}

// testCards are card numbers the payment networks and processors (Stripe,
// Braintree, Adyen, PayPal) publish for testing: they fill documentation,
// fixtures and sandbox logs and identify no one, so they are not reported.
var testCards = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range []string{
		// Visa
		"4111111111111111", "4242424242424242", "4000056655665556", "4012888888881881",
		"4222222222222", "4000000000000002", "4000000000009995", "4000000000000077",
		"4000000000000093", "4000000000000127", "4000000000000069", "4000000000000119",
		"4000000000003220", "4000002500003155", "4000000000000341", "4000000000000010",
		"4000000000000028", "4000000000000036", "4000000000000044", "4000000000000101",
		"4005519200000004", "4009348888881881", "4012000033330026", "4012000077777777",
		"4217651111111119", "4500600000000061", "4444333322221111", "4111111145551142",
		"4988438843884305", "4166676667666746", "4646464646464644", "4000620000000007",
		"4000060000000006", "4400000000000008", "4484600000000004", "4607000000000009",
		"4977949494949497", "4000020000000000", "4001590000000001", "4000180000000002",
		"4917610000000000", "4462030000000000", "4917300800000000", "4484070000000000",
		"4035501000000008", "4131840000000003", "4571000000000001", "4199350000000002",
		"4001919257537193", "4007702835532454", "4263982640269299", "4000111111111115",
		// Mastercard
		"5555555555554444", "5200828282828210", "5105105105105100", "2223003122003222",
		"5431111111111111", "5454545454545454", "2222400070000005", "5555341244441115",
		"5577000055770004", "5136333333333335", "5585558555855583", "5555444433331111",
		"2223520443560010", "2222410700000002", "2222420000001113", "5101180000000007",
		"5186001700008785", "5200000000001096", "5200000000001005", "5200000000000007",
		"5555555555555557", "5425233430109903", "2223000048410010", "2222400010000008",
		// American Express
		"378282246310005", "371449635398431", "378734493671000", "341111111111111",
		"370000000000002", "370000000100018", "340000000000009", "374245455400126",
		"371111111111114", "343434343434343", "346827630435344",
		// Discover
		"6011111111111117", "6011000990139424", "6011000000000012", "6011601160116611",
		"6445644564456445", "6011000991300009", "6011981111111113", "6011000400000000",
		// Diners Club
		"3056930009020004", "36227206271667", "30569309025904", "38520000023237",
		"36259600000004", "36006666333344", "36700102000000", "36148900647913",
		"3600666633334", "30000000000004",
		// JCB
		"3566002020360505", "3530111333300000", "3566111111111113", "3569990010095841",
		"3528000700000000", "3569990000000009", "3566000020000410",
		// UnionPay
		"6200000000000005", "6205500000000000004", "6200000000000047", "6212345678901265",
		"6221261111117766", "6243030000000001", "6250941006528599", "6250946000000016",
		"6282000000000002",
		// Maestro
		"6759649826438453", "6799990100000000019", "6771798021000008", "5000550000000029",
		"6771830999991239", "6304000000000000", "6759000000000000005",
	} {
		m[n] = true
	}
	return m
}()

// appendAfter appends f unless it overlaps the last finding (an e-mail
// found at its '@' may start before a number found earlier).
func appendAfter(out []Finding, f Finding) []Finding {
	for len(out) > 0 && out[len(out)-1].End > f.Start {
		if out[len(out)-1].Start <= f.Start {
			return out // the earlier finding holds it
		}
		out = out[:len(out)-1] // f covers it
	}
	return append(out, f)
}

// runEnd returns the end of the maximal run of digits, spaces, - . ( ) +
// starting at i.
func runEnd[T ~string | ~[]byte](text T, i int) int {
	for i < len(text) && class[text[i]]&cRun != 0 {
		i++
	}
	return i
}

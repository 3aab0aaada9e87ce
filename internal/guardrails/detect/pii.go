package detect

import (
	"strings"

	"github.com/purko-io/mcp-hub/internal/guardrails/detect/phone"
)

// PII finds personal data: e-mail addresses, phone numbers, payment card
// numbers, IBANs and US social security numbers. Its only state is the
// phone number patterns it compiles on first use (safe for concurrent use),
// so one PII serves concurrent calls.
type PII struct {
	phones *phone.Rules
}

// NewPII returns a PII detector that reads national phone numbers as
// numbers of phoneNationalRegion (the US).
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
		case k&cDigit != 0:
			if i < done {
				continue
			}
			start := i
			for start > done && class[text[start-1]]&cRun != 0 {
				start--
			}
			end := runEnd(text, i)
			out = p.numericRun(text, start, end, out)
			done = end
			i = end - 1
		case c == '@':
			if f, ok := findEmail(text, i); ok {
				out = appendAfter(out, f)
			}
		case k&cUpper != 0:
			if i+3 < n && class[text[i+1]]&cUpper != 0 && class[text[i+2]]&cDigit != 0 && (i == 0 || !isWordByte(text[i-1])) {
				if end, ok := findIBAN(text, i); ok {
					out = appendAfter(out, Finding{RuleIBAN, i, end})
					i = end - 1
					done = end
				}
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
	if k := strings.LastIndex(text[start:end], " ("); k > 0 {
		out = p.numeric(text, start, start+k, out)
		out = p.numeric(text, start+k+1, end, out)
	}
	return out
}

// numeric decides what text[start:end], a part of a run, holds: a card
// number, an SSN or a phone number. It is trimmed to its digits (and a
// leading '+' or parenthesis); the characters around it must end a token.
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
	run := text[start:end]
	s := shapeOf(run)
	if s.digits < 7 {
		return out
	}
	switch {
	case s.isSSN():
		if validSSN(s.digitsOf(run)) {
			return appendAfter(out, Finding{RuleUSSSN, start, end})
		}
		return out
	case s.digits >= 13 && s.digits <= 19 && s.mayBeCard():
		if d := s.digitsOf(run); validCard(d) && !testCards[d] {
			return appendAfter(out, Finding{RulePaymentCard, start, end})
		}
		return out
	}
	if s.mayBePhone() && p.validPhone(run, s) {
		return appendAfter(out, Finding{RulePhone, start, end})
	}
	return out
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
			if i != 0 {
				s.sepRuns = true // a '+' inside is no phone formatting
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

// isSSN: AAA-GG-SSSS with one separator, dash or space.
func (s shape) isSSN() bool {
	return !s.plus && !s.parens && !s.sepRuns && (s.seps == "-" || s.seps == " ") &&
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
	if strings.Contains(s.seps, ".") {
		for _, n := range g {
			if n < 3 {
				return false // versions, IP addresses, decimals
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
func validSSN(d string) bool {
	area, group, serial := d[:3], d[3:5], d[5:]
	if area == "000" || area == "666" || area[0] == '9' || group == "00" || serial == "0000" {
		return false
	}
	return d != "078051120" && d != "219099999"
}

// validCard: Luhn check and a known issuer's prefix and length.
func validCard(d string) bool {
	sum := 0
	double := false
	for i := len(d) - 1; i >= 0; i-- {
		v := int(d[i] - '0')
		if double {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
		double = !double
	}
	if sum%10 != 0 {
		return false
	}
	n := len(d)
	p2 := atoi(d[:2])
	p3 := atoi(d[:3])
	p4 := atoi(d[:4])
	p6 := atoi(d[:6])
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

func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
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
func runEnd(text string, i int) int {
	for i < len(text) && class[text[i]]&cRun != 0 {
		i++
	}
	return i
}

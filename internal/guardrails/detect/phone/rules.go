// Package phone judges phone numbers as libphonenumber does: its Parse and
// IsValidNumber (and Format NATIONAL for the grouping of a national
// number) redone over the tables phonegen copies out of the library's
// metadata (meta_gen.go). The hub does not link the library itself: its
// init decodes all of its metadata in every process, filters on or not
// (about 2.5 MB allocated, 1.5 MB kept, 20 ms of start). The tests link it
// and check that both agree (internal/guardrails/detect phone_test.go).
package phone

//go:generate go run ./phonegen -o meta_gen.go

import (
	"fmt"
	"math/bits"
	"regexp"
	"sort"
	"strconv"
	"sync"
)

// phoneCode is a country calling code and its regions,
// phoneRegions[first:first+n], the main region first.
type phoneCode struct {
	code     uint16
	first, n uint16
}

// phoneDesc is a number pattern (unanchored, as in the metadata) and its
// possible lengths as a bit set (bit n: length n); 0 tests no length.
type phoneDesc struct {
	pattern string
	lengths uint32
}

// phoneRegion is what Parse and IsValidNumber read of one region's
// metadata.
type phoneRegion struct {
	id string
	// leadingDigits picks this region for a number of a shared calling
	// code; empty: the region is picked when the number is valid in it.
	leadingDigits string
	// general is the pattern and lengths of any number of the region;
	// localOnly the lengths dialled only within an area.
	general   phoneDesc
	localOnly uint32
	// types are the patterns of its number types; a valid number matches
	// general and one of them.
	types []phoneDesc
	// intlPrefix is what is dialled before a calling code from this region;
	// nationalPrefix (with its transform) what Parse strips from a national
	// number.
	intlPrefix, nationalPrefix, nationalPrefixTransform string
}

// phoneFormat is one of Format(NATIONAL)'s number formats.
type phoneFormat struct {
	pattern, leadingDigits, format, nationalPrefixRule string
}

// phoneFormatSet is the national formats of one calling code.
type phoneFormatSet struct {
	code    uint16
	formats []phoneFormat
}

// The library's bounds of a national significant number.
const (
	minNSN = 2
	maxNSN = 17
)

// Rules judges phone numbers from the generated tables. Safe for
// concurrent use. Each region's
// patterns are compiled on the first number that needs them and kept: most
// texts name few countries, and compiling all of them would cost more than
// the library's init this replaces.
type Rules struct {
	regions []lazyRegion // parallel to phoneRegions
	// nationals are the regions of phoneNationalRegions, the one a number
	// without '+' is read in first.
	nationals []nationalRegion
	formats   []lazyFormats // parallel to phoneFormatSets
}

// nationalRegion is a region whose national numbers Rules reads.
type nationalRegion struct {
	region, code int // indexes in phoneRegions and phoneCodes
	formats      int // index in phoneFormatSets
}

type lazyRegion struct {
	once sync.Once
	r    *compiledRegion
	err  error
}

// lazyFormats is a calling code's national formats, compiled on first use,
// and the layouts they write.
type lazyFormats struct {
	once    sync.Once
	formats []compiledFormat
	// layouts[n] is a bit set of the lengths of the first group of digits
	// of a number of n digits as the formats write it (n < 32); a zero
	// entry: no format writes n digits.
	layouts [32]uint32
}

// compiledRegion holds a phoneRegion's patterns compiled as the library
// applies them.
type compiledRegion struct {
	leading    *regexp.Regexp   // ^(?:leadingDigits); nil without
	general    *regexp.Regexp   // ^(?:pattern)$
	types      []*regexp.Regexp // ^(?:pattern)$ of each type
	intlPrefix *regexp.Regexp   // unanchored: the library takes its leftmost match when it starts the number
	prefix     *regexp.Regexp   // ^(?:nationalPrefix); nil without
}

type compiledFormat struct {
	leading *regexp.Regexp // unanchored, as the library; nil without
	full    *regexp.Regexp // ^(?:pattern)$
	re      *regexp.Regexp // pattern, unanchored: what Format replaces with
	rule    string         // format with the national prefix rule in place of its first group
}

// New returns Rules that read numbers without a '+' as numbers of
// NationalRegion and, by ParseNational, of the other NationalRegions.
func New() *Rules {
	p := &Rules{regions: make([]lazyRegion, len(phoneRegions)), formats: make([]lazyFormats, len(phoneFormatSets))}
	for _, id := range phoneNationalRegions {
		for ci, c := range phoneCodes {
			for i := int(c.first); i < int(c.first+c.n); i++ {
				if phoneRegions[i].id != id {
					continue
				}
				nr := nationalRegion{region: i, code: ci, formats: -1}
				for fi, f := range phoneFormatSets {
					if f.code == c.code {
						nr.formats = fi
					}
				}
				p.nationals = append(p.nationals, nr)
			}
		}
	}
	return p
}

// region returns phoneRegions[i] compiled.
func (p *Rules) region(i int) (*compiledRegion, error) {
	l := &p.regions[i]
	l.once.Do(func() { l.r, l.err = compileRegion(&phoneRegions[i]) })
	return l.r, l.err
}

func compileRegion(r *phoneRegion) (*compiledRegion, error) {
	var err error
	compile := func(expr string) *regexp.Regexp {
		re, e := regexp.Compile(expr)
		if e != nil && err == nil {
			err = fmt.Errorf("compile the phone number patterns of region %s: %w", r.id, e)
		}
		return re
	}
	c := &compiledRegion{general: compile("^(?:" + r.general.pattern + ")$")}
	if r.leadingDigits != "" {
		c.leading = compile("^(?:" + r.leadingDigits + ")")
	}
	for _, t := range r.types {
		c.types = append(c.types, compile("^(?:"+t.pattern+")$"))
	}
	if r.intlPrefix != "" {
		c.intlPrefix = compile(r.intlPrefix)
	}
	if r.nationalPrefix != "" {
		c.prefix = compile("^(?:" + r.nationalPrefix + ")")
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// formatsOf returns phoneFormatSets[i] compiled.
func (p *Rules) formatsOf(i int) *lazyFormats {
	l := &p.formats[i]
	l.once.Do(func() {
		l.formats = compileFormats(phoneFormatSets[i].formats)
		l.layouts = layoutsOf(phoneFormatSets[i].formats)
	})
	return l
}

// compileFormats compiles a code's national formats. The patterns are tested
// to compile (TestPhoneMetaCompiles); one that did not would leave the
// formats that follow it unused rather than stop the hub.
func compileFormats(formats []phoneFormat) []compiledFormat {
	var out []compiledFormat
	for _, f := range formats {
		c := compiledFormat{rule: f.format}
		var err error
		if f.leadingDigits != "" {
			if c.leading, err = regexp.Compile(f.leadingDigits); err != nil {
				return out
			}
		}
		if c.full, err = regexp.Compile("^(?:" + f.pattern + ")$"); err != nil {
			return out
		}
		if c.re, err = regexp.Compile(f.pattern); err != nil {
			return out
		}
		if f.nationalPrefixRule != "" {
			c.rule = replaceFirstGroup(f.format, f.nationalPrefixRule)
		}
		out = append(out, c)
	}
	return out
}

// replaceFirstGroup replaces the first "$n" of format with rule, as
// Format does with a national prefix formatting rule ("($1)" for "$1").
func replaceFirstGroup(format, rule string) string {
	for i := 0; i+1 < len(format); i++ {
		if format[i] == '$' && isDigit(format[i+1]) {
			return format[:i] + rule + format[i+2:]
		}
	}
	return format
}

// findCode returns the index of calling code code in phoneCodes.
func findCode(code int) (int, bool) {
	i := sort.Search(len(phoneCodes), func(i int) bool { return int(phoneCodes[i].code) >= code })
	return i, i < len(phoneCodes) && int(phoneCodes[i].code) == code
}

// splitCode reads the calling code at the start of digits, as the library:
// the first of its 1 to 3 digits that is a known code (no code is a prefix
// of another).
func splitCode(digits string) (ci int, rest string, ok bool) {
	if digits == "" || digits[0] == '0' {
		return 0, "", false
	}
	for i := 1; i <= 3 && i <= len(digits); i++ {
		if ci, ok := findCode(atoi(digits[:i])); ok {
			return ci, digits[i:], true
		}
	}
	return 0, "", false
}

// parse reads a number's digits as Parse does: after a '+' the calling
// code and the national number; without one, a national number of the
// national region, or one dialled through its international prefix (011
// for the US), or written with its calling code in front (1 for the US)
// where that makes it fit. The national prefix of the number's region
// (0 in most of Europe, 1 in NANPA, transforms in AR, MX, ...) is stripped
// where the rest keeps a possible length. It returns the index of the
// calling code in phoneCodes and the national significant number.
func (p *Rules) parse(digits string, plus bool, national int) (ci int, nsn string, ok bool) {
	meta := -1 // the region whose prefix and lengths apply
	if plus {
		if len(digits) <= minNSN {
			return 0, "", false
		}
		if ci, nsn, ok = splitCode(digits); !ok {
			return 0, "", false
		}
		meta = int(phoneCodes[ci].first)
	} else {
		if national >= len(p.nationals) {
			return 0, "", false
		}
		nr := p.nationals[national]
		def := &phoneRegions[nr.region]
		c, err := p.region(nr.region)
		if err != nil {
			return 0, "", false
		}
		if rest, idd := stripIDD(digits, c); idd {
			if len(rest) <= minNSN {
				return 0, "", false
			}
			if ci, nsn, ok = splitCode(rest); !ok {
				return 0, "", false
			}
			meta = int(phoneCodes[ci].first)
		} else {
			ci, nsn, meta = nr.code, digits, nr.region
			cc := strconv.Itoa(int(phoneCodes[ci].code))
			if len(digits) > len(cc) && digits[:len(cc)] == cc {
				potential := stripNationalPrefix(digits[len(cc):], def, c)
				fullValid := c.general.MatchString(digits)
				if (!fullValid && c.general.MatchString(potential)) || lengthOf(len(digits), def) == tooLong {
					nsn = potential
					meta = int(phoneCodes[ci].first) // the region of the code written
				}
			}
		}
	}
	if len(nsn) < minNSN {
		return 0, "", false
	}
	r := &phoneRegions[meta]
	c, err := p.region(meta)
	if err != nil {
		return 0, "", false
	}
	potential := stripNationalPrefix(nsn, r, c)
	switch lengthOf(len(potential), r) {
	case tooShort, localOnly, invalidLength:
	default:
		nsn = potential
	}
	if len(nsn) < minNSN || len(nsn) > maxNSN {
		return 0, "", false
	}
	return ci, nsn, true
}

// stripIDD strips the region's international prefix from the start of
// digits unless a 0 follows it (no calling code starts with 0).
func stripIDD(digits string, c *compiledRegion) (string, bool) {
	if c.intlPrefix == nil {
		return digits, false
	}
	loc := c.intlPrefix.FindStringIndex(digits)
	if loc == nil || loc[0] != 0 {
		return digits, false
	}
	rest := digits[loc[1]:]
	if rest != "" && rest[0] == '0' {
		return digits, false
	}
	return rest, true
}

// stripNationalPrefix is the library's maybeStripNationalPrefixAndCarrierCode:
// the region's national prefix removed (or transformed), unless the number
// fit the general pattern before and would not after.
func stripNationalPrefix(number string, r *phoneRegion, c *compiledRegion) string {
	if number == "" || c.prefix == nil {
		return number
	}
	loc := c.prefix.FindStringSubmatchIndex(number)
	if loc == nil {
		return number
	}
	viable := c.general.MatchString(number)
	last := len(loc)/2 - 1
	if r.nationalPrefixTransform == "" || loc[last*2] < 0 {
		if viable && !c.general.MatchString(number[loc[1]:]) {
			return number
		}
		return number[loc[1]:]
	}
	t := c.prefix.ReplaceAllString(number, r.nationalPrefixTransform)
	if viable && !c.general.MatchString(t) {
		return number
	}
	return t
}

// lengthResult is the library's ValidationResult of a length.
type lengthResult int

const (
	isPossible lengthResult = iota
	localOnly
	tooShort
	tooLong
	invalidLength
)

// lengthOf is testNumberLength(n digits, region, UNKNOWN).
func lengthOf(n int, r *phoneRegion) lengthResult {
	if n < 32 && r.localOnly&(1<<n) != 0 {
		return localOnly
	}
	ls := r.general.lengths
	lo, hi := bits.TrailingZeros32(ls), 31-bits.LeadingZeros32(ls)
	switch {
	case n == lo:
		return isPossible
	case n < lo:
		return tooShort
	case n > hi:
		return tooLong
	case hasLength(ls, n):
		return isPossible
	}
	return invalidLength
}

// hasLength reports whether length n is in the bit set ls; an empty set
// tests nothing.
func hasLength(ls uint32, n int) bool {
	return ls == 0 || (n < 32 && ls&(1<<n) != 0)
}

// valid is IsValidNumber: the region of the number (the code's only one;
// of a shared code, the first whose leading digits start the number or,
// without leading digits, in which it is valid), and the number valid
// there: it fits the general pattern and lengths and one number type's.
func (p *Rules) valid(ci int, nsn string) bool {
	pc := phoneCodes[ci]
	ri := int(pc.first)
	if pc.n > 1 {
		ri = -1
		for i := int(pc.first); i < int(pc.first+pc.n); i++ {
			c, err := p.region(i)
			if err != nil {
				return false
			}
			if c.leading != nil {
				if c.leading.MatchString(nsn) {
					ri = i
					break
				}
			} else if c.validIn(&phoneRegions[i], nsn) {
				return true
			}
		}
		if ri < 0 {
			return false
		}
	}
	c, err := p.region(ri)
	return err == nil && c.validIn(&phoneRegions[ri], nsn)
}

// validIn is the library's getNumberTypeHelper(nsn) != UNKNOWN.
func (c *compiledRegion) validIn(r *phoneRegion, nsn string) bool {
	if !hasLength(r.general.lengths, len(nsn)) || !c.general.MatchString(nsn) {
		return false
	}
	for i, t := range r.types {
		if hasLength(t.lengths, len(nsn)) && c.types[i].MatchString(nsn) {
			return true
		}
	}
	return false
}

// nationalGroups returns the digit groups of Format(NATIONAL) of a number
// of the calling code of phoneFormatSets[set]: "(201) 555-0123" is [3 3 4].
func (p *Rules) nationalGroups(set int, nsn string) []int {
	for _, f := range p.formatsOf(set).formats {
		if f.leading != nil {
			if loc := f.leading.FindStringIndex(nsn); loc == nil || loc[0] != 0 {
				continue
			}
		}
		if f.full.MatchString(nsn) {
			return groupsOf(f.re.ReplaceAllString(nsn, f.rule))
		}
	}
	return groupsOf(nsn) // no format: Format returns the number as it is
}

// groupsOf returns the lengths of the runs of digits in formatted.
func groupsOf(formatted string) []int {
	var g []int
	in := false
	for i := 0; i < len(formatted); i++ {
		if isDigit(formatted[i]) {
			if !in {
				g = append(g, 0)
				in = true
			}
			g[len(g)-1]++
		} else {
			in = false
		}
	}
	return g
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// atoi reads a run of ASCII digits (the caller checked them).
func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

// Source names the library and version the tables were generated from;
// NationalRegion is the region a number without a '+' is read in.
const (
	Source         = phoneMetaSource
	NationalRegion = phoneNationalRegion
)

// NationalRegions is the number of regions ParseNational reads national
// numbers of; region 0 is NationalRegion.
const NationalRegions = len(phoneNationalRegions)

// NationalRegionID returns the ISO 3166 code of national region r.
func NationalRegionID(r int) string { return phoneNationalRegions[r] }

// Number is a number as Parse reads it: its calling code (an index in the
// tables) and its national significant number.
type Number struct {
	code int
	nsn  string
}

// Parse reads a number's digits (plus: written after a '+') as the
// library's Parse does; false when they are no number of a known code.
func (p *Rules) Parse(digits string, plus bool) (Number, bool) {
	ci, nsn, ok := p.parse(digits, plus, 0)
	return Number{code: ci, nsn: nsn}, ok
}

// ParseNational reads digits written without a '+' as Parse does with
// national region r (< NationalRegions) as the default region: a national
// number of r, one dialled through r's international prefix, or one with
// r's calling code in front.
func (p *Rules) ParseNational(digits string, r int) (Number, bool) {
	ci, nsn, ok := p.parse(digits, false, r)
	return Number{code: ci, nsn: nsn}, ok
}

// Valid is the library's IsValidNumber.
func (p *Rules) Valid(n Number) bool { return p.valid(n.code, n.nsn) }

// National reports whether n has the national region's calling code.
func (p *Rules) National(n Number) bool { return p.InNationalRegion(n, 0) }

// InNationalRegion reports whether n has the calling code of national
// region r.
func (p *Rules) InNationalRegion(n Number, r int) bool { return n.code == p.nationals[r].code }

// NationalGroups returns the digit groups of Format(NATIONAL) of n, a
// number of the national region's code: "(201) 555-0123" is [3 3 4].
func (p *Rules) NationalGroups(n Number) []int { return p.NationalGroupsIn(n, 0) }

// NationalGroupsIn returns the digit groups of Format(NATIONAL) of n, a
// number of national region r's calling code: "030 123456" is [3 6] in DE.
func (p *Rules) NationalGroupsIn(n Number, r int) []int {
	return p.nationalGroups(p.nationals[r].formats, n.nsn)
}

// MayWrite reports whether national region r's formats can write a number
// of digits digits (its national prefix included) with a first group of
// first digits; first 0 asks only whether they write that many digits. It
// is a cheap test before ParseNational: false means no number so written
// is one of r's in its national format.
func (p *Rules) MayWrite(r, digits, first int) bool {
	if digits <= 0 || digits >= 32 || first >= 32 {
		return false
	}
	l := p.formatsOf(p.nationals[r].formats).layouts[digits]
	if first == 0 {
		return l != 0
	}
	return l&(1<<first) != 0
}

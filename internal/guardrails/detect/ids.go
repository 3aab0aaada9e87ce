package detect

import "strings"

// National identification numbers. Each is reported only when its check
// digits (or check letter) are right, and only in the shapes it is written
// in; one whose digits pass their check one time in ten or eleven and look
// like any other number (the German tax id, BSN, PESEL, CPF, Aadhaar, My
// Number, SIN, TFN, CPR, a bare 9-digit SSN, ...) also needs its label
// before it ("BSN", "Steuer-ID", "CPF"; labels.go), unless its writing is
// its own ("123.456.789-09"). Numbers without a check are not reported:
// Danish CPR numbers issued since 2007 and Korean RRNs issued since October
// 2020 fail the check and are missed. Specifications: SOURCES-pii.md of the
// held-out corpus (internal/guardrails/testdata/heldout).

// digitsText is what the checks read: a run of ASCII digits.
type digitsText interface{ ~string | ~[]byte }

func digitAt[T digitsText](d T, i int) int { return int(d[i] - '0') }

func num[T digitsText](d T, i, n int) int {
	v := 0
	for k := i; k < i+n; k++ {
		v = v*10 + digitAt(d, k)
	}
	return v
}

// weightedSum returns the sum of d's digits times weights.
func weightedSum[T digitsText](d T, weights ...int) int {
	s := 0
	for i, w := range weights {
		s += digitAt(d, i) * w
	}
	return s
}

func luhn[T digitsText](d T) bool {
	sum := 0
	double := false
	for i := len(d) - 1; i >= 0; i-- {
		v := digitAt(d, i)
		if double {
			if v *= 2; v > 9 {
				v -= 9
			}
		}
		sum += v
		double = !double
	}
	return sum%10 == 0
}

func allSame[T digitsText](d T) bool {
	for i := 1; i < len(d); i++ {
		if d[i] != d[0] {
			return false
		}
	}
	return true
}

// validDate: a day of a month (any year; 29 February always).
func validDate(month, day int) bool {
	days := [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	return month >= 1 && month <= 12 && day >= 1 && day <= days[month]
}

// The checks, one per number; d holds only the number's digits.

// sinValid: Canada's SIN, Luhn; 0 and 8 start no one's.
func sinValid[T digitsText](d T) bool {
	return len(d) == 9 && d[0] != '0' && d[0] != '8' && luhn(d)
}

// tfnValid: Australia's tax file number, weights 1 4 3 7 5 8 6 9 10.
func tfnValid[T digitsText](d T) bool {
	return len(d) == 9 && d[0] != '0' && weightedSum(d, 1, 4, 3, 7, 5, 8, 6, 9, 10)%11 == 0
}

// bsnValid: the Dutch BSN's 11-proef, the last digit weighing -1.
func bsnValid[T digitsText](d T) bool {
	return len(d) == 9 && !allSame(d) && (weightedSum(d, 9, 8, 7, 6, 5, 4, 3, 2)-digitAt(d, 8))%11 == 0
}

// deTaxIDValid: the German IdNr: no leading 0, one digit of the first ten
// twice or three times and none more, ISO 7064 MOD 11,10.
func deTaxIDValid[T digitsText](d T) bool {
	if len(d) != 11 || d[0] == '0' {
		return false
	}
	var counts [10]int
	for i := range 10 {
		counts[digitAt(d, i)]++
	}
	repeated := 0
	for _, c := range counts {
		switch {
		case c > 3:
			return false
		case c >= 2:
			repeated++
		}
	}
	if repeated != 1 {
		return false
	}
	product := 10
	for i := range 10 {
		sum := (digitAt(d, i) + product) % 10
		if sum == 0 {
			sum = 10
		}
		product = sum * 2 % 11
	}
	return (11-product)%10 == digitAt(d, 10)
}

// peselValid: Poland's PESEL, a birth date (months +20 from 2000, +40
// from 2100, +60 from 2200, +80 in the 1800s) and weights 1 3 7 9.
func peselValid[T digitsText](d T) bool {
	if len(d) != 11 || !validDate(num(d, 2, 2)%20, num(d, 4, 2)) {
		return false
	}
	return (10-weightedSum(d, 1, 3, 7, 9, 1, 3, 7, 9, 1, 3)%10)%10 == digitAt(d, 10)
}

// mod11Check is the check digit of the Brazilian CPF and CNPJ.
func mod11Check[T digitsText](d T, weights ...int) int {
	r := weightedSum(d, weights...) % 11
	if r < 2 {
		return 0
	}
	return 11 - r
}

func cpfValid[T digitsText](d T) bool {
	return len(d) == 11 && !allSame(d) &&
		mod11Check(d, 10, 9, 8, 7, 6, 5, 4, 3, 2) == digitAt(d, 9) &&
		mod11Check(d, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2) == digitAt(d, 10)
}

func cnpjValid[T digitsText](d T) bool {
	return len(d) == 14 && !allSame(d) &&
		mod11Check(d, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2) == digitAt(d, 12) &&
		mod11Check(d, 6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2) == digitAt(d, 13)
}

// fnrValid: Norway's fødselsnummer, a birth date (D-numbers day +40,
// H-numbers month +40) and two modulus-11 check digits.
func fnrValid[T digitsText](d T) bool {
	if len(d) != 11 || !validDate(num(d, 2, 2)%40, num(d, 0, 2)%40) {
		return false
	}
	check := func(w ...int) int {
		k := 11 - weightedSum(d, w...)%11
		if k == 11 {
			return 0
		}
		return k // 10 never matches a digit
	}
	return check(3, 7, 6, 1, 8, 9, 4, 5, 2) == digitAt(d, 9) && check(5, 4, 3, 2, 7, 6, 5, 4, 3, 2) == digitAt(d, 10)
}

// beValid: Belgium's national number, 97 - (the first nine digits, with a
// 2 in front for births from 2000, mod 97). Month and day may be 0
// (unknown), and bis numbers add 20 or 40 to the month.
func beValid[T digitsText](d T) bool {
	if len(d) != 11 || num(d, 2, 2)%20 > 12 || num(d, 4, 2) > 31 {
		return false
	}
	n := num(d, 0, 9)
	c := num(d, 9, 2)
	return 97-n%97 == c || 97-(2000000000+n)%97 == c
}

// sePersonnummerValid: Sweden's YYMMDDNNNC (samordningsnummer: day +60),
// Luhn over the ten digits; twelve with the century in front.
func sePersonnummerValid[T digitsText](d T) bool {
	switch len(d) {
	case 12:
		if c := num(d, 0, 2); c < 18 || c > 20 {
			return false
		}
		d = d[2:]
	case 10:
	default:
		return false
	}
	day := num(d, 4, 2)
	if day > 60 {
		day -= 60
	}
	return validDate(num(d, 2, 2), day) && luhn(d)
}

// cprValid: Denmark's CPR DDMMYYSSSS and its modulus-11 test.
func cprValid[T digitsText](d T) bool {
	return len(d) == 10 && validDate(num(d, 2, 2), num(d, 0, 2)) && weightedSum(d, 4, 3, 2, 7, 6, 5, 4, 3, 2, 1)%11 == 0
}

// Verhoeff's tables (the Aadhaar check digit).
var (
	verhoeffD = [10][10]uint8{
		{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 2, 3, 4, 0, 6, 7, 8, 9, 5}, {2, 3, 4, 0, 1, 7, 8, 9, 5, 6},
		{3, 4, 0, 1, 2, 8, 9, 5, 6, 7}, {4, 0, 1, 2, 3, 9, 5, 6, 7, 8}, {5, 9, 8, 7, 6, 0, 4, 3, 2, 1},
		{6, 5, 9, 8, 7, 1, 0, 4, 3, 2}, {7, 6, 5, 9, 8, 2, 1, 0, 4, 3}, {8, 7, 6, 5, 9, 3, 2, 1, 0, 4},
		{9, 8, 7, 6, 5, 4, 3, 2, 1, 0},
	}
	verhoeffP = [8][10]uint8{
		{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 5, 7, 6, 2, 8, 3, 0, 9, 4}, {5, 8, 0, 3, 7, 9, 6, 1, 4, 2},
		{8, 9, 1, 6, 0, 4, 3, 5, 2, 7}, {9, 4, 5, 3, 1, 2, 6, 8, 7, 0}, {4, 2, 8, 6, 5, 7, 3, 9, 0, 1},
		{2, 7, 9, 3, 8, 0, 6, 4, 1, 5}, {7, 0, 4, 6, 9, 1, 3, 2, 5, 8},
	}
)

// aadhaarValid: India's Aadhaar, 2-9 first, Verhoeff.
func aadhaarValid[T digitsText](d T) bool {
	if len(d) != 12 || d[0] < '2' {
		return false
	}
	c := uint8(0)
	for i := range len(d) {
		c = verhoeffD[c][verhoeffP[i%8][digitAt(d, len(d)-1-i)]]
	}
	return c == 0
}

// myNumberValid: Japan's My Number, weights 2-7 then 2-6 from the right,
// mod 11.
func myNumberValid[T digitsText](d T) bool {
	if len(d) != 12 {
		return false
	}
	s := 0
	for n := 1; n <= 11; n++ {
		q := n + 1
		if n >= 7 {
			q = n - 5
		}
		s += digitAt(d, 11-n) * q
	}
	c := 0
	if r := s % 11; r > 1 {
		c = 11 - r
	}
	return c == digitAt(d, 11)
}

// rrnValid: Korea's RRN, a birth date, the sex and century digit and its
// check digit (numbers from October 2020 have none: missed).
func rrnValid[T digitsText](d T) bool {
	if len(d) != 13 || !validDate(num(d, 2, 2), num(d, 4, 2)) || d[6] == '0' || d[6] == '9' || num(d, 7, 2) > 95 {
		return false
	}
	return (11-weightedSum(d, 2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5)%11)%10 == digitAt(d, 12)
}

// zaIDValid: South Africa's id, a birth date, citizenship 0-2, the
// former race digit 8 or 9, Luhn.
func zaIDValid[T digitsText](d T) bool {
	return len(d) == 13 && validDate(num(d, 2, 2), num(d, 4, 2)) && d[10] <= '2' && d[11] >= '8' && luhn(d)
}

// ahvValid: Switzerland's AHV number, 756 and an EAN-13 check digit.
func ahvValid[T digitsText](d T) bool {
	if len(d) != 13 || d[0] != '7' || d[1] != '5' || d[2] != '6' {
		return false
	}
	return (10-weightedSum(d, 1, 3, 1, 3, 1, 3, 1, 3, 1, 3, 1, 3)%10)%10 == digitAt(d, 12)
}

// nirValid: France's NIR: sex (1, 2; 3, 4, 7, 8 for provisional numbers),
// birth month (01-12, 20-42 or 50-99 when unknown), key 97 - (the first
// 13 digits mod 97).
func nirValid[T digitsText](d T) bool {
	if len(d) != 15 {
		return false
	}
	switch d[0] {
	case '1', '2', '3', '4', '7', '8':
	default:
		return false
	}
	if m := num(d, 3, 2); m == 0 || (m > 12 && m < 20) || (m > 42 && m < 50) {
		return false
	}
	r := 0
	for i := range 13 {
		r = (r*10 + digitAt(d, i)) % 97
	}
	return 97-r == num(d, 13, 2)
}

// cnCheck is GB 11643's check character of the first 17 digits (ISO 7064
// MOD 11-2): "10X98765432"[sum mod 11].
func cnCheck[T digitsText](d T) byte {
	return "10X98765432"[weightedSum(d, 7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)%11]
}

// cnIDValid: China's resident id: an area code (provinces 11-82), a birth
// date of 1900-2099, a sequence, the check character. d is 18 characters,
// the last a digit or X.
func cnIDValid[T digitsText](d T) bool {
	if len(d) != 18 || d[0] < '1' || d[0] > '8' {
		return false
	}
	if c := num(d, 6, 2); c != 19 && c != 20 {
		return false
	}
	return validDate(num(d, 10, 2), num(d, 12, 2)) && cnCheck(d) == d[17]
}

// bareIDs returns the labels under which a number written as the bare
// digits d would be a national id: those whose check d passes. A bare
// number is reported only under one of them.
func bareIDs[T digitsText](d T) uint32 {
	switch len(d) {
	case 9:
		return flag(validSSN(d), labelSSN) | flag(sinValid(d), labelSIN) | flag(tfnValid(d), labelTFN) | flag(bsnValid(d), labelBSN)
	case 10:
		return flag(sePersonnummerValid(d), labelSE) | flag(cprValid(d), labelCPR)
	case 11:
		return flag(deTaxIDValid(d), labelDETaxID) | flag(peselValid(d), labelPESEL) | flag(cpfValid(d), labelCPF) |
			flag(fnrValid(d), labelFnr) | flag(beValid(d), labelBE)
	case 12:
		return flag(aadhaarValid(d), labelAadhaar) | flag(myNumberValid(d), labelMyNumber) | flag(sePersonnummerValid(d), labelSE)
	case 13:
		return flag(rrnValid(d), labelRRN)
	case 14:
		return flag(cnpjValid(d), labelCNPJ)
	}
	return 0
}

// flag is label when ok, else 0.
func flag(ok bool, label uint32) uint32 {
	if ok {
		return label
	}
	return 0
}

// labelRules names the rule of each label's id.
var labelRules = [...]struct {
	label uint32
	rule  string
}{
	{labelSSN, RuleUSSSN}, {labelSIN, RuleCASIN}, {labelTFN, RuleAUTFN}, {labelBSN, RuleNLBSN},
	{labelDETaxID, RuleDETaxID}, {labelPESEL, RulePLPESEL}, {labelCPF, RuleBRCPF}, {labelCNPJ, RuleBRCNPJ},
	{labelFnr, RuleNOFnr}, {labelBE, RuleBENationalNumber}, {labelSE, RuleSEPersonnummer}, {labelCPR, RuleDKCPR},
	{labelAadhaar, RuleINAadhaar}, {labelMyNumber, RuleJPMyNumber}, {labelRRN, RuleKRRRN},
}

// ruleOf returns the rule of the first label in is.
func ruleOf(is uint32) string {
	for _, l := range labelRules {
		if is&l.label != 0 {
			return l.rule
		}
	}
	return ""
}

// writtenID returns the rule of the national id that the numeric run part
// text[start:end] (digits d, shape s) is, or "": an id in a writing of its
// own ("123.456.789-09", "811218-9876", "1 85 05 78 006 084 36"), a bare
// number of 13 digits or more whose date and check leave no doubt (a
// South African, Swiss or French number, a Chinese one), or a number in its
// country's usual writing or bare under its label.
func writtenID(text string, start int, s *shape, d string) string {
	g := s.groups[:s.ngroups]
	bare := !s.formatted()
	labelled := func(want uint32) string {
		if is := bareIDs(d) & want; is != 0 {
			return ruleOf(labelsBefore(text, start, idLabelWindow, idLabelWords, false) & is)
		}
		return ""
	}
	if s.plus || s.parens || s.sepRuns {
		return ""
	}
	switch len(d) {
	case 9:
		if bare || (s.seps == " " || s.seps == "-") && groupsAre(g, 3, 3, 3) {
			return labelled(labelSIN | labelTFN | labelBSN | labelSSN)
		}
		if s.seps == "." && groupsAre(g, 4, 2, 3) {
			return labelled(labelBSN)
		}
	case 10:
		// YYMMDD-NNNN is also how lots and batches are numbered.
		if s.seps == "-" && groupsAre(g, 6, 4) {
			if _, ok := hetuAt(text, start); ok && labelsBefore(text, start, idLabelWindow, idLabelWords, false)&labelHETU != 0 {
				return RuleFIHETU
			}
		}
		if bare || s.seps == "-" && groupsAre(g, 6, 4) {
			return labelled(labelSE | labelCPR)
		}
	case 11:
		switch {
		case s.seps == ".-" && groupsAre(g, 3, 3, 3, 2) && cpfValid(d):
			return RuleBRCPF
		case s.seps == ".-" && groupsAre(g, 2, 2, 2, 3, 2) && beValid(d):
			return RuleBENationalNumber
		case s.seps == " " && groupsAre(g, 6, 5) && fnrValid(d):
			return RuleNOFnr
		case s.seps == " " && groupsAre(g, 2, 3, 3, 3):
			return labelled(labelDETaxID)
		case bare:
			return labelled(labelDETaxID | labelPESEL | labelCPF | labelFnr | labelBE)
		}
	case 12:
		if bare || (s.seps == " " || s.seps == "-") && groupsAre(g, 4, 4, 4) {
			return labelled(labelAadhaar | labelMyNumber | labelSE)
		}
		if s.seps == "-" && groupsAre(g, 8, 4) {
			return labelled(labelSE)
		}
	case 13:
		switch {
		case s.seps == "-" && groupsAre(g, 6, 7) && rrnValid(d):
			return RuleKRRRN
		case s.seps == "." && groupsAre(g, 3, 4, 4, 2) && ahvValid(d):
			return RuleCHAHV
		case bare && ahvValid(d):
			return RuleCHAHV
		case bare && zaIDValid(d):
			return RuleZAID
		case bare:
			return labelled(labelRRN)
		}
	case 14:
		if s.seps == "./-" && groupsAre(g, 2, 3, 3, 4, 2) && cnpjValid(d) {
			return RuleBRCNPJ
		}
		if bare {
			return labelled(labelCNPJ)
		}
	case 15:
		if (bare || s.seps == " " && groupsAre(g, 1, 2, 2, 2, 3, 3, 2)) && nirValid(d) {
			return RuleFRNIR
		}
	case 18:
		if bare && cnIDValid(d) {
			return RuleCNResidentID
		}
	}
	return ""
}

func groupsAre(g []int, want ...int) bool { return equalInts(g, want) }

func isUpperByte(c byte) bool { return class[c]&cUpper != 0 }

func isDigitByte(c byte) bool { return class[c]&cDigit != 0 }

// endsToken reports whether nothing of a word follows text[i:].
func endsToken[T ~string | ~[]byte](text T, i int) bool {
	return i >= len(text) || !isWordByte(text[i])
}

// countDigits returns how many digits start text[i:], at most limit.
func countDigits[T ~string | ~[]byte](text T, i, limit int) int {
	n := 0
	for i+n < len(text) && n < limit && isDigitByte(text[i+n]) {
		n++
	}
	return n
}

// letterID reads a national id starting with the upper-case letter at
// text[i], the start of a word: a Spanish NIE (X1234567L), a UK National
// Insurance number (AB 12 34 56 C; written together only under its
// label), an Italian codice fiscale or a Mexican CURP. It returns the id's
// end and rule; "" when there is none. In raw JSON (json true) labels are
// read as labelsBefore reads them there.
func letterID[T ~string | ~[]byte](text T, i int, json bool) (int, string) {
	n := len(text)
	if i+9 > n {
		return 0, ""
	}
	c1, c2 := text[i+1], text[i+2]
	switch {
	case isDigitByte(c1) || c1 == '-':
		if end, ok := nieAt(text, i); ok {
			return end, RuleESNIE
		}
		return 0, ""
	case !isUpperByte(c1):
		return 0, ""
	case isDigitByte(c2) || c2 == ' ':
		if end, spaced, ok := ninoAt(text, i); ok && (spaced || labelsBefore(text, i, idLabelWindow, idLabelWords, json)&labelNINO != 0) {
			return end, RuleUKNINO
		}
		return 0, ""
	case !isUpperByte(c2) || !isUpperByte(text[i+3]):
		return 0, "" // a codice fiscale has six letters first, a CURP four
	}
	j := i
	for j < n && j-i <= 18 && class[text[j]]&(cUpper|cDigit) != 0 {
		j++
	}
	if !endsToken(text, j) {
		return 0, ""
	}
	switch j - i {
	case 16:
		if fiscalCodeValid(text[i:j]) {
			return j, RuleITFiscalCode
		}
	case 18:
		if curpValid(text[i:j]) {
			return j, RuleMXCURP
		}
	}
	return 0, ""
}

// nieAt reads X1234567L, X-1234567-L (X, Y or Z for 0, 1 or 2; the
// letter the DNI's of those eight digits).
func nieAt[T ~string | ~[]byte](text T, i int) (int, bool) {
	p := 0
	switch text[i] {
	case 'X':
	case 'Y':
		p = 1
	case 'Z':
		p = 2
	default:
		return 0, false
	}
	j := i + 1
	dash := j < len(text) && text[j] == '-'
	if dash {
		j++
	}
	if countDigits(text, j, 8) != 7 {
		return 0, false
	}
	v := p*10000000 + num(text, j, 7)
	j += 7
	if dash {
		if j >= len(text) || text[j] != '-' {
			return 0, false
		}
		j++
	}
	if j >= len(text) || text[j] != dniLetters[v%23] || !endsToken(text, j+1) {
		return 0, false
	}
	return j + 1, true
}

// dniLetters are the check letters of the Spanish DNI and NIE, by the
// number mod 23.
const dniLetters = "TRWAGMYFPDXBNJZSQVHLCKE"

// ninoAt reads a National Insurance number: two prefix letters (not D F I
// Q U V, the second not O, the pair not BG GB KN NK NT TN ZZ), six digits,
// a suffix A-D; spaced reports "AB 12 34 56 C".
func ninoAt[T ~string | ~[]byte](text T, i int) (end int, spaced, ok bool) {
	a, b := text[i], text[i+1]
	if strings.IndexByte("DFIQUV", a) >= 0 || strings.IndexByte("DFIOQUV", b) >= 0 {
		return 0, false, false
	}
	for _, p := range [...]string{"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"} {
		if a == p[0] && b == p[1] {
			return 0, false, false
		}
	}
	j := i + 2
	if j < len(text) && text[j] == ' ' {
		spaced = true
		for range 3 {
			if j >= len(text) || text[j] != ' ' || countDigits(text, j+1, 3) != 2 {
				return 0, false, false
			}
			j += 3
		}
		if j < len(text) && text[j] == ' ' {
			j++
		}
	} else {
		if countDigits(text, j, 7) != 6 {
			return 0, false, false
		}
		j += 6
	}
	if j >= len(text) || text[j] < 'A' || text[j] > 'D' || !endsToken(text, j+1) {
		return 0, false, false
	}
	return j + 1, spaced, true
}

// cfOdd is the value of a codice fiscale character in an odd position
// (1st, 3rd, ...), by letter (A-Z) and by digit at 26+d.
var cfOdd = [36]int{1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23, 1, 0, 5, 7, 9, 13, 15, 17, 19, 21}

// fiscalCodeValid: an Italian codice fiscale, 16 upper-case letters and
// digits: six letters, year, month letter, day (+40), place, check letter.
// A digit of the date and place may be written as a letter (omocodia,
// L-V for 0-9).
func fiscalCodeValid[T ~string | ~[]byte](cf T) bool {
	const omocodia = "LMNPQRSTUV"
	for i := range 16 {
		c := cf[i]
		switch i {
		case 6, 7, 9, 10, 12, 13, 14:
			if !isDigitByte(c) && strings.IndexByte(omocodia, c) < 0 {
				return false
			}
		case 8:
			if strings.IndexByte("ABCDEHLMPRST", c) < 0 {
				return false
			}
		default:
			if !isUpperByte(c) {
				return false
			}
		}
	}
	sum := 0
	for i := range 15 {
		c := cf[i]
		v := int(c - 'A')
		if isDigitByte(c) {
			v = 26 + int(c-'0')
		}
		switch {
		case i%2 == 0:
			sum += cfOdd[v]
		case v >= 26:
			sum += v - 26
		default:
			sum += v
		}
	}
	return cf[15] == byte('A'+sum%26)
}

// curpValid: a Mexican CURP: four letters, a birth date, sex (H, M, X),
// state and consonant letters, a differentiator, RENAPO's check digit.
func curpValid[T ~string | ~[]byte](c T) bool {
	for i := range 18 {
		ch := c[i]
		switch {
		case i < 4 || (i >= 11 && i < 16):
			if !isUpperByte(ch) {
				return false
			}
		case i < 10 || i == 17:
			if !isDigitByte(ch) {
				return false
			}
		case i == 10:
			if ch != 'H' && ch != 'M' && ch != 'X' {
				return false
			}
		}
	}
	if !validDate(num(c, 6, 2), num(c, 8, 2)) {
		return false
	}
	sum := 0
	for i := range 17 {
		ch := c[i]
		v := int(ch - '0')
		if isUpperByte(ch) {
			v = int(ch-'A') + 10
			if ch > 'N' {
				v++ // Ñ comes after N
			}
		}
		sum += v * (18 - i)
	}
	return (10-sum%10)%10 == digitAt(c, 17)
}

// digitLetterID reads a national id starting with the digit at text[i],
// the start of a word, that holds a letter: a Spanish DNI (12345678Z,
// 12.345.678-Z), a Finnish HETU (131052-308T, 010101A123N) or a Chinese
// resident id ending in X. It returns the id's end and rule; "" when there
// is none. Callers look only where mayHoldLetter says it may be; a HETU without a letter, 131052-3082, is
// writtenID's, under its label (lots are numbered so).
func digitLetterID[T ~string | ~[]byte](text T, i int) (int, string) {
	n := len(text)
	switch k := countDigits(text, i, 18); k {
	case 2: // 12.345.678-Z
		if i+12 <= n && text[i+2] == '.' && countDigits(text, i+3, 4) == 3 && text[i+6] == '.' && countDigits(text, i+7, 4) == 3 {
			v := num(text, i, 2)*1000000 + num(text, i+3, 3)*1000 + num(text, i+7, 3)
			if end, ok := dniLetterAt(text, i+10, v); ok {
				return end, RuleESDNI
			}
		}
	case 8:
		if end, ok := dniLetterAt(text, i+8, num(text, i, 8)); ok {
			return end, RuleESDNI
		}
	case 6:
		if end, ok := hetuAt(text, i); ok && (isUpperByte(text[i+6]) || isUpperByte(text[i+10])) {
			return end, RuleFIHETU
		}
	case 17:
		if i+18 <= n && (text[i+17] == 'X' || text[i+17] == 'x') && endsToken(text, i+18) {
			var id [18]byte
			copyPrefix(id[:], text[i:i+18])
			id[17] = 'X'
			if cnIDValid(id[:]) {
				return i + 18, RuleCNResidentID
			}
		}
	}
	return 0, ""
}

// dniLetterAt reads the DNI's check letter of v at text[j], after an
// optional '-' or space.
func dniLetterAt[T ~string | ~[]byte](text T, j, v int) (int, bool) {
	if j < len(text) && (text[j] == '-' || text[j] == ' ') {
		j++
	}
	if j < len(text) && text[j] == dniLetters[v%23] && endsToken(text, j+1) {
		return j + 1, true
	}
	return 0, false
}

// hetuAt reads a HETU: DDMMYY, the century sign (+, -, Y-U for the 1900s,
// A-F for the 2000s), an individual number, the check character
// "0123456789ABCDEFHJKLMNPRSTUVWXY"[DDMMYYNNN mod 31].
func hetuAt[T ~string | ~[]byte](text T, i int) (int, bool) {
	if i+11 > len(text) || strings.IndexByte("+-ABCDEFUVWXY", text[i+6]) < 0 || countDigits(text, i+7, 3) != 3 || !endsToken(text, i+11) {
		return 0, false
	}
	if !validDate(num(text, i+2, 2), num(text, i, 2)) || num(text, i+7, 3) < 2 {
		return 0, false
	}
	v := num(text, i, 6)*1000 + num(text, i+7, 3)
	return i + 11, text[i+10] == "0123456789ABCDEFHJKLMNPRSTUVWXY"[v%31]
}

// mayHoldLetter reports whether the run of digits and separators from
// text[first] (a digit) to text[end] could be the start of an id of
// digitLetterID: its first group has 2, 6, 8 or 17 digits and it stops at
// a letter such an id holds there.
func mayHoldLetter[T ~string | ~[]byte](text T, first, end int) bool {
	if end >= len(text) || !isUpperByte(text[end]) && text[end] != 'x' {
		return false
	}
	switch countDigits(text, first, 18) {
	case 2, 6, 8, 17:
		return true
	}
	return false
}

package detect

// ibanLength is the length of an IBAN in each country of the SWIFT IBAN
// registry (release 99, 2024), by country code.
var ibanLength = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
	"BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27,
	"DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27,
	"GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22,
	"IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32,
	"LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19,
	"MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24,
	"PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24, "SC": 31,
	"SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28, "TL": 23,
	"TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}

// findIBAN reads an IBAN starting at text[i] (two upper-case letters seen):
// the country's length of upper-case letters and digits, written whole or
// in groups of four split by single spaces, not followed by more of a word,
// with check digits 02 to 98 and an ISO 7064 mod-97 remainder of 1. It
// returns the end.
func findIBAN(text string, i int) (int, bool) {
	length, ok := ibanLength[text[i:i+2]]
	if !ok {
		return 0, false
	}
	var buf [34]byte
	n := 0
	j := i
	grouped := false
	for n < length && j < len(text) {
		c := text[j]
		if c == ' ' && n%4 == 0 && n > 0 && (n == 4 || grouped) && j+1 < len(text) && text[j+1] != ' ' {
			grouped = true
			j++
			continue
		}
		if class[c]&(cDigit|cUpper) == 0 {
			return 0, false
		}
		if n >= 2 && n < 4 && class[c]&cDigit == 0 {
			return 0, false // check digits
		}
		buf[n] = c
		n++
		j++
	}
	if n < length || (j < len(text) && isWordByte(text[j])) {
		return 0, false
	}
	// Check digits are 02 to 98 (ISO 13616): 00, 01 and 99 pass mod 97
	// where 97, 98 and 02 would, and no IBAN has them.
	if check := int(buf[2]-'0')*10 + int(buf[3]-'0'); check < 2 || check > 98 {
		return 0, false
	}
	return j, mod97(buf[:n]) == 1
}

// mod97 is the IBAN's remainder: the first four characters moved to the
// end, letters as 10..35.
func mod97(iban []byte) int {
	r := 0
	add := func(c byte) {
		if c >= 'A' {
			v := int(c-'A') + 10
			r = (r*100 + v) % 97
			return
		}
		r = (r*10 + int(c-'0')) % 97
	}
	for _, c := range iban[4:] {
		add(c)
	}
	for _, c := range iban[:4] {
		add(c)
	}
	return r
}

package detect

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Labels: the words that say what a number next to them is. A number whose
// digits alone cannot be told from an order number (a national id that
// passes its check one time in ten, a phone number written without any
// formatting) is reported only when one of them stands before it: "BSN:
// 123456782", "Handy 01512 3456789", `"cpf": "12345678909"`.
const (
	labelPhone = 1 << iota
	labelSSN
	labelSIN
	labelTFN
	labelBSN
	labelDETaxID
	labelPESEL
	labelCPF
	labelCNPJ
	labelFnr
	labelBE
	labelSE
	labelCPR
	labelAadhaar
	labelMyNumber
	labelRRN
	labelNINO
	labelHETU
	// labelOther: a word that names another kind of number (Kundennummer,
	// order no., Artikel): a number after it is that, not a phone number.
	// "numero", "número" and "numéro" are not: Romance languages call a
	// phone number so ("al numero 02 1234 5678"); nor is "no", a word of
	// its own in most of them ("ligue no 21 234 5678").
	labelOther
)

// labelWords maps a label, lower case with its words joined ("Social
// Security" is "socialsecurity", "Steuer-ID" "steuerid"), to what it
// labels. Sources: the context words of Microsoft Presidio's recognizers
// (MIT) and the names the issuing countries give their numbers.
var labelWords = map[string]uint32{
	"tel": labelPhone, "tél": labelPhone, "phone": labelPhone, "telephone": labelPhone, "téléphone": labelPhone,
	"telefon": labelPhone, "telefono": labelPhone, "teléfono": labelPhone, "telefone": labelPhone,
	"telefoon": labelPhone, "mobile": labelPhone, "mobil": labelPhone, "mobiel": labelPhone, "móvil": labelPhone,
	"cellulare": labelPhone, "celular": labelPhone, "cell": labelPhone, "handy": labelPhone, "fax": labelPhone,
	"tlf": labelPhone, "puh": labelPhone, "puhelin": labelPhone,
	"matkapuhelin": labelPhone, "komórka": labelPhone, "telemóvel": labelPhone, "whatsapp": labelPhone,
	"phonenumber": labelPhone, "telefonnummer": labelPhone, "rufnummer": labelPhone, "mobilnummer": labelPhone,
	"handynummer": labelPhone, "portable": labelPhone, "gsm": labelPhone, "телефон": labelPhone,

	"ssn": labelSSN, "socialsecurity": labelSSN,
	"sin": labelSIN, "socialinsurance": labelSIN, "nas": labelSIN, "assurancesociale": labelSIN,
	// "tfn" is also Swedish for telephone; as a label of numbers, Australia's
	// tax file number is the likelier.
	"tfn": labelTFN, "taxfile": labelTFN,
	"bsn": labelBSN, "burgerservicenummer": labelBSN, "sofinummer": labelBSN,
	"steuerid": labelDETaxID, "steueridnr": labelDETaxID, "steueridentifikationsnummer": labelDETaxID,
	"idnr": labelDETaxID, "identifikationsnummer": labelDETaxID, "taxid": labelDETaxID, "tin": labelDETaxID,
	"pesel": labelPESEL,
	"cpf":   labelCPF, "cnpj": labelCNPJ,
	"fødselsnummer": labelFnr, "fodselsnummer": labelFnr, "fnr": labelFnr,
	"personnummer":        labelFnr | labelSE | labelCPR,
	"rijksregisternummer": labelBE, "rijksregister": labelBE, "rijksregisternr": labelBE, "insz": labelBE,
	"niss": labelBE, "national": labelBE, "registrenational": labelBE, "nationalnumber": labelBE,
	"personnr": labelSE, "pnr": labelSE,
	"cpr": labelCPR, "cprnr": labelCPR,
	"aadhaar": labelAadhaar, "aadhar": labelAadhaar, "uidai": labelAadhaar,
	"mynumber": labelMyNumber,
	"rrn":      labelRRN, "residentregistration": labelRRN,
	"nino": labelNINO, "nationalinsurance": labelNINO, "ninumber": labelNINO,
	"hetu": labelHETU, "henkilötunnus": labelHETU, "sotu": labelHETU, "personbeteckning": labelHETU,
	"personalidentitycode": labelHETU,

	"nr": labelOther, "nº": labelOther, "ref": labelOther, "reference": labelOther,
	"référence": labelOther, "referentie": labelOther, "order": labelOther, "invoice": labelOther,
	"artikel": labelOther, "article": labelOther, "ticket": labelOther, "lot": labelOther, "batch": labelOther,
	"charge": labelOther, "sku": labelOther, "serial": labelOther, "konto": labelOther, "account": labelOther,
	"auftrag": labelOther, "rechnung": labelOther, "bestellung": labelOther, "commande": labelOther,
	"facture": labelOther, "factura": labelOther, "pedido": labelOther, "zamówienie": labelOther,
}

// labelSuffixes name what a word that ends in them labels: compounds such
// as "Rückrufnummer" (a phone number) and "Kundennummer" (another
// number), the first that fits.
var labelSuffixes = [...]struct {
	suffix string
	is     uint32
}{
	{"rufnummer", labelPhone}, {"telefonnummer", labelPhone}, {"telefoonnummer", labelPhone},
	{"handynummer", labelPhone}, {"mobilnummer", labelPhone}, {"faxnummer", labelPhone}, {"telefon", labelPhone},
	{"nummer", labelOther}, {"number", labelOther},
}

// labelParts are labels in scripts written without spaces between words:
// a word that holds one is that label ("電話番号", "携帯電話").
var labelParts = [...]struct {
	part string
	is   uint32
}{
	{"電話", labelPhone}, {"电话", labelPhone}, {"手机", labelPhone}, {"携帯", labelPhone}, {"전화", labelPhone},
	{"휴대폰", labelPhone}, {"फ़ोन", labelPhone}, {"फोन", labelPhone}, {"मोबाइल", labelPhone},
	{"マイナンバー", labelMyNumber}, {"個人番号", labelMyNumber}, {"주민등록번호", labelRRN}, {"주민번호", labelRRN},
	{"आधार", labelAadhaar},
}

// Label windows: a phone number's label is one of the two words right
// before it; an id's may be a few words back ("CPF sob o nº", a CSV
// header).
const (
	phoneLabelWindow, phoneLabelWords = 24, 2
	idLabelWindow, idLabelWords       = 64, 6
)

// labelsBefore returns what the last words (at most words of them, in the
// window bytes before text[end]) label, alone or two or three in a row
// joined. In raw JSON (json true) a backslash escape's letter does not
// start a word, and a \u escape in the window, which may write any letter,
// counts as every label.
func labelsBefore[T ~string | ~[]byte](text T, end, window, words int, json bool) uint32 {
	lo := max(0, end-window)
	if json && hasUnicodeEscape(text[lo:end]) {
		return ^uint32(0)
	}
	var spans [idLabelWords][2]int // nearest first
	n := 0
	for i := end; n < words && n < len(spans) && i > lo; {
		for i > lo {
			r, size := lastRune(text[lo:i])
			if isLabelRune(r) {
				break
			}
			i -= size
		}
		e := i
		for i > lo {
			r, size := lastRune(text[lo:i])
			if !isLabelRune(r) {
				break
			}
			i -= size
		}
		if i == e {
			break
		}
		s := i
		if json && s > 0 && text[s-1] == '\\' {
			s++ // the letter of \n, \t, ...
		}
		if s < e {
			spans[n] = [2]int{s, e}
			n++
		}
	}
	var is uint32
	var buf [idLabelWindow]byte
	for k := 0; k < n; k++ {
		w := lower(buf[:0], text[spans[k][0]:spans[k][1]])
		is |= labelWords[string(w)]
		for _, l := range labelSuffixes {
			if len(w) >= len(l.suffix) && string(w[len(w)-len(l.suffix):]) == l.suffix {
				is |= l.is
				break
			}
		}
		if !isASCII(w) {
			for _, p := range labelParts {
				if strings.Contains(string(w), p.part) {
					is |= p.is
				}
			}
		}
		// The word with the one or two before it.
		for j := k + 1; j < n && j <= k+2; j++ {
			joined := buf[:0]
			for m := j; m >= k; m-- {
				joined = lower(joined, text[spans[m][0]:spans[m][1]])
			}
			is |= labelWords[string(joined)]
		}
	}
	return is
}

// isLabelRune: a letter or mark of a label's word.
func isLabelRune(r rune) bool {
	if r < utf8.RuneSelf {
		return class[byte(r)]&(cUpper|cLower) != 0
	}
	return unicode.IsLetter(r) || unicode.IsMark(r)
}

// lastRune decodes the last rune of s without converting it.
func lastRune[T ~string | ~[]byte](s T) (rune, int) {
	n := len(s)
	if n == 0 {
		return utf8.RuneError, 0
	}
	if s[n-1] < utf8.RuneSelf {
		return rune(s[n-1]), 1
	}
	var b [utf8.UTFMax]byte
	k := 1
	for k < utf8.UTFMax && k < n && !utf8.RuneStart(s[n-k]) {
		k++
	}
	for j := range k {
		b[j] = s[n-k+j]
	}
	r, size := utf8.DecodeRune(b[:k])
	if size != k {
		return utf8.RuneError, 1
	}
	return r, size
}

// copyPrefix copies the start of s into dst and returns how much it
// copied.
func copyPrefix[T ~string | ~[]byte](dst []byte, s T) int {
	n := min(len(dst), len(s))
	for i := range n {
		dst[i] = s[i]
	}
	return n
}

// lower appends s to dst with ASCII letters in lower case; what does not
// fit in dst's capacity is left out.
func lower[T ~string | ~[]byte](dst []byte, s T) []byte {
	for i := 0; i < len(s) && len(dst) < cap(dst); i++ {
		c := s[i]
		if class[c]&cUpper != 0 {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// hasUnicodeEscape reports whether s holds a \u escape's start.
func hasUnicodeEscape[T ~string | ~[]byte](s T) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '\\' && s[i+1] == 'u' {
			return true
		}
	}
	return false
}

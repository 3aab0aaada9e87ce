package detect

import (
	"strings"
	"testing"
)

// breakCheck changes the last character of an id (its check digit or
// letter, or the digit the check covers last) so its check fails.
func breakCheck(id string) string {
	last := id[len(id)-1]
	switch {
	case last >= '0' && last <= '9':
		last = '0' + (last-'0'+1)%10
	case last >= 'A' && last <= 'Z':
		last = 'A' + (last-'A'+1)%26
	}
	return id[:len(id)-1] + string(last)
}

// TestNationalIDs: each id in its usual writings and texts, found whole
// with its rule; the same text with the check broken finds nothing; an id
// that needs its label is not found without one. The valid numbers come
// from the held-out corpus, whose generator computes check digits apart
// from this package.
func TestNationalIDs(t *testing.T) {
	p := NewPII()
	for _, c := range []struct {
		text, id, rule string
		// unlabelled is the id in a text without its label; want it found
		// there too when alone is true.
		unlabelled string
		alone      bool
		// invalid replaces id in the broken text of numbers without a
		// check: an SSN's excluded area, a NINO's suffix past D.
		invalid string
	}{
		{"SSN: 439-87-6025", "439-87-6025", RuleUSSSN, "ref 439-87-6025", true, "666-87-6025"},
		{"SSN 457.96.9015 on file", "457.96.9015", RuleUSSSN, "id 457.96.9015", true, "457.00.9015"},
		{"Social Security No. 113458874", "113458874", RuleUSSSN, "Order 113458874", false, "913458874"},
		{"National Insurance number: YE 53 83 62 D", "YE 53 83 62 D", RuleUKNINO, "code YE 53 83 62 D", true, "YE 53 83 62 E"},
		{`{"nino": "HA913215B"}`, "HA913215B", RuleUKNINO, "SKU HA913215B", false, "GB913215B"},
		{"Steuer-ID: 45816209177", "45816209177", RuleDETaxID, "Kundennummer 45816209177", false, ""},
		{"Steueridentifikationsnummer 74 280 394 614", "74 280 394 614", RuleDETaxID, "Artikel 74 280 394 614", false, ""},
		{"NIR 2 76 01 83 312 591 05", "2 76 01 83 312 591 05", RuleFRNIR, "réf. 2 76 01 83 312 591 05", true, ""},
		{"numéro INSEE 271048744184939", "271048744184939", RuleFRNIR, "271048744184939", true, ""},
		{"DNI: 26040881M", "26040881M", RuleESDNI, "26040881M", true, ""},
		{"NIF 61.626.794-L", "61.626.794-L", RuleESDNI, "61.626.794-L", true, ""},
		{"NIE: X-9401042-E", "X-9401042-E", RuleESNIE, "X-9401042-E", true, ""},
		{"NIE Z4837091N.", "Z4837091N", RuleESNIE, "Z4837091N", true, ""},
		{"Codice fiscale: KPCTTQ65R25A264E", "KPCTTQ65R25A264E", RuleITFiscalCode, "KPCTTQ65R25A264E", true, ""},
		{"BSN: 204823444", "204823444", RuleNLBSN, "factuur 204823444", false, ""},
		{"burgerservicenummer 2230.94.584", "2230.94.584", RuleNLBSN, "2230.94.584", false, ""},
		{"Rijksregisternummer: 04.05.02-306.73", "04.05.02-306.73", RuleBENationalNumber, "04.05.02-306.73", true, ""},
		{`{"insz": "86082343558"}`, "86082343558", RuleBENationalNumber, "86082343558", false, ""},
		{"PESEL: 84011346603", "84011346603", RulePLPESEL, "faktura 84011346603", false, ""},
		{"Personnummer: 490202-9802", "490202-9802", RuleSEPersonnummer, "Lot 490202-9802", false, ""},
		{"personnr 19300310-5198", "19300310-5198", RuleSEPersonnummer, "build 19300310-5198", false, ""},
		{"Henkilötunnus: 221067-193S", "221067-193S", RuleFIHETU, "221067-193S", true, ""},
		{"hetu 110482-8906", "110482-8906", RuleFIHETU, "Lot 110482-8906", false, ""},
		{"CPR-nr.: 071159-8650", "071159-8650", RuleDKCPR, "Lot 071159-8650", false, ""},
		{"Fødselsnummer: 05111289338", "05111289338", RuleNOFnr, "ordre 05111289338", false, ""},
		{"fnr. 181154 40078", "181154 40078", RuleNOFnr, "181154 40078", true, ""},
		{"AHV-Nr.: 756.9228.9259.82", "756.9228.9259.82", RuleCHAHV, "756.9228.9259.82", true, ""},
		{"CPF: 326.558.674-08", "326.558.674-08", RuleBRCPF, "326.558.674-08", true, ""},
		{"CPF 46278704692", "46278704692", RuleBRCPF, "pedido 46278704692", false, ""},
		{"CNPJ: 59.714.277/0001-29", "59.714.277/0001-29", RuleBRCNPJ, "59.714.277/0001-29", true, ""},
		{"CURP: HECX850411MASSQL90", "HECX850411MASSQL90", RuleMXCURP, "HECX850411MASSQL90", true, ""},
		{"Aadhaar No.: 9398 0119 9945", "9398 0119 9945", RuleINAadhaar, "FedEx 9398 0119 9945", false, ""},
		{"आधार संख्या: 544603626453", "544603626453", RuleINAadhaar, "544603626453", false, ""},
		{"身份证号：420102194002175184", "420102194002175184", RuleCNResidentID, "420102194002175184", true, ""},
		{"主卡 11010119850314123X", "11010119850314123X", RuleCNResidentID, "11010119850314123X", true, ""},
		{"주민등록번호: 700912-2584632", "700912-2584632", RuleKRRRN, "700912-2584632", true, ""},
		{"マイナンバー：8002 2177 5380", "8002 2177 5380", RuleJPMyNumber, "注文番号 8002 2177 5380", false, ""},
		{"TFN: 186 510 204", "186 510 204", RuleAUTFN, "invoice 186 510 204", false, ""},
		{"SIN: 944 321 983", "944 321 983", RuleCASIN, "ticket 944-321-983", false, ""},
		{"ID number: 5210182470088", "5210182470088", RuleZAID, "5210182470088", true, ""},
	} {
		got := p.Find(c.text, nil)
		i := strings.Index(c.text, c.id)
		if len(got) != 1 || got[0] != (Finding{c.rule, i, i + len(c.id)}) {
			t.Errorf("Find(%q) = %v, want %s at %d:%d", c.text, got, c.rule, i, i+len(c.id))
		}
		if !p.Maybe(jsonString(c.text)) || !p.Maybe(jsonEscaped(c.text)) {
			t.Errorf("Maybe false on %q", c.text)
		}
		invalid := c.invalid
		if invalid == "" {
			invalid = breakCheck(c.id)
		}
		broken := strings.Replace(c.text, c.id, invalid, 1)
		if got := p.Find(broken, nil); len(got) != 0 {
			t.Errorf("Find(%q) = %v, want nothing (check broken)", broken, got)
		}
		if got := p.Find(c.unlabelled, nil); (len(got) == 1) != c.alone || len(got) > 1 {
			t.Errorf("Find(%q) = %v, want found: %v", c.unlabelled, got, c.alone)
		}
	}
}

// TestLabels: which words label which numbers, in plain and raw JSON text.
func TestLabels(t *testing.T) {
	for _, c := range []struct {
		text string
		json bool
		want uint32
	}{
		{"Tel.: ", false, labelPhone},
		{`"telefon": "`, false, labelPhone},
		{"電話番号：", false, labelPhone},
		{"Social Security No. ", false, labelSSN},
		{"ligue no ", false, 0},
		{"N° national : ", false, labelBE},
		{"Steuer-ID: ", false, labelDETaxID},
		{"CPR-nr.: ", false, labelCPR | labelOther},
		{"(f.nr. ", false, labelFnr | labelOther},
		{"Personnummer: ", false, labelFnr | labelSE | labelCPR | labelOther},
		{"Rückrufnummer ", false, labelPhone},
		{"Kundennummer ", false, labelOther},
		{"Tel. Nr. ", false, labelPhone | labelOther},
		{"al numero ", false, 0},
		{"name,ssn,state\nEmily Johnson,", false, labelSSN},
		{"since the ", false, 0},
		{"sin IVA ", false, labelSIN},
		{`\nssn: `, true, labelSSN},
		{`\u0053SN: `, true, ^uint32(0)},
		{"a b c d e f g h ssn i j k l m q ", false, 0}, // six words since the label
	} {
		if got := labelsBefore(c.text, len(c.text), idLabelWindow, idLabelWords, c.json); got != c.want {
			t.Errorf("labelsBefore(%q) = %b, want %b", c.text, got, c.want)
		}
	}
}

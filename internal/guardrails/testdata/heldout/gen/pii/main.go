//go:build ignore

// Command pii writes the personal-data half of the held-out corpus of
// issue 35: pii.jsonl (items with values the pii filter must redact whole)
// and pii-negatives.jsonl (hard negatives: what looks like personal data
// and is not). From internal/guardrails:
//
//	go run ./testdata/heldout/gen/pii/main.go -o testdata/heldout
//
// Every value is made up here from published formats (SOURCES-pii.md beside
// the data names each source and its licence): phone numbers are
// libphonenumber's example numbers of each region and type with their last
// digits drawn again until the library calls them valid, national ids and
// IBANs are random fields completed with the check digits their
// specifications define, e-mail addresses are invented names at invented
// domains. The seed is fixed and nothing iterates a map, so the output is
// the same on every run.
//
// The corpus is meant to be read by the detector's authors as little as
// possible: its texts follow how the values appear in tool output (JSON
// records, CSV rows, log lines, prose in the country's language), not what
// the detectors accept.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nyaruka/phonenumbers"
	"golang.org/x/net/idna"
)

// item is one line of the corpus, as internal/guardrails/heldout_test.go
// reads it.
type item struct {
	Text     string   `json:"text"`
	PII      []string `json:"pii"`
	Secrets  []string `json:"secrets"`
	Category string   `json:"category"`
	Source   string   `json:"source"`
}

// gen holds the generator's random source and what it has written.
type gen struct {
	rng      *rand.Rand
	pos, neg []item
}

func main() {
	out := flag.String("o", ".", "directory to write pii.jsonl and pii-negatives.jsonl into")
	seed := flag.Uint64("seed", 35, "the random source's seed; the committed files are seed 35's, others draw new values into the same texts")
	flag.Parse()
	g := &gen{rng: rand.New(rand.NewPCG(*seed, 2026))}
	for _, c := range countries {
		g.country(c)
	}
	g.usSSNs()
	g.cards()
	g.eaiAddresses()
	g.negatives()
	for _, f := range []struct {
		name  string
		items []item
	}{{"pii.jsonl", g.pos}, {"pii-negatives.jsonl", g.neg}} {
		if err := write(filepath.Join(*out, f.name), f.items); err != nil {
			fmt.Fprintln(os.Stderr, "pii:", err)
			os.Exit(1)
		}
	}
	fmt.Fprintf(os.Stderr, "pii: %d items with values, %d hard negatives\n", len(g.pos), len(g.neg))
}

func write(path string, items []item) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return err
		}
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// add records an item with values; every value must be in the text.
func (g *gen) add(category, source, text string, values ...string) {
	for _, v := range values {
		if !strings.Contains(text, v) {
			panic(fmt.Sprintf("%s: %q is not in %q", category, v, text))
		}
	}
	g.pos = append(g.pos, item{Text: text, PII: values, Secrets: []string{}, Category: "pii/" + category, Source: source})
}

// negative records a hard negative.
func (g *gen) negative(category, source, text string) {
	g.neg = append(g.neg, item{Text: text, PII: []string{}, Secrets: []string{}, Category: "negative/" + category, Source: source})
}

func pick[T any](g *gen, xs []T) T { return xs[g.rng.IntN(len(xs))] }

func (g *gen) digits(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('0' + g.rng.IntN(10))
	}
	return string(b)
}

func (g *gen) letters(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('A' + g.rng.IntN(26))
	}
	return string(b)
}

// between returns a random number in [lo, hi], zero-padded to width.
func (g *gen) between(lo, hi, width int) string {
	return fmt.Sprintf("%0*d", width, lo+g.rng.IntN(hi-lo+1))
}

// date returns a random birth date from 1930 to 2012 as yyyy, mm, dd.
func (g *gen) date() (y, m, d int) {
	y = 1930 + g.rng.IntN(83)
	m = 1 + g.rng.IntN(12)
	d = 1 + g.rng.IntN(28)
	return
}

// jsonText is s as a JSON string literal, non-ASCII kept.
func jsonText(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// group splits s into groups of the given sizes (the rest last) joined by sep.
func group(s string, sep string, sizes ...int) string {
	var parts []string
	for _, n := range sizes {
		if n >= len(s) {
			break
		}
		parts = append(parts, s[:n])
		s = s[n:]
	}
	return strings.Join(append(parts, s), sep)
}

// Check digits, each as its specification defines it (SOURCES-pii.md).

func luhnValid(d string) bool {
	sum, dbl := 0, false
	for i := len(d) - 1; i >= 0; i-- {
		v := int(d[i] - '0')
		if dbl {
			if v *= 2; v > 9 {
				v -= 9
			}
		}
		sum += v
		dbl = !dbl
	}
	return sum%10 == 0
}

// luhnDigit returns the digit that makes d+digit pass Luhn.
func luhnDigit(d string) string {
	for c := byte('0'); c <= '9'; c++ {
		if luhnValid(d + string(c)) {
			return string(c)
		}
	}
	panic("no Luhn digit")
}

// weighted returns the sum of d's digits times weights.
func weighted(d string, weights ...int) int {
	s := 0
	for i, w := range weights {
		s += int(d[i]-'0') * w
	}
	return s
}

// mod11Digit is the Brazilian CPF/CNPJ rule: 11 - sum mod 11, 0 when that
// is 10 or 11.
func mod11Digit(d string, weights ...int) string {
	r := weighted(d, weights...) % 11
	if r < 2 {
		return "0"
	}
	return strconv.Itoa(11 - r)
}

// iso7064Mod11_10 is the check digit of the German tax id.
func iso7064Mod11_10(d string) string {
	product := 10
	for i := 0; i < len(d); i++ {
		sum := (int(d[i]-'0') + product) % 10
		if sum == 0 {
			sum = 10
		}
		product = sum * 2 % 11
	}
	c := 11 - product
	if c == 10 {
		c = 0
	}
	return strconv.Itoa(c)
}

// verhoeff tables (Aadhaar's check digit).
var (
	vD = [10][10]int{
		{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 2, 3, 4, 0, 6, 7, 8, 9, 5}, {2, 3, 4, 0, 1, 7, 8, 9, 5, 6},
		{3, 4, 0, 1, 2, 8, 9, 5, 6, 7}, {4, 0, 1, 2, 3, 9, 5, 6, 7, 8}, {5, 9, 8, 7, 6, 0, 4, 3, 2, 1},
		{6, 5, 9, 8, 7, 1, 0, 4, 3, 2}, {7, 6, 5, 9, 8, 2, 1, 0, 4, 3}, {8, 7, 6, 5, 9, 3, 2, 1, 0, 4},
		{9, 8, 7, 6, 5, 4, 3, 2, 1, 0},
	}
	vP = [8][10]int{
		{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 5, 7, 6, 2, 8, 3, 0, 9, 4}, {5, 8, 0, 3, 7, 9, 6, 1, 4, 2},
		{8, 9, 1, 6, 0, 4, 3, 5, 2, 7}, {9, 4, 5, 3, 1, 2, 6, 8, 7, 0}, {4, 2, 8, 6, 5, 7, 3, 9, 0, 1},
		{2, 7, 9, 3, 8, 0, 6, 4, 1, 5}, {7, 0, 4, 6, 9, 1, 3, 2, 5, 8},
	}
	vInv = [10]int{0, 4, 3, 2, 1, 5, 6, 7, 8, 9}
)

func verhoeffDigit(d string) string {
	c := 0
	for i := 0; i < len(d); i++ {
		c = vD[c][vP[(i+1)%8][int(d[len(d)-1-i]-'0')]]
	}
	return strconv.Itoa(vInv[c])
}

// mod97 returns n mod 97 of a decimal string.
func mod97(n string) int {
	r := 0
	for i := 0; i < len(n); i++ {
		r = (r*10 + int(n[i]-'0')) % 97
	}
	return r
}

// ibanOf completes an IBAN from its country code and BBAN (ISO 13616
// check digits: 98 - (BBAN + country + "00" as digits) mod 97).
func ibanOf(cc, bban string) string {
	var num strings.Builder
	for _, c := range bban + cc + "00" {
		if c >= 'A' && c <= 'Z' {
			fmt.Fprintf(&num, "%d", c-'A'+10)
		} else {
			num.WriteRune(c)
		}
	}
	n, _ := new(big.Int).SetString(num.String(), 10)
	check := 98 - int(new(big.Int).Mod(n, big.NewInt(97)).Int64())
	return fmt.Sprintf("%s%02d%s", cc, check, bban)
}

// bban fills a SWIFT registry BBAN structure ("8n10n", "5n5n11c2n",
// "4a6n8n"): n digits, a upper-case letters, c letters or digits.
func (g *gen) bban(structure string) string {
	var b strings.Builder
	for s := structure; s != ""; {
		i := 0
		for s[i] >= '0' && s[i] <= '9' {
			i++
		}
		n, _ := strconv.Atoi(s[:i])
		switch s[i] {
		case 'n':
			b.WriteString(g.digits(n))
		case 'a':
			b.WriteString(g.letters(n))
		case 'c':
			for range n {
				if g.rng.IntN(3) == 0 {
					b.WriteString(g.letters(1))
				} else {
					b.WriteString(g.digits(1))
				}
			}
		}
		s = s[i+1:]
	}
	return b.String()
}

// groupIBAN writes an IBAN in its paper format, groups of four.
func groupIBAN(s string) string {
	var parts []string
	for len(s) > 4 {
		parts = append(parts, s[:4])
		s = s[4:]
	}
	return strings.Join(append(parts, s), " ")
}

// punycode returns the ASCII (xn--) form of a Unicode domain (RFC 5891).
func punycode(domain string) string {
	a, err := idna.Lookup.ToASCII(domain)
	if err != nil {
		panic(fmt.Sprintf("punycode %q: %v", domain, err))
	}
	return a
}

// phoneNumber returns a valid number of region and type: the library's
// example number with its last four digits drawn again until the library
// calls it valid.
func (g *gen) phoneNumber(region string, typ phonenumbers.PhoneNumberType) *phonenumbers.PhoneNumber {
	ex := phonenumbers.GetExampleNumberForType(region, typ)
	if ex == nil {
		ex = phonenumbers.GetExampleNumber(region)
	}
	for range 200 {
		nsn := ex.GetNationalNumber()
		nsn = nsn - nsn%10000 + uint64(g.rng.IntN(10000))
		n := &phonenumbers.PhoneNumber{CountryCode: ex.CountryCode, NationalNumber: &nsn, ItalianLeadingZero: ex.ItalianLeadingZero, NumberOfLeadingZeros: ex.NumberOfLeadingZeros}
		if phonenumbers.IsValidNumber(n) && phonenumbers.GetNumberType(n) == phonenumbers.GetNumberType(ex) {
			return n
		}
	}
	panic("no valid number for " + region)
}

// language holds how a language writes the texts values appear in.
type language struct {
	phoneWord, mobileWord, emailWord string // labels: "Telefon", "Handy", "E-Mail"
	nameKey, phoneKey, cityKey       string // JSON keys and CSV headers
	sep                              string // CSV separator
	callBack, mailTo, transfer       []string
}

var (
	english = &language{
		phoneWord: "Phone", mobileWord: "Mobile", emailWord: "Email", nameKey: "name", phoneKey: "phone", cityKey: "city", sep: ",",
		callBack: []string{"Please call {name} back on {phone} before 5 pm.", "Customer {name} called from {phone} about the late delivery.", "You can reach me at {phone} if anything is unclear."},
		mailTo:   []string{"Please forward the contract to {name} at {email}.", "Reply-To: {name} <{email}>", "I'm out of office; urgent matters go to {email}."},
		transfer: []string{"Please pay the invoice to IBAN {iban} (account holder {name}).", "Refund approved, will be sent to {iban} within 3 days."},
	}
	german = &language{
		phoneWord: "Telefon", mobileWord: "Handy", emailWord: "E-Mail", nameKey: "name", phoneKey: "telefon", cityKey: "ort", sep: ";",
		callBack: []string{"Bitte rufen Sie {name} unter {phone} zurück.", "Kunde {name} hat angerufen (Rückrufnummer {phone}), es geht um die Rechnung.", "Sie erreichen mich tagsüber unter {phone}."},
		mailTo:   []string{"Bitte senden Sie die Unterlagen an {name}, {email}.", "Antwort an: {name} <{email}>", "Ich bin im Urlaub; in dringenden Fällen schreiben Sie an {email}."},
		transfer: []string{"Bitte überweisen Sie den Betrag auf das Konto {iban} (Kontoinhaber: {name}).", "Die Erstattung geht an die IBAN {iban}."},
	}
	french = &language{
		phoneWord: "Tél.", mobileWord: "Portable", emailWord: "Courriel", nameKey: "nom", phoneKey: "telephone", cityKey: "ville", sep: ";",
		callBack: []string{"Merci de rappeler {name} au {phone} avant 17 h.", "Le client {name} a appelé depuis le {phone} au sujet de sa commande.", "Vous pouvez me joindre au {phone}."},
		mailTo:   []string{"Merci d'envoyer le devis à {name} ({email}).", "Répondre à : {name} <{email}>", "Je suis absent ; pour toute urgence écrivez à {email}."},
		transfer: []string{"Merci de virer le montant sur le compte {iban} (titulaire : {name}).", "Le remboursement sera versé sur l'IBAN {iban}."},
	}
	spanish = &language{
		phoneWord: "Teléfono", mobileWord: "Móvil", emailWord: "Correo", nameKey: "nombre", phoneKey: "telefono", cityKey: "ciudad", sep: ";",
		callBack: []string{"Por favor, llame a {name} al {phone} antes de las 17:00.", "El cliente {name} llamó desde el {phone} por el retraso del pedido.", "Puede contactarme en el {phone}."},
		mailTo:   []string{"Envíe el contrato a {name} ({email}), por favor.", "Responder a: {name} <{email}>", "Estoy de vacaciones; para urgencias escriba a {email}."},
		transfer: []string{"Realice la transferencia a la cuenta {iban} (titular: {name}).", "El reembolso se abonará en el IBAN {iban}."},
	}
	italian = &language{
		phoneWord: "Tel.", mobileWord: "Cellulare", emailWord: "Email", nameKey: "nome", phoneKey: "telefono", cityKey: "citta", sep: ";",
		callBack: []string{"Si prega di richiamare {name} al numero {phone}.", "Il cliente {name} ha chiamato dal {phone} per la fattura.", "Potete contattarmi al {phone}."},
		mailTo:   []string{"Inviare il preventivo a {name} ({email}).", "Rispondi a: {name} <{email}>", "Sono in ferie; per urgenze scrivete a {email}."},
		transfer: []string{"Effettuare il bonifico sul conto {iban} intestato a {name}.", "Il rimborso verrà accreditato sull'IBAN {iban}."},
	}
	dutch = &language{
		phoneWord: "Tel.", mobileWord: "Mobiel", emailWord: "E-mail", nameKey: "naam", phoneKey: "telefoon", cityKey: "plaats", sep: ";",
		callBack: []string{"Wilt u {name} terugbellen op {phone}?", "Klant {name} belde vanaf {phone} over de levering.", "Ik ben bereikbaar op {phone}."},
		mailTo:   []string{"Stuur de offerte naar {name} ({email}).", "Antwoord aan: {name} <{email}>", "Ik ben afwezig; stuur dringende zaken naar {email}."},
		transfer: []string{"Gelieve het bedrag over te maken op rekening {iban} t.n.v. {name}.", "De terugbetaling gaat naar IBAN {iban}."},
	}
	polish = &language{
		phoneWord: "Tel.", mobileWord: "Komórka", emailWord: "E-mail", nameKey: "imie_nazwisko", phoneKey: "telefon", cityKey: "miasto", sep: ";",
		callBack: []string{"Proszę oddzwonić do {name} pod numer {phone}.", "Klient {name} dzwonił z numeru {phone} w sprawie faktury.", "Jestem dostępny pod numerem {phone}."},
		mailTo:   []string{"Proszę wysłać umowę do {name} ({email}).", "Odpowiedz do: {name} <{email}>", "Jestem na urlopie; w pilnych sprawach proszę pisać na {email}."},
		transfer: []string{"Proszę o przelew na rachunek {iban} (właściciel: {name}).", "Zwrot zostanie przelany na IBAN {iban}."},
	}
	swedish = &language{
		phoneWord: "Tfn", mobileWord: "Mobil", emailWord: "E-post", nameKey: "namn", phoneKey: "telefon", cityKey: "ort", sep: ";",
		callBack: []string{"Ring tillbaka till {name} på {phone}.", "Kunden {name} ringde från {phone} om leveransen.", "Du når mig på {phone}."},
		mailTo:   []string{"Skicka avtalet till {name} ({email}).", "Svara till: {name} <{email}>", "Jag är ledig; brådskande ärenden till {email}."},
		transfer: []string{"Betala in beloppet till konto {iban} (kontoinnehavare {name}).", "Återbetalningen sker till IBAN {iban}."},
	}
	finnish = &language{
		phoneWord: "Puh.", mobileWord: "Matkapuhelin", emailWord: "Sähköposti", nameKey: "nimi", phoneKey: "puhelin", cityKey: "kaupunki", sep: ";",
		callBack: []string{"Soittakaa takaisin {name}lle numeroon {phone}.", "Asiakas {name} soitti numerosta {phone} laskusta.", "Tavoitatte minut numerosta {phone}."},
		mailTo:   []string{"Lähettäkää sopimus osoitteeseen {email} ({name}).", "Vastaus: {name} <{email}>", "Olen lomalla; kiireelliset asiat osoitteeseen {email}."},
		transfer: []string{"Maksu tilille {iban} (saaja {name}).", "Palautus maksetaan tilille {iban}."},
	}
	danish = &language{
		phoneWord: "Tlf.", mobileWord: "Mobil", emailWord: "E-mail", nameKey: "navn", phoneKey: "telefon", cityKey: "by", sep: ";",
		callBack: []string{"Ring venligst tilbage til {name} på {phone}.", "Kunden {name} ringede fra {phone} om leveringen.", "Du kan fange mig på tlf. {phone}."},
		mailTo:   []string{"Send kontrakten til {name} ({email}).", "Svar til: {name} <{email}>", "Jeg er på ferie; skriv til {email} i hastesager."},
		transfer: []string{"Beløbet bedes indbetalt på konto {iban} (kontohaver {name}).", "Tilbagebetalingen sker til IBAN {iban}."},
	}
	norwegian = &language{
		phoneWord: "Tlf.", mobileWord: "Mobil", emailWord: "E-post", nameKey: "navn", phoneKey: "telefon", cityKey: "sted", sep: ";",
		callBack: []string{"Vennligst ring {name} tilbake på {phone}.", "Kunden {name} ringte fra {phone} om fakturaen.", "Du når meg på tlf. {phone}."},
		mailTo:   []string{"Send kontrakten til {name} ({email}).", "Svar til: {name} <{email}>", "Jeg er på ferie; haster det, skriv til {email}."},
		transfer: []string{"Beløpet betales til konto {iban} (kontoeier {name}).", "Refusjonen utbetales til IBAN {iban}."},
	}
	portuguese = &language{
		phoneWord: "Tel.", mobileWord: "Telemóvel", emailWord: "E-mail", nameKey: "nome", phoneKey: "telefone", cityKey: "cidade", sep: ";",
		callBack: []string{"Por favor ligue de volta para {name} no {phone}.", "O cliente {name} ligou do {phone} sobre a encomenda.", "Pode contactar-me pelo {phone}."},
		mailTo:   []string{"Envie o contrato para {name} ({email}).", "Responder para: {name} <{email}>", "Estou de férias; assuntos urgentes para {email}."},
		transfer: []string{"Efetue a transferência para a conta {iban} (titular: {name}).", "O reembolso será feito para o IBAN {iban}."},
	}
	brazilian = &language{
		phoneWord: "Tel.", mobileWord: "Celular", emailWord: "E-mail", nameKey: "nome", phoneKey: "telefone", cityKey: "cidade", sep: ";",
		callBack: []string{"Por favor, retorne a ligação para {name} no {phone}.", "A cliente {name} ligou do número {phone} sobre o pedido.", "Pode me chamar no WhatsApp {phone}."},
		mailTo:   []string{"Envie o contrato para {name} ({email}).", "Responder para: {name} <{email}>", "Estou de férias; assuntos urgentes para {email}."},
		transfer: []string{"Faça a transferência para a conta {iban} (titular: {name}).", "O reembolso será creditado no IBAN {iban}."},
	}
	chinese = &language{
		phoneWord: "电话", mobileWord: "手机", emailWord: "邮箱", nameKey: "姓名", phoneKey: "电话", cityKey: "城市", sep: ",",
		callBack: []string{"请回电给{name}，电话：{phone}。", "客户{name}来电（{phone}）询问订单状态。", "如有问题请拨打 {phone} 联系我。"},
		mailTo:   []string{"请将合同发送给{name}，邮箱：{email}", "回复：{name} <{email}>", "我正在休假，紧急事务请发邮件至 {email} 。"},
	}
	korean = &language{
		phoneWord: "전화", mobileWord: "휴대폰", emailWord: "이메일", nameKey: "이름", phoneKey: "전화번호", cityKey: "도시", sep: ",",
		callBack: []string{"{name} 님께 {phone} 으로 회신 부탁드립니다.", "고객 {name} 님이 {phone} 에서 전화하셨습니다.", "문의: {phone}"},
		mailTo:   []string{"계약서를 {name} 님({email})께 보내 주세요.", "회신: {name} <{email}>", "휴가 중입니다. 급한 용무는 {email} 로 보내 주세요."},
	}
	japanese = &language{
		phoneWord: "電話", mobileWord: "携帯", emailWord: "メール", nameKey: "氏名", phoneKey: "電話番号", cityKey: "市区町村", sep: ",",
		callBack: []string{"{name}様に {phone} まで折り返しお電話ください。", "お客様（{name}様）から {phone} よりお問い合わせがありました。", "連絡先：{phone}"},
		mailTo:   []string{"契約書を{name}様（{email}）へ送付してください。", "返信先：{name} <{email}>", "休暇中です。緊急の場合は {email} までご連絡ください。"},
	}
	hindi = &language{
		phoneWord: "फ़ोन", mobileWord: "मोबाइल", emailWord: "ईमेल", nameKey: "naam", phoneKey: "phone", cityKey: "shahar", sep: ",",
		callBack: []string{"कृपया {name} को {phone} पर वापस कॉल करें।", "ग्राहक {name} ने {phone} से फ़ोन किया था।", "मुझसे {phone} पर संपर्क करें।"},
		mailTo:   []string{"कृपया अनुबंध {name} को {email} पर भेजें।", "उत्तर दें: {name} <{email}>", "मैं छुट्टी पर हूँ; ज़रूरी काम के लिए {email} पर लिखें।"},
	}
)

// person is an invented name and the local parts of their addresses.
type person struct {
	name  string
	local string // ASCII
	uni   string // in the name's own letters; "" when that is the ASCII one
}

// country is what the corpus writes for one country.
type country struct {
	cc      string // ISO 3166-1 alpha-2, also the phone region
	lang    *language
	second  *language // a second language of the country, or nil
	city    string
	people  []person
	domains []string // mail domains: invented companies and common providers
	idn     []string // Unicode domains (RFC 5890), ASCII-compatible forms derived
	bban    string   // SWIFT IBAN registry BBAN structure; "" without IBAN
	ids     []idKind
	// variants are the country's customary ways to write a national
	// number besides libphonenumber's national format.
	variants func(national string) []string
}

var countries = []country{
	{cc: "US", lang: english, city: "Denver", people: []person{{"Emily Johnson", "emily.johnson", ""}, {"Michael Brown", "mbrown", ""}, {"Jessica Davis", "jess.davis", ""}},
		domains: []string{"gmail.com", "northwind-logistics.com", "harborview-dental.com"}, ids: nil,
		variants: func(n string) []string {
			d := onlyDigits(n)
			return []string{d[:3] + "-" + d[3:6] + "-" + d[6:], d[:3] + "." + d[3:6] + "." + d[6:]}
		}},
	{cc: "CA", lang: english, second: french, city: "Montréal", people: []person{{"Olivia Tremblay", "olivia.tremblay", ""}, {"Étienne Gagnon", "etienne.gagnon", "étienne.gagnon"}, {"Liam Roy", "liam.roy", ""}},
		domains: []string{"videotron.ca", "maple-dental.ca"}, idn: []string{"érable-conseil.ca"}, ids: []idKind{caSIN},
		variants: func(n string) []string { d := onlyDigits(n); return []string{d[:3] + "-" + d[3:6] + "-" + d[6:]} }},
	{cc: "GB", lang: english, city: "Leeds", people: []person{{"Oliver Smith", "oliver.smith", ""}, {"Amelia Jones", "amelia.jones", ""}, {"Harry Taylor", "h.taylor", ""}},
		domains: []string{"btinternet.com", "yorkshire-joinery.co.uk", "outlook.com"}, bban: "4a6n8n", ids: []idKind{ukNINO},
		variants: func(n string) []string {
			if a, b, _ := strings.Cut(n, " "); strings.HasPrefix(a, "01") || strings.HasPrefix(a, "02") {
				return []string{"(" + a + ") " + b} // area codes, not mobiles
			}
			return nil
		}},
	{cc: "DE", lang: german, city: "Köln", people: []person{{"Jürgen Müller", "juergen.mueller", "jürgen.müller"}, {"Anna Schröder", "anna.schroeder", "anna.schröder"}, {"Lukas Weiß", "lukas.weiss", "lukas.weiß"}},
		domains: []string{"web.de", "gmx.de", "kanzlei-becker.de"}, idn: []string{"müller-bau.de", "bäckerei-köhler.de"}, bban: "8n10n", ids: []idKind{deTaxID},
		variants: func(n string) []string {
			a, b, _ := strings.Cut(n, " ")
			return []string{a + "/" + b, "(" + a + ") " + b, a + "-" + b}
		}},
	{cc: "FR", lang: french, city: "Lyon", people: []person{{"François Lefèvre", "francois.lefevre", "françois.lefèvre"}, {"Camille Dubois", "camille.dubois", ""}, {"Hélène Girard", "helene.girard", "hélène.girard"}},
		domains: []string{"orange.fr", "free.fr", "cabinet-moreau.fr"}, idn: []string{"société-girard.fr", "crêperie-lefèvre.fr"}, bban: "5n5n11c2n", ids: []idKind{frNIR},
		variants: func(n string) []string {
			return []string{strings.ReplaceAll(n, " ", "."), strings.ReplaceAll(n, " ", "-")}
		}},
	{cc: "ES", lang: spanish, city: "Sevilla", people: []person{{"José Pérez", "jose.perez", "josé.pérez"}, {"Lucía Fernández", "lucia.fernandez", "lucía.fernández"}, {"Javier Muñoz", "javier.munoz", "javier.muñoz"}},
		domains: []string{"correo.es", "telefonica.net", "gestoria-navarro.es"}, idn: []string{"peña-abogados.es", "viñedos-muñoz.es"}, bban: "4n4n1n1n10n", ids: []idKind{esDNI, esNIE},
		variants: func(n string) []string { d := onlyDigits(n); return []string{d[:3] + " " + d[3:6] + " " + d[6:]} }},
	{cc: "IT", lang: italian, city: "Bologna", people: []person{{"Giuseppe Rossi", "giuseppe.rossi", ""}, {"Francesca Bianchi", "f.bianchi", ""}, {"Niccolò Esposito", "niccolo.esposito", "niccolò.esposito"}},
		domains: []string{"libero.it", "studio-ferrari.it", "tiscali.it"}, idn: []string{"caffè-rossi.it"}, bban: "1a5n5n12c", ids: []idKind{itFiscalCode},
		variants: func(n string) []string {
			a, b, _ := strings.Cut(n, " ")
			return []string{a + "-" + strings.ReplaceAll(b, " ", "")}
		}},
	{cc: "NL", lang: dutch, city: "Utrecht", people: []person{{"Jan de Vries", "jan.devries", ""}, {"Sanne Jansen", "sanne.jansen", ""}, {"Daan Bakker", "daan.bakker", ""}},
		domains: []string{"ziggo.nl", "kpnmail.nl", "bakker-installatie.nl"}, bban: "4a10n", ids: []idKind{nlBSN},
		variants: func(n string) []string {
			a, b, _ := strings.Cut(n, " ")
			return []string{a + "-" + strings.ReplaceAll(b, " ", "")}
		}},
	{cc: "BE", lang: dutch, second: french, city: "Gent", people: []person{{"Lotte Peeters", "lotte.peeters", ""}, {"Arnaud Lambert", "arnaud.lambert", ""}, {"Mathéo Dubois", "matheo.dubois", "mathéo.dubois"}},
		domains: []string{"telenet.be", "skynet.be", "boekhouding-claes.be"}, bban: "3n7n2n", ids: []idKind{beNationalNumber},
		variants: func(n string) []string { a, b, _ := strings.Cut(n, " "); return []string{a + "/" + b} }},
	{cc: "PL", lang: polish, city: "Kraków", people: []person{{"Łukasz Wójcik", "lukasz.wojcik", "łukasz.wójcik"}, {"Agnieszka Kowalczyk", "a.kowalczyk", ""}, {"Paweł Zieliński", "pawel.zielinski", "paweł.zieliński"}},
		domains: []string{"wp.pl", "onet.pl", "biuro-nowak.pl"}, idn: []string{"łódź-biuro.pl"}, bban: "8n16n", ids: []idKind{plPESEL},
		variants: func(n string) []string { return []string{strings.ReplaceAll(n, " ", "-")} }},
	{cc: "SE", lang: swedish, city: "Göteborg", people: []person{{"Åsa Ström", "asa.strom", "åsa.ström"}, {"Erik Johansson", "erik.johansson", ""}, {"Björn Lindqvist", "bjorn.lindqvist", "björn.lindqvist"}},
		domains: []string{"telia.com", "bredband2.se", "lindqvist-bygg.se"}, idn: []string{"räksmörgås.se", "företagsbyrån.se"}, bban: "3n16n1n", ids: []idKind{sePersonnummer},
		variants: func(n string) []string { return nil }},
	{cc: "FI", lang: finnish, city: "Tampere", people: []person{{"Mikko Virtanen", "mikko.virtanen", ""}, {"Päivi Mäkinen", "paivi.makinen", "päivi.mäkinen"}, {"Jussi Nieminen", "jussi.nieminen", ""}},
		domains: []string{"elisanet.fi", "kolumbus.fi", "tilitoimisto-laine.fi"}, idn: []string{"mäkinen-oy.fi"}, bban: "3n11n", ids: []idKind{fiHETU},
		variants: func(n string) []string { a, b, _ := strings.Cut(n, " "); return []string{a + "-" + b} }},
	{cc: "DK", lang: danish, city: "Aarhus", people: []person{{"Søren Jørgensen", "soren.jorgensen", "søren.jørgensen"}, {"Mette Nielsen", "mette.nielsen", ""}, {"Anders Hansen", "anders.hansen", ""}},
		domains: []string{"mail.dk", "stofanet.dk", "hansen-vvs.dk"}, idn: []string{"jørgensen-vvs.dk"}, bban: "4n9n1n", ids: []idKind{dkCPR},
		variants: func(n string) []string { return nil }},
	{cc: "NO", lang: norwegian, city: "Bergen", people: []person{{"Ingrid Bøe", "ingrid.boe", "ingrid.bøe"}, {"Kari Haugen", "kari.haugen", ""}, {"Håkon Berg", "hakon.berg", "håkon.berg"}},
		domains: []string{"online.no", "getmail.no", "berg-regnskap.no"}, idn: []string{"bøe-bygg.no"}, bban: "4n6n1n", ids: []idKind{noFnr},
		variants: func(n string) []string { return nil }},
	{cc: "CH", lang: german, second: french, city: "Zürich", people: []person{{"Reto Meier", "reto.meier", ""}, {"Nicole Brunner", "nicole.brunner", ""}, {"Urs Käser", "urs.kaeser", "urs.käser"}},
		domains: []string{"bluewin.ch", "treuhand-keller.ch"}, idn: []string{"zürich-treuhand.ch"}, bban: "5n12c", ids: []idKind{chAHV},
		variants: func(n string) []string { return nil }},
	{cc: "AT", lang: german, city: "Graz", people: []person{{"Katharina Gruber", "katharina.gruber", ""}, {"Florian Huber", "florian.huber", ""}, {"Jörg Pichler", "joerg.pichler", "jörg.pichler"}},
		domains: []string{"aon.at", "chello.at", "steuerberatung-huber.at"}, idn: []string{"käserei-gruber.at"}, bban: "5n11n",
		variants: func(n string) []string { a, b, _ := strings.Cut(n, " "); return []string{a + "/" + b} }},
	{cc: "PT", lang: portuguese, city: "Porto", people: []person{{"João Silva", "joao.silva", "joão.silva"}, {"Inês Costa", "ines.costa", "inês.costa"}, {"Tiago Martins", "tiago.martins", ""}},
		domains: []string{"sapo.pt", "clix.pt", "contabilidade-martins.pt"}, idn: []string{"joão-advogados.pt"}, bban: "4n4n11n2n",
		variants: func(n string) []string { return nil }},
	{cc: "IE", lang: english, city: "Cork", people: []person{{"Siobhán Murphy", "siobhan.murphy", "siobhán.murphy"}, {"Conor Kelly", "conor.kelly", ""}, {"Aoife Byrne", "aoife.byrne", ""}},
		domains: []string{"eircom.net", "byrne-accountants.ie"}, bban: "4a6n8n",
		variants: func(n string) []string { return nil }},
	{cc: "BR", lang: brazilian, city: "Belo Horizonte", people: []person{{"Ana Souza", "ana.souza", ""}, {"João Oliveira", "joao.oliveira", "joão.oliveira"}, {"Mariana Conceição", "mariana.conceicao", "mariana.conceição"}},
		domains: []string{"uol.com.br", "bol.com.br", "contabil-souza.com.br"}, idn: []string{"conceição-imóveis.com.br"}, bban: "8n5n10n1a1c", ids: []idKind{brCPF, brCNPJ},
		variants: func(n string) []string { return []string{strings.NewReplacer("(", "", ")", "").Replace(n)} }},
	{cc: "MX", lang: spanish, city: "Guadalajara", people: []person{{"Alejandro Hernández", "alejandro.hernandez", "alejandro.hernández"}, {"Guadalupe García", "lupita.garcia", ""}, {"Sofía Martínez", "sofia.martinez", "sofía.martínez"}},
		domains: []string{"prodigy.net.mx", "hotmail.com", "despacho-ruiz.com.mx"}, ids: []idKind{mxCURP},
		variants: func(n string) []string { return nil }},
	{cc: "IN", lang: english, second: hindi, city: "Pune", people: []person{{"Rahul Sharma", "rahul.sharma", "राहुल.शर्मा"}, {"Priya Patel", "priya.patel", ""}, {"Arjun Reddy", "arjun.reddy", ""}},
		domains: []string{"rediffmail.com", "gmail.com", "sharma-traders.in"}, idn: []string{"डाटामेल.भारत"}, ids: []idKind{inAadhaar},
		variants: func(n string) []string { return []string{strings.TrimPrefix(n, "0")} }},
	{cc: "CN", lang: chinese, city: "杭州", people: []person{{"张伟", "zhang.wei", "张伟"}, {"王芳", "wangfang", "王芳"}, {"李娜", "li.na", "李娜"}},
		domains: []string{"qq.com", "163.com", "sina.com"}, idn: []string{"公司.中国", "网络.中国"}, ids: []idKind{cnResidentID},
		variants: func(n string) []string {
			a, b, _ := strings.Cut(n, " ")
			return []string{a + "-" + strings.ReplaceAll(b, " ", "")}
		}},
	{cc: "KR", lang: korean, city: "부산", people: []person{{"김민준", "minjun.kim", "김민준"}, {"이서연", "seoyeon.lee", "이서연"}, {"박지훈", "jihoon.park", "박지훈"}},
		domains: []string{"naver.com", "daum.net", "hanmail.net"}, idn: []string{"회사.한국"}, ids: []idKind{krRRN},
		variants: func(n string) []string { return nil }},
	{cc: "JP", lang: japanese, city: "大阪市", people: []person{{"山田太郎", "taro.yamada", "山田太郎"}, {"佐藤花子", "hanako.sato", "佐藤花子"}, {"鈴木一郎", "ichiro.suzuki", "すずき"}},
		domains: []string{"yahoo.co.jp", "docomo.ne.jp", "tanaka-shoji.co.jp"}, idn: []string{"会社.jp", "日本語ドメイン.jp"}, ids: []idKind{jpMyNumber},
		variants: func(n string) []string { return nil }},
	{cc: "AU", lang: english, city: "Brisbane", people: []person{{"Jack Wilson", "jack.wilson", ""}, {"Charlotte Brown", "charlotte.brown", ""}, {"Noah Taylor", "noah.taylor", ""}},
		domains: []string{"bigpond.com", "optusnet.com.au", "wilson-plumbing.com.au"}, ids: []idKind{auTFN},
		variants: func(n string) []string { return []string{strings.NewReplacer("(", "", ")", "").Replace(n)} }},
	{cc: "ZA", lang: english, city: "Durban", people: []person{{"Thabo Nkosi", "thabo.nkosi", ""}, {"Lerato Dlamini", "lerato.dlamini", ""}, {"Pieter van der Merwe", "pieter.vdmerwe", ""}},
		domains: []string{"telkomsa.net", "mweb.co.za", "nkosi-attorneys.co.za"}, ids: []idKind{zaID},
		variants: func(n string) []string { return []string{strings.ReplaceAll(n, " ", "-")} }},
}

func onlyDigits(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c >= '0' && c <= '9' {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// idKind is a national identification number: how to make a valid one (in
// the writings it is seen in, the most common first) and texts it appears
// in ({id}, {name}, {city}, {n}).
type idKind struct {
	name, source string
	make         func(g *gen) []string
	texts        []string
	// invalid returns a number of the same shape whose check fails, for
	// the near-miss negatives.
	invalid func(g *gen) string
}

// breakLast changes the last digit of s (its check digit, or one that
// feeds it) so the check fails.
func breakLast(s string, valid func(string) bool) string {
	for d := byte('0'); d <= '9'; d++ {
		t := s[:len(s)-1] + string(d)
		if t != s && !valid(t) {
			return t
		}
	}
	panic("cannot break " + s)
}

var (
	caSIN = idKind{name: "ca-sin", source: "id-ca-sin",
		make: func(g *gen) []string {
			var d string
			for d == "" || d[0] == '0' || d[0] == '8' || d == "04645428" {
				d = g.digits(8)
			}
			d += luhnDigit(d)
			return []string{group(d, " ", 3, 3), group(d, "-", 3, 3), d}
		},
		texts: []string{"SIN: {id}", "Social Insurance Number {id} on file for {name}.", `{"employee": "{name}", "sin": "{id}", "province": "QC"}`, "NAS : {id}", "T4 slip — employee SIN {id}, {city}"},
		invalid: func(g *gen) string {
			d := "1" + g.digits(7)
			return group(breakLast(d+luhnDigit(d), luhnValid), " ", 3, 3)
		}}
	ukNINO = idKind{name: "uk-nino", source: "id-uk-nino",
		make: func(g *gen) []string {
			const first, second = "ABCEGHJKLMNOPRSTWXYZ", "ABCEGHJKLMNPRSTWXYZ"
			var p string
			for p == "" || strings.Contains("BG GB KN NK NT TN ZZ", p) {
				p = string(first[g.rng.IntN(len(first))]) + string(second[g.rng.IntN(len(second))])
			}
			d := g.digits(6)
			s := string("ABCD"[g.rng.IntN(4)])
			return []string{p + " " + group(d, " ", 2, 2) + " " + s, p + d + s}
		},
		texts: []string{"National Insurance number: {id}", `{"employee": "{name}", "nino": "{id}", "taxCode": "1257L"}`, "NI No. {id}", "name,ni_number,city\n{name},{id},{city}", "P45 for {name} (NINO {id})"},
	}
	deTaxID = idKind{name: "de-tax-id", source: "id-de-steuer-id",
		make: func(g *gen) []string {
			// ten digits, the first not 0, one digit twice and the rest
			// once (one of the layouts §139b AO's ordinance allows)
			var d string
			for {
				perm := g.rng.Perm(10)
				b := make([]byte, 10)
				for i := range 9 {
					b[i] = byte('0' + perm[i])
				}
				b[9] = b[g.rng.IntN(9)]
				g.rng.Shuffle(10, func(i, j int) { b[i], b[j] = b[j], b[i] })
				if b[0] != '0' {
					d = string(b)
					break
				}
			}
			d += iso7064Mod11_10(d)
			return []string{d, group(d, " ", 2, 3, 3)}
		},
		texts: []string{"Steuer-ID: {id}", `{"name": "{name}", "steuerId": "{id}", "steuerklasse": 1}`, "Ihre Steueridentifikationsnummer lautet {id}.", "Name;Steuer-IdNr;Ort\n{name};{id};{city}", "Identifikationsnummer (IdNr) {id}"},
		invalid: func(g *gen) string {
			d := "5" + g.digits(9)
			return breakLast(d+iso7064Mod11_10(d), func(s string) bool { return iso7064Mod11_10(s[:10]) == s[10:] })
		}}
	frNIR = idKind{name: "fr-nir", source: "id-fr-nir",
		make: func(g *gen) []string {
			y, m, _ := g.date()
			dept := g.between(1, 95, 2)
			if dept == "20" {
				dept = "21"
			}
			d := g.between(1, 2, 1) + fmt.Sprintf("%02d%02d", y%100, m) + dept + g.between(1, 990, 3) + g.between(1, 999, 3)
			key := fmt.Sprintf("%02d", 97-mod97(d))
			return []string{group(d, " ", 1, 2, 2, 2, 3) + " " + key, d + key}
		},
		texts: []string{"N° de sécurité sociale : {id}", "Assuré : {name} — NIR {id}", `{"nom": "{name}", "nir": "{id}", "caisse": "CPAM {city}"}`, "numéro INSEE {id}", "Carte Vitale de {name}, n° {id}"},
		invalid: func(g *gen) string {
			d := "1" + g.digits(12)
			key := fmt.Sprintf("%02d", (97-mod97(d)+1)%97)
			return group(d, " ", 1, 2, 2, 2, 3) + " " + key
		}}
	esDNI = idKind{name: "es-dni", source: "id-es-dni",
		make: func(g *gen) []string {
			d := g.digits(8)
			n, _ := strconv.Atoi(d)
			l := string("TRWAGMYFPDXBNJZSQVHLCKE"[n%23])
			return []string{d + l, d + "-" + l, d[:2] + "." + d[2:5] + "." + d[5:] + "-" + l}
		},
		texts: []string{"DNI: {id}", "NIF {id}", `{"nombre": "{name}", "dni": "{id}", "provincia": "{city}"}`, "nombre;dni;ciudad\n{name};{id};{city}", "El titular {name}, con DNI {id}, declara que"},
		invalid: func(g *gen) string {
			d := g.digits(8)
			n, _ := strconv.Atoi(d)
			return d + string("TRWAGMYFPDXBNJZSQVHLCKE"[(n+1)%23])
		}}
	esNIE = idKind{name: "es-nie", source: "id-es-dni",
		make: func(g *gen) []string {
			p := g.rng.IntN(3)
			d := g.digits(7)
			n, _ := strconv.Atoi(strconv.Itoa(p) + d)
			l := string("TRWAGMYFPDXBNJZSQVHLCKE"[n%23])
			x := string("XYZ"[p])
			return []string{x + d + l, x + "-" + d + "-" + l}
		},
		texts: []string{"NIE: {id}", `{"nombre": "{name}", "nie": "{id}"}`, "Tarjeta de residencia de {name}, NIE {id}.", "Extranjero con NIE {id} ({city})"},
	}
	itFiscalCode = idKind{name: "it-fiscal-code", source: "id-it-codice-fiscale",
		make: func(g *gen) []string {
			const consonants = "BCDFGHJKLMNPQRSTVWXZ"
			var b strings.Builder
			for range 6 {
				b.WriteByte(consonants[g.rng.IntN(len(consonants))])
			}
			y, m, d := g.date()
			if g.rng.IntN(2) == 0 {
				d += 40
			}
			fmt.Fprintf(&b, "%02d%c%02d%c%s", y%100, "ABCDEHLMPRST"[m-1], d, 'A'+g.rng.IntN(13), g.between(1, 999, 3))
			s := b.String()
			return []string{s + cfCheck(s)}
		},
		texts: []string{"Codice fiscale: {id}", "C.F. {id}", `{"nome": "{name}", "codiceFiscale": "{id}"}`, "{name} ({id}), residente a {city}", "nome;codice_fiscale\n{name};{id}"},
		invalid: func(g *gen) string {
			s := g.letters(6) + g.between(30, 99, 2) + "M" + g.between(1, 28, 2) + "H" + g.between(1, 999, 3)
			return s + string('A'+(cfCheck(s)[0]-'A'+1)%26)
		}}
	nlBSN = idKind{name: "nl-bsn", source: "id-nl-bsn",
		make: func(g *gen) []string {
			for {
				d := g.between(100000000, 399999999, 9)
				if bsnValid(d) {
					return []string{d, d[:4] + "." + d[4:6] + "." + d[6:]}
				}
			}
		},
		texts: []string{"BSN: {id}", "burgerservicenummer {id}", `{"naam": "{name}", "bsn": "{id}", "woonplaats": "{city}"}`, "naam;bsn;plaats\n{name};{id};{city}", "Uw BSN is {id}."},
		invalid: func(g *gen) string {
			for {
				d := g.between(100000000, 399999999, 9)
				if !bsnValid(d) {
					return d
				}
			}
		}}
	beNationalNumber = idKind{name: "be-national-number", source: "id-be-national-number",
		make: func(g *gen) []string {
			y, m, d := g.date()
			seq := g.between(1, 997, 3)
			base := fmt.Sprintf("%02d%02d%02d%s", y%100, m, d, seq)
			n, _ := strconv.Atoi(base)
			if y >= 2000 {
				n += 2000000000
			}
			c := fmt.Sprintf("%02d", 97-n%97)
			full := base + c
			return []string{full[:2] + "." + full[2:4] + "." + full[4:6] + "-" + full[6:9] + "." + full[9:], full}
		},
		texts: []string{"Rijksregisternummer: {id}", "N° national : {id}", `{"naam": "{name}", "insz": "{id}"}`, "Identiteitskaart {name}, rijksregisternr. {id}"},
	}
	plPESEL = idKind{name: "pl-pesel", source: "id-pl-pesel",
		make: func(g *gen) []string {
			y, m, d := g.date()
			if y >= 2000 {
				m += 20
			}
			s := fmt.Sprintf("%02d%02d%02d%s", y%100, m, d, g.digits(4))
			c := (10 - weighted(s, 1, 3, 7, 9, 1, 3, 7, 9, 1, 3)%10) % 10
			return []string{s + strconv.Itoa(c)}
		},
		texts: []string{"PESEL: {id}", "nr PESEL {id}", `{"imie_nazwisko": "{name}", "pesel": "{id}"}`, "imie_nazwisko;pesel;miasto\n{name};{id};{city}", "Pacjent {name} (PESEL {id})"},
		invalid: func(g *gen) string {
			s := fmt.Sprintf("%02d%02d%02d%s", 85, 3, 14, g.digits(4))
			c := (10 - weighted(s, 1, 3, 7, 9, 1, 3, 7, 9, 1, 3)%10 + 1) % 10
			return s + strconv.Itoa(c)
		}}
	sePersonnummer = idKind{name: "se-personnummer", source: "id-se-personnummer",
		make: func(g *gen) []string {
			y, m, d := g.date()
			s := fmt.Sprintf("%02d%02d%02d%s", y%100, m, d, g.digits(3))
			s += luhnDigit(s)
			return []string{s[:6] + "-" + s[6:], fmt.Sprintf("%02d", y/100) + s[:6] + "-" + s[6:], s}
		},
		texts: []string{"Personnummer: {id}", "pnr {id}", `{"namn": "{name}", "personnummer": "{id}"}`, "Patient {name}, personnr {id}, {city}"},
		invalid: func(g *gen) string {
			s := "850314" + g.digits(3)
			s = breakLast(s+luhnDigit(s), luhnValid)
			return s[:6] + "-" + s[6:]
		}}
	fiHETU = idKind{name: "fi-hetu", source: "id-fi-hetu",
		make: func(g *gen) []string {
			y, m, d := g.date()
			sign := "-"
			if y >= 2000 {
				sign = "A"
			}
			base := fmt.Sprintf("%02d%02d%02d", d, m, y%100)
			z := g.between(2, 899, 3)
			n, _ := strconv.Atoi(base + z)
			return []string{base + sign + z + string("0123456789ABCDEFHJKLMNPRSTUVWXY"[n%31])}
		},
		texts: []string{"Henkilötunnus: {id}", "hetu {id}", `{"nimi": "{name}", "hetu": "{id}"}`, "Potilas {name} ({id}), {city}"},
		invalid: func(g *gen) string {
			base := g.between(10, 28, 2) + g.between(1, 12, 2) + g.between(50, 99, 2) + g.between(2, 899, 3)
			n, _ := strconv.Atoi(base)
			return base[:6] + "-" + base[6:] + string("0123456789ABCDEFHJKLMNPRSTUVWXY"[(n+1)%31])
		}}
	dkCPR = idKind{name: "dk-cpr", source: "id-dk-cpr",
		make: func(g *gen) []string {
			for {
				y, m, d := g.date()
				s := fmt.Sprintf("%02d%02d%02d%s", d, m, y%100, g.digits(4))
				if weighted(s, 4, 3, 2, 7, 6, 5, 4, 3, 2, 1)%11 == 0 {
					return []string{s[:6] + "-" + s[6:], s}
				}
			}
		},
		texts: []string{"CPR-nr.: {id}", `{"navn": "{name}", "cpr": "{id}"}`, "Patient {name}, CPR {id}", "navn;cpr;by\n{name};{id};{city}"},
	}
	noFnr = idKind{name: "no-fnr", source: "id-no-fodselsnummer",
		make: func(g *gen) []string {
			for {
				y, m, d := g.date()
				ind := g.between(0, 499, 3) // 1900-1999
				if y >= 2000 {
					ind = g.between(500, 999, 3)
				}
				s := fmt.Sprintf("%02d%02d%02d%s", d, m, y%100, ind)
				k1 := 11 - weighted(s, 3, 7, 6, 1, 8, 9, 4, 5, 2)%11
				if k1 == 11 {
					k1 = 0
				}
				if k1 == 10 {
					continue
				}
				s += strconv.Itoa(k1)
				k2 := 11 - weighted(s, 5, 4, 3, 2, 7, 6, 5, 4, 3, 2)%11
				if k2 == 11 {
					k2 = 0
				}
				if k2 == 10 {
					continue
				}
				s += strconv.Itoa(k2)
				return []string{s, s[:6] + " " + s[6:]}
			}
		},
		texts: []string{"Fødselsnummer: {id}", "fnr. {id}", `{"navn": "{name}", "fodselsnummer": "{id}"}`, "Pasient {name} (f.nr. {id})"},
	}
	chAHV = idKind{name: "ch-ahv", source: "id-ch-ahv",
		make: func(g *gen) []string {
			s := "756" + g.digits(9)
			c := (10 - weighted(s, 1, 3, 1, 3, 1, 3, 1, 3, 1, 3, 1, 3)%10) % 10
			s += strconv.Itoa(c)
			return []string{s[:3] + "." + s[3:7] + "." + s[7:11] + "." + s[11:], s}
		},
		texts: []string{"AHV-Nr.: {id}", "N° AVS {id}", `{"name": "{name}", "ahvNummer": "{id}"}`, "Versicherte Person {name}, AHV {id}"},
	}
	brCPF = idKind{name: "br-cpf", source: "id-br-cpf",
		make: func(g *gen) []string {
			d := g.digits(9)
			d += mod11Digit(d, 10, 9, 8, 7, 6, 5, 4, 3, 2)
			d += mod11Digit(d, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2)
			return []string{d[:3] + "." + d[3:6] + "." + d[6:9] + "-" + d[9:], d}
		},
		texts: []string{"CPF: {id}", `{"nome": "{name}", "cpf": "{id}", "cidade": "{city}"}`, "{name}, inscrita no CPF sob o nº {id}", "nome;cpf\n{name};{id}"},
		invalid: func(g *gen) string {
			d := g.digits(9)
			d += mod11Digit(d, 10, 9, 8, 7, 6, 5, 4, 3, 2)
			d += strconv.Itoa((int(mod11Digit(d, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2)[0]-'0') + 1) % 10)
			return d[:3] + "." + d[3:6] + "." + d[6:9] + "-" + d[9:]
		}}
	brCNPJ = idKind{name: "br-cnpj", source: "id-br-cpf",
		make: func(g *gen) []string {
			d := g.digits(8) + "0001"
			d += mod11Digit(d, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2)
			d += mod11Digit(d, 6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2)
			return []string{d[:2] + "." + d[2:5] + "." + d[5:8] + "/" + d[8:12] + "-" + d[12:], d}
		},
		texts: []string{"CNPJ: {id}", `{"razaoSocial": "{name} ME", "cnpj": "{id}"}`, "{name} MEI, CNPJ {id}"},
	}
	mxCURP = idKind{name: "mx-curp", source: "id-mx-curp",
		make: func(g *gen) []string {
			const vowels, consonants = "AEIOU", "BCDFGHJKLMNPQRSTVWXYZ"
			states := []string{"AS", "BC", "CH", "DF", "GT", "JC", "MC", "MN", "NL", "OC", "PL", "QT", "SP", "VZ", "YN"}
			y, m, d := g.date()
			var b strings.Builder
			b.WriteByte(byte('A' + g.rng.IntN(26)))
			b.WriteByte(vowels[g.rng.IntN(5)])
			b.WriteByte(byte('A' + g.rng.IntN(26)))
			b.WriteByte(byte('A' + g.rng.IntN(26)))
			fmt.Fprintf(&b, "%02d%02d%02d", y%100, m, d)
			b.WriteByte("HM"[g.rng.IntN(2)])
			b.WriteString(pick(g, states))
			for range 3 {
				b.WriteByte(consonants[g.rng.IntN(len(consonants))])
			}
			if y < 2000 {
				b.WriteByte(byte('0' + g.rng.IntN(10)))
			} else {
				b.WriteByte(byte('A' + g.rng.IntN(26)))
			}
			s := b.String()
			return []string{s + curpCheck(s)}
		},
		texts: []string{"CURP: {id}", `{"nombre": "{name}", "curp": "{id}"}`, "{name} con CURP {id}, domicilio en {city}", "nombre,curp\n{name},{id}"},
	}
	inAadhaar = idKind{name: "in-aadhaar", source: "id-in-aadhaar",
		make: func(g *gen) []string {
			d := g.between(2, 9, 1) + g.digits(10)
			d += verhoeffDigit(d)
			return []string{group(d, " ", 4, 4), d, group(d, "-", 4, 4)}
		},
		texts: []string{"Aadhaar No.: {id}", "आधार संख्या: {id}", `{"name": "{name}", "aadhaar": "{id}", "city": "{city}"}`, "KYC verified for {name} (Aadhaar {id})", "name,aadhaar_number\n{name},{id}"},
		invalid: func(g *gen) string {
			d := g.between(2, 9, 1) + g.digits(10)
			c := verhoeffDigit(d)
			return group(d+strconv.Itoa((int(c[0]-'0')+1)%10), " ", 4, 4)
		}}
	cnResidentID = idKind{name: "cn-resident-id", source: "id-cn-resident-id",
		make: func(g *gen) []string {
			areas := []string{"110101", "310104", "440305", "330106", "510107", "420102", "320102", "610113"}
			y, m, d := g.date()
			s := pick(g, areas) + fmt.Sprintf("%04d%02d%02d", y, m, d) + g.digits(3)
			return []string{s + cnCheck(s)}
		},
		texts: []string{"身份证号：{id}", "公民身份号码 {id}", `{"姓名": "{name}", "身份证号": "{id}"}`, "{name},{id},{city}", "乘车人 {name}（身份证 {id}）"},
		invalid: func(g *gen) string {
			s := "110101" + "19850314" + g.digits(3)
			c := cnCheck(s)
			for _, alt := range "0123456789X" {
				if string(alt) != c {
					return s + string(alt)
				}
			}
			return s
		}}
	krRRN = idKind{name: "kr-rrn", source: "id-kr-rrn",
		make: func(g *gen) []string {
			y, m, d := g.date()
			sex := 1 + g.rng.IntN(2)
			if y >= 2000 {
				sex += 2
			}
			s := fmt.Sprintf("%02d%02d%02d%d%s%s", y%100, m, d, sex, g.between(0, 95, 2), g.digits(3)) // region 00-95
			c := (11 - weighted(s, 2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5)%11) % 10
			s += strconv.Itoa(c)
			return []string{s[:6] + "-" + s[6:]}
		},
		texts: []string{"주민등록번호: {id}", `{"이름": "{name}", "주민등록번호": "{id}"}`, "{name} ({id})", "성명,주민번호\n{name},{id}"},
	}
	jpMyNumber = idKind{name: "jp-my-number", source: "id-jp-my-number",
		make: func(g *gen) []string {
			d := g.between(1, 9, 1) + g.digits(10)
			s := 0
			for n := 1; n <= 11; n++ {
				p := int(d[11-n] - '0')
				q := n + 1
				if n >= 7 {
					q = n - 5
				}
				s += p * q
			}
			c := 0
			if r := s % 11; r > 1 {
				c = 11 - r
			}
			d += strconv.Itoa(c)
			return []string{group(d, " ", 4, 4), d, group(d, "-", 4, 4)}
		},
		texts: []string{"マイナンバー：{id}", "個人番号 {id}", `{"氏名": "{name}", "マイナンバー": "{id}"}`, "従業員 {name} の個人番号（{id}）を登録しました。"},
	}
	auTFN = idKind{name: "au-tfn", source: "id-au-tfn",
		make: func(g *gen) []string {
			for {
				d := g.between(1, 9, 1) + g.digits(8)
				if weighted(d, 1, 4, 3, 7, 5, 8, 6, 9, 10)%11 == 0 && d != "123456782" {
					return []string{group(d, " ", 3, 3), d}
				}
			}
		},
		texts: []string{"TFN: {id}", "Tax File Number {id} ({name})", `{"employee": "{name}", "tfn": "{id}", "state": "QLD"}`, "Payroll: {name}, tax file no. {id}"},
		invalid: func(g *gen) string {
			for {
				d := g.between(1, 9, 1) + g.digits(8)
				if weighted(d, 1, 4, 3, 7, 5, 8, 6, 9, 10)%11 != 0 {
					return group(d, " ", 3, 3)
				}
			}
		}}
	zaID = idKind{name: "za-id", source: "id-za-id",
		make: func(g *gen) []string {
			y, m, d := g.date()
			s := fmt.Sprintf("%02d%02d%02d%s%d8", y%100, m, d, g.digits(4), g.rng.IntN(2))
			return []string{s + luhnDigit(s)}
		},
		texts: []string{"ID number: {id}", "SA ID No {id}", `{"fullName": "{name}", "idNumber": "{id}", "city": "{city}"}`, "FICA documents for {name}: ID {id}"},
		invalid: func(g *gen) string {
			s := fmt.Sprintf("850314%s08", g.digits(4))
			return breakLast(s+luhnDigit(s), luhnValid)
		}}
)

// cfCheck is the check letter of a codice fiscale's first 15 characters.
func cfCheck(s string) string {
	odd := [36]int{1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23, 1, 0, 5, 7, 9, 13, 15, 17, 19, 21}
	sum := 0
	for i := 0; i < 15; i++ {
		c := s[i]
		var idx int
		if c >= '0' && c <= '9' {
			idx = 26 + int(c-'0')
		} else {
			idx = int(c - 'A')
		}
		if i%2 == 0 { // 1st, 3rd, ... (odd positions counting from one)
			sum += odd[idx]
		} else if idx >= 26 {
			sum += idx - 26
		} else {
			sum += idx
		}
	}
	return string(rune('A' + sum%26))
}

// curpCheck is the CURP's check digit (RENAPO's algorithm).
func curpCheck(s string) string {
	const dict = "0123456789ABCDEFGHIJKLMN&OPQRSTUVWXYZ"
	sum := 0
	for i := 0; i < 17; i++ {
		sum += strings.IndexByte(dict, s[i]) * (18 - i)
	}
	return strconv.Itoa((10 - sum%10) % 10)
}

// cnCheck is GB 11643's check character (ISO 7064 MOD 11-2).
func cnCheck(s string) string {
	r := weighted(s, 7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2) % 11
	return string("10X98765432"[r])
}

func bsnValid(d string) bool {
	return (weighted(d, 9, 8, 7, 6, 5, 4, 3, 2)-int(d[8]-'0'))%11 == 0
}

// fill replaces the {placeholders} of t.
func fill(t string, kv ...string) string { return strings.NewReplacer(kv...).Replace(t) }

// stamp returns a log timestamp of November 2026.
func (g *gen) stamp() string {
	return fmt.Sprintf("2026-11-%02dT%02d:%02d:%02d.%03dZ", 1+g.rng.IntN(28), g.rng.IntN(24), g.rng.IntN(60), g.rng.IntN(60), g.rng.IntN(1000))
}

// country writes one country's items: phone numbers in international and
// national form, e-mail addresses (with the country's letters and IDN
// domains where it has them), IBANs, national ids and contact records.
func (g *gen) country(c country) {
	langs := []*language{c.lang}
	if c.second != nil {
		langs = append(langs, c.second)
	}
	for k := range 7 {
		typ := phonenumbers.FIXED_LINE
		if k%2 == 1 {
			typ = phonenumbers.MOBILE
		}
		n := g.phoneNumber(c.cc, typ)
		intl := phonenumbers.Format(n, phonenumbers.INTERNATIONAL)
		nat := phonenumbers.Format(n, phonenumbers.NATIONAL)
		var value, cat string
		switch k {
		case 0, 2:
			value, cat = intl, "phone-intl"
		case 1:
			value, cat = phonenumbers.Format(n, phonenumbers.E164), "phone-intl"
			if c.cc != "US" && c.cc != "CA" && g.rng.IntN(2) == 0 {
				value = "00" + strings.TrimPrefix(intl, "+") // dialled from Europe
			}
		case 3, 4:
			value, cat = nat, "phone-national"
		default:
			value, cat = nat, "phone-national"
			if vs := c.variants(nat); len(vs) > 0 {
				value = vs[g.rng.IntN(len(vs))]
			}
		}
		g.add(cat, "libphonenumber", g.phoneText(langs[k%len(langs)], c, pick(g, c.people), value), value)
	}
	// A national number without any formatting, where a label says what
	// it is.
	n := g.phoneNumber(c.cc, phonenumbers.MOBILE)
	bare := onlyDigits(phonenumbers.Format(n, phonenumbers.NATIONAL))
	l := langs[0]
	g.add("phone-national-bare", "libphonenumber", fill(pick(g, []string{"{w}: {p}", "{w} {p} ({name})", `{"{key}": "{p}"}`}), "{w}", l.mobileWord, "{p}", bare, "{name}", c.people[0].name, "{key}", l.phoneKey), bare)

	for k, p := range c.people {
		domain := c.domains[k%len(c.domains)]
		addr := p.local + "@" + domain
		g.add("email", "invented", g.emailText(langs[k%len(langs)], p.name, addr, domain), addr)
		if p.uni != "" {
			addr := p.uni + "@" + domain
			g.add("email-unicode", "rfc6531", g.emailText(langs[k%len(langs)], p.name, addr, domain), addr)
		}
		if k < len(c.idn) {
			idn := c.idn[k]
			local := p.local
			if p.uni != "" && k == 0 {
				local = p.uni
			}
			addr := local + "@" + idn
			g.add("email-idn", "rfc6531", g.emailText(langs[0], p.name, addr, idn), addr)
			ascii := p.local + "@" + punycode(idn)
			g.add("email-idn", "rfc5890", g.emailText(langs[0], p.name, ascii, punycode(idn)), ascii)
		}
	}

	var ibans []string
	if c.bban != "" {
		for k := range 2 {
			iban := ibanOf(c.cc, g.bban(c.bban))
			ibans = append(ibans, iban)
			value := iban
			if k == 0 {
				value = groupIBAN(iban)
			}
			g.add("iban", "swift-iban-registry", g.ibanText(langs[k%len(langs)], c, pick(g, c.people).name, value), value)
		}
	}

	for _, kind := range c.ids {
		per := 6
		if len(c.ids) > 1 {
			per = 5
		}
		for k := range per {
			ws := kind.make(g)
			w := ws[k%len(ws)]
			t := kind.texts[(k+g.rng.IntN(2))%len(kind.texts)]
			g.add("id-"+kind.name, kind.source, fill(t, "{id}", w, "{name}", pick(g, c.people).name, "{city}", c.city), w)
		}
	}

	// Contact records holding several values.
	for k := range 2 {
		p := c.people[(k+1)%len(c.people)]
		l := langs[k%len(langs)]
		phone := phonenumbers.Format(g.phoneNumber(c.cc, phonenumbers.MOBILE), []phonenumbers.PhoneNumberFormat{phonenumbers.INTERNATIONAL, phonenumbers.NATIONAL}[k])
		addr := p.local + "@" + c.domains[(k+2)%len(c.domains)]
		values := []string{addr, phone}
		fields := fmt.Sprintf(`"%s": %s, "email": %s, "%s": %s`, l.nameKey, jsonText(p.name), jsonText(addr), l.phoneKey, jsonText(phone))
		switch {
		case k == 0 && len(ibans) > 0:
			values = append(values, ibans[0])
			fields += `, "iban": ` + jsonText(ibans[0])
		case len(c.ids) > 0:
			id := c.ids[0].make(g)[0]
			values = append(values, id)
			fields += fmt.Sprintf(`, "%s": %s`, strings.ReplaceAll(c.ids[0].name, "-", "_"), jsonText(id))
		}
		var text string
		if k == 0 {
			text = fmt.Sprintf(`{"id": %d, %s, "%s": %s, "updated_at": "%s"}`, 10000+g.rng.IntN(90000), fields, l.cityKey, jsonText(c.city), g.stamp())
		} else {
			text = fmt.Sprintf(`{"data": [{"type": "contact", "attributes": {%s}}], "meta": {"page": 1, "total": 1}}`, fields)
		}
		g.add("record", "invented", text, values...)
	}
}

// phoneText puts a phone number in one of the texts tool results carry it in.
func (g *gen) phoneText(l *language, c country, p person, phone string) string {
	name := p.name
	switch g.rng.IntN(8) {
	case 0, 1:
		return fill(pick(g, l.callBack), "{name}", name, "{phone}", phone)
	case 2:
		return fmt.Sprintf(`{"id": %d, "%s": %s, "%s": %s, "%s": %s}`, 1000+g.rng.IntN(9000), l.nameKey, jsonText(name), l.phoneKey, jsonText(phone), l.cityKey, jsonText(c.city))
	case 3:
		return strings.Join([]string{l.nameKey, l.phoneKey, l.cityKey}, l.sep) + "\n" + strings.Join([]string{name, phone, c.city}, l.sep)
	case 4:
		return fmt.Sprintf(`%s INFO crm.sync contact_id=%d %s="%s" result=updated`, g.stamp(), 100000+g.rng.IntN(900000), l.phoneKey, phone)
	case 5:
		return fmt.Sprintf("%s\n%s\n%s: %s", name, c.city, l.phoneWord, phone)
	case 6:
		return fmt.Sprintf("- %s: %s\n  %s: \"%s\"\n  %s: %s", l.nameKey, name, l.phoneKey, phone, l.cityKey, c.city)
	default:
		return fmt.Sprintf("| %s | %s | %s |", name, c.city, phone)
	}
}

// emailText puts an address in one of the texts tool results carry it in.
func (g *gen) emailText(l *language, name, addr, domain string) string {
	switch g.rng.IntN(7) {
	case 0, 1:
		return fill(pick(g, l.mailTo), "{name}", name, "{email}", addr)
	case 2:
		return fmt.Sprintf(`{"%s": %s, "email": %s, "verified": true}`, l.nameKey, jsonText(name), jsonText(addr))
	case 3:
		return fmt.Sprintf("%s INFO auth login ok user=%s session=%x", g.stamp(), addr, g.rng.Uint32())
	case 4:
		return fmt.Sprintf("Author: %s <%s>\nDate:   Tue Nov 3 09:12:44 2026 +0100\n\n    fix: handle empty invoice lines", name, addr)
	case 5:
		return fmt.Sprintf("%s,email\n%s,%s", l.nameKey, name, addr)
	default:
		return fmt.Sprintf("%s: %s", l.emailWord, addr)
	}
}

// ibanText puts an IBAN in one of the texts tool results carry it in.
func (g *gen) ibanText(l *language, c country, name, iban string) string {
	transfer := l.transfer
	if len(transfer) == 0 {
		transfer = english.transfer
	}
	switch g.rng.IntN(4) {
	case 0, 1:
		return fill(pick(g, transfer), "{name}", name, "{iban}", iban)
	case 2:
		return fmt.Sprintf(`{"account_holder": %s, "iban": %s, "currency": "EUR"}`, jsonText(name), jsonText(iban))
	default:
		return fmt.Sprintf("%s%sIBAN%s%s\n%s%s%s%s%s", l.nameKey, l.sep, l.sep, l.cityKey, name, l.sep, iban, l.sep, c.city)
	}
}

// usSSNs writes US social security numbers with dashes, spaces, dots and,
// under a label, none.
func (g *gen) usSSNs() {
	texts := []string{"SSN: {id}", `{"applicant": "{name}", "ssn": "{id}", "state": "CO"}`, "Social Security No. {id}", "W-2 for {name}: employee SSN {id}", "name,ssn,state\n{name},{id},TX"}
	names := []string{"Emily Johnson", "Michael Brown", "Jessica Davis", "Robert Miller", "Ashley Wilson"}
	for k := range 24 {
		var area string
		for area == "" || area == "666" || area == "078" || area == "219" {
			area = g.between(1, 899, 3)
		}
		d := area + g.between(1, 99, 2) + g.between(1, 9999, 4)
		var w string
		switch k % 4 {
		case 0:
			w = group(d, "-", 3, 2)
		case 1:
			w = group(d, " ", 3, 2)
		case 2:
			w = group(d, ".", 3, 2)
		default:
			w = d
		}
		t := texts[k%len(texts)]
		if k%4 == 3 && k%len(texts) == 3 {
			t = texts[0]
		}
		g.add("id-us-ssn", "id-us-ssn", fill(t, "{id}", w, "{name}", names[k%len(names)]), w)
	}
}

// cards writes payment card numbers: issuer prefixes, random digits and a
// Luhn digit.
func (g *gen) cards() {
	prefixes := []struct {
		p   string
		n   int
		grp []int
	}{{"4", 16, []int{4, 4, 4}}, {"51", 16, []int{4, 4, 4}}, {"2221", 16, []int{4, 4, 4}}, {"37", 15, []int{4, 6}}, {"6011", 16, []int{4, 4, 4}}}
	texts := []string{"Card on file: {id}", `{"card_number": "{id}", "exp": "09/29", "holder": "J SMITH"}`, "Zahlung mit Karte {id} abgelehnt.", "Carte bancaire n° {id}"}
	for k := range 12 {
		pr := prefixes[k%len(prefixes)]
		d := pr.p + g.digits(pr.n-len(pr.p)-1)
		d += luhnDigit(d)
		w := d
		if k%3 != 0 {
			w = group(d, " ", pr.grp...)
		}
		g.add("payment-card", "card-numbers", fill(texts[k%len(texts)], "{id}", w), w)
	}
}

// eaiAddresses writes internationalized addresses (RFC 6531/6532) in
// scripts beyond the countries': local parts and domains in Cyrillic,
// Greek, Arabic, Hebrew, Thai, Devanagari, Han and Hangul, under IDN
// country-code top-level domains, and their ASCII-compatible forms.
func (g *gen) eaiAddresses() {
	addrs := []string{
		"андрей@почта.рф", "ольга.смирнова@завод-урал.рф", "тарас.шевченко@пошта.укр", "иван_петров@mail.ru",
		"γιώργος@ταχυδρομείο.ελ", "ελένη.παπαδοπούλου@εταιρεία.gr", "أحمد@بريد.مصر", "فاطمة.علي@شركة.السعودية",
		"דנה.כהן@חברה.co.il", "สมชาย@ไปรษณีย์.ไทย", "अनिता@डाक.भारत", "陈静@邮件.中国", "黄小明@商店.香港",
		"지민@우편.한국", "Pelé.Arantes@futebol.com.br", "ÅSA.STRÖM@FÖRETAG.SE", "zoë.brontë@haworth.co.uk",
		"ǅemal.čaušević@pošta.ba", "dvořák@hudba.cz", "şükrü.yılmaz@şirket.com.tr", "nguyễn.văn.an@côngty.vn",
	}
	texts := []string{"Contact: {e}", "From: {e}\nSubject: Re: Rechnung 2026-114", `{"email": "{e}", "locale": "auto"}`, "{ts} INFO mailer queued to=<{e}> size=48213", "Bitte an {e} weiterleiten."}
	for k, a := range addrs {
		t := fill(texts[k%len(texts)], "{e}", a, "{ts}", g.stamp())
		g.add("email-unicode", "rfc6531", t, a)
		local, domain, _ := strings.Cut(a, "@")
		if k%3 == 0 {
			ascii := local + "@" + punycode(domain)
			g.add("email-idn", "rfc5890", fill(texts[(k+1)%len(texts)], "{e}", ascii, "{ts}", g.stamp()), ascii)
		}
	}
}

// negatives writes the hard negatives: what tool output is full of and
// looks like personal data without being any.
func (g *gen) negatives() {
	n := func(category, source string, texts ...string) {
		for _, t := range texts {
			g.negative(category, source, t)
		}
	}
	d := g.digits
	yr := func() string { return g.between(2019, 2027, 4) }

	for range 5 {
		n("order-id", "invented",
			fmt.Sprintf("Order #%s shipped to the warehouse in %s.", d(8), pick(g, []string{"Leipzig", "Lyon", "Reno"})),
			fmt.Sprintf(`{"order_id": "ORD-%s-%s", "status": "paid", "items": %d}`, yr(), d(6), 1+g.rng.IntN(9)),
			fmt.Sprintf("Amazon order %s-%s-%s: delivered", d(3), d(7), d(7)),
			fmt.Sprintf("Bestellnummer %s vom %02d.%02d.%s", d(10), 1+g.rng.IntN(28), 1+g.rng.IntN(12), yr()),
			fmt.Sprintf("PO %s approved by procurement", "4500"+d(6)),
			fmt.Sprintf("Commande n° %s — expédiée", d(9)),
		)
	}
	for range 4 {
		n("invoice-id", "invented",
			fmt.Sprintf("Invoice INV-%s-%s is overdue by %d days.", yr(), d(5), 1+g.rng.IntN(60)),
			fmt.Sprintf("Rechnung RE-%s-%s über %d,%02d EUR", yr(), d(5), g.rng.IntN(5000), g.rng.IntN(100)),
			fmt.Sprintf(`{"invoice_number": "%s", "amount_cents": %s}`, d(10), d(6)),
			fmt.Sprintf("Factura %s/%s emitida", yr(), d(6)),
			fmt.Sprintf("Facture F%s%s du %s-11-%02d", yr(), d(6), yr(), 1+g.rng.IntN(28)),
		)
	}
	for range 5 {
		sec := 1700000000 + g.rng.IntN(100000000)
		n("timestamp", "formats",
			fmt.Sprintf("%s ERROR upstream timeout after 15000 ms", g.stamp()),
			fmt.Sprintf(`{"created": %d, "created_ms": %d%03d}`, sec, sec, g.rng.IntN(1000)),
			fmt.Sprintf("ts=%d%06d level=info msg=\"flush done\"", sec, g.rng.IntN(1000000)),
			fmt.Sprintf("Date: Tue, %02d Nov 2026 %02d:%02d:%02d +0100", 1+g.rng.IntN(28), g.rng.IntN(24), g.rng.IntN(60), g.rng.IntN(60)),
			fmt.Sprintf("2026-11-%02d %02d:%02d:%02d,%03d INFO  [main] started in 2.41s", 1+g.rng.IntN(28), g.rng.IntN(24), g.rng.IntN(60), g.rng.IntN(60), g.rng.IntN(1000)),
			fmt.Sprintf("Nov %2d %02d:%02d:%02d web-01 sshd[%d]: session opened", 1+g.rng.IntN(28), g.rng.IntN(24), g.rng.IntN(60), g.rng.IntN(60), 1000+g.rng.IntN(90000)),
		)
	}
	for range 4 {
		dd, mm := 1+g.rng.IntN(28), 1+g.rng.IntN(12)
		n("date", "formats",
			fmt.Sprintf("Die Sitzung findet am %02d.%02d.%s um 14:30 Uhr in Raum 2.041 statt.", dd, mm, yr()),
			fmt.Sprintf("Due date: %02d/%02d/%s", mm, dd, yr()),
			fmt.Sprintf("期限：%s年%d月%d日", yr(), mm, dd),
			fmt.Sprintf("valid from %s-%02d-%02d to %s-%02d-%02d", yr(), mm, dd, yr(), mm, dd),
			fmt.Sprintf("Geboren am %02d. %02d. %s? Nein: Datum der Lieferung %02d %02d %s", dd, mm, yr(), dd, mm, yr()),
		)
	}
	for range 4 {
		n("version", "formats",
			fmt.Sprintf("Upgraded to v%d.%d.%d (build %s)", 1+g.rng.IntN(3), g.rng.IntN(30), g.rng.IntN(20), d(4)),
			fmt.Sprintf("User-Agent: Mozilla/5.0 Chrome/%d.0.%d.%d Safari/537.36", 120+g.rng.IntN(12), 6000+g.rng.IntN(900), g.rng.IntN(200)),
			fmt.Sprintf("Microsoft Windows [Version 10.0.%d.%d]", 19045+g.rng.IntN(3000), 1000+g.rng.IntN(4000)),
			fmt.Sprintf("go version go1.%d.%d linux/amd64", 20+g.rng.IntN(7), g.rng.IntN(12)),
			fmt.Sprintf("firmware 2.%d.%d.%d-%s", g.rng.IntN(10), g.rng.IntN(100), g.rng.IntN(1000), d(6)),
		)
	}
	for range 4 {
		n("ip", "formats",
			fmt.Sprintf("client %d.%d.%d.%d:%d connected", 10+g.rng.IntN(200), g.rng.IntN(256), g.rng.IntN(256), g.rng.IntN(256), 1024+g.rng.IntN(60000)),
			fmt.Sprintf("inet6 2001:db8:%x:%x::%x/64 scope global", g.rng.IntN(65536), g.rng.IntN(65536), g.rng.IntN(65536)),
			fmt.Sprintf("allow from 172.%d.0.0/12 and 192.168.%d.%d", 16+g.rng.IntN(16), g.rng.IntN(256), g.rng.IntN(256)),
			fmt.Sprintf(`{"remote_addr": "%d.%d.%d.%d", "bytes": %s}`, 100+g.rng.IntN(100), g.rng.IntN(256), g.rng.IntN(256), g.rng.IntN(256), d(6)),
			fmt.Sprintf("X-Forwarded-For: %d.%d.%d.%d, 10.0.%d.%d", 80+g.rng.IntN(100), g.rng.IntN(256), g.rng.IntN(256), g.rng.IntN(256), g.rng.IntN(256), g.rng.IntN(256)),
		)
	}
	for k := range 16 {
		n("isbn", "isbn", g.isbnText(k))
	}
	for range 4 {
		s10 := pick(g, []string{"RR", "CP", "LX", "EE", "RB"}) + d(9) + pick(g, []string{"GB", "DE", "FR", "NL"})
		n("tracking", "tracking-formats",
			fmt.Sprintf("UPS tracking 1Z%s%s", g.alnum(6), d(10)),
			fmt.Sprintf("FedEx: %s %s %s", d(4), d(4), d(4)),
			fmt.Sprintf("USPS %s %s %s %s %s %s", "9400", "1"+d(3), d(4), d(4), d(4), d(2)),
			fmt.Sprintf("DHL Paket JJD%s", d(18)),
			fmt.Sprintf("Sendungsnummer %s, Einschreiben %s", d(12), s10),
		)
	}
	for range 4 {
		n("hash", "formats",
			fmt.Sprintf("commit %s", g.hex(40)),
			fmt.Sprintf(`{"sha256": "%s"}`, g.hex(64)),
			fmt.Sprintf("md5sum: %s  release.tar.gz", g.hex(32)),
			fmt.Sprintf("image: ghcr.io/acme/api@sha256:%s", g.hex(64)),
			fmt.Sprintf("Merge %s into %s", g.hex(7), g.hex(7)),
		)
	}
	for range 15 {
		n("uuid", "formats", fmt.Sprintf(`{"request_id": "%s-%s-4%s-a%s-%s"}`, g.hex(8), g.hex(4), g.hex(3), g.hex(3), g.hex(12)))
	}
	for range 3 {
		a, b, c := 1+g.rng.IntN(99), g.rng.IntN(1000), g.rng.IntN(1000)
		n("price", "formats",
			fmt.Sprintf("Gesamtbetrag: %d.%03d.%03d,%02d €", a, b, c, g.rng.IntN(100)),
			fmt.Sprintf("Montant : %d %03d %03d,00 €", a, b, c),
			fmt.Sprintf("Revenue $%d,%03d,%03d.%02d", a, b, c, g.rng.IntN(100)),
			fmt.Sprintf("Preis CHF %d'%03d'%03d.–", a, b, c),
			fmt.Sprintf("Total: ₹%d,%02d,%03d.00", a, g.rng.IntN(100), c),
			fmt.Sprintf("Итого: %d %03d %03d ₽", a, b, c),
			fmt.Sprintf("Valor: R$ %d.%03d.%03d,%02d", a, b, c, g.rng.IntN(100)),
		)
	}
	for range 3 {
		n("coordinates", "formats",
			fmt.Sprintf("location: %d.%06d, %d.%06d", 40+g.rng.IntN(20), g.rng.IntN(1000000), g.rng.IntN(30), g.rng.IntN(1000000)),
			fmt.Sprintf(`{"lat": -%d.%05d, "lon": %d.%05d}`, 20+g.rng.IntN(20), g.rng.IntN(100000), 110+g.rng.IntN(40), g.rng.IntN(100000)),
			fmt.Sprintf("%d°%02d′%02d″N %d°%02d′%02d″E", 40+g.rng.IntN(20), g.rng.IntN(60), g.rng.IntN(60), g.rng.IntN(30), g.rng.IntN(60), g.rng.IntN(60)),
			fmt.Sprintf("geo:%d.%04d,%d.%04d;u=35", 40+g.rng.IntN(20), g.rng.IntN(10000), g.rng.IntN(30), g.rng.IntN(10000)),
			fmt.Sprintf("UTM 32U %d %d", 300000+g.rng.IntN(400000), 5000000+g.rng.IntN(900000)),
		)
	}
	n("code-number", "invented",
		"const maxInt32 = 2147483647",
		"timeout: 30000000 # ns",
		"chmod 0755 ./bin/deploy && ./bin/deploy --port 8443",
		"mask := 0x7fffffff & seed",
		`assert.Equal(t, 4155550123, parsePhoneDigits(in)) // fixture, not a number anyone owns`,
		"MOD = 10**9 + 7  # 1000000007",
		`{"id": 9007199254740991, "kind": "max-safe-integer"}`,
		"int[] primes = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29};",
		"SELECT * FROM events WHERE id > 1234567 LIMIT 100 OFFSET 2000000;",
		`var testPhone = "555-0100" // too short to dial`,
		"crc32: 3632233996",
		`phoneRegex := regexp.MustCompile("^\\+?[0-9 ()-]{7,20}$")`,
		"for i := 0; i < 1000000; i++ { sum += i * 31 }",
		"Thread-1234567 waiting on lock 0x000000076ab62208",
		"ulimit -n 1048576",
		"x = np.zeros((1024, 768, 3), dtype=np.uint8)",
		"retry backoff: 100 200 400 800 1600 3200 6400 ms",
		"matrix: [[1, 0, 0], [0, 1, 0], [0, 0, 1]]",
		"dd if=/dev/zero of=disk.img bs=1M count=20480",
		"EXPECTED_DIGITS = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)",
		"kernel: [ 1234.567890] usb 1-1.4: new high-speed USB device number 12",
		"pid 48213 rss 1234567 kB vsz 2345678 kB",
		"ports: 8080 8081 8082 8083 8084",
		"window.scrollTo(0, 1234567)",
		"fmt.Printf(\"%d %d %d\\n\", 123, 456, 7890)",
	)
	for k, c := range []string{"4242424242424242", "4000056655665556", "5555555555554444", "2223003122003222", "378282246310005", "6011111111111117", "3566002020360505", "4111111111111111", "5105105105105100", "4012888888881881"} {
		w := c
		if k%2 == 0 {
			w = group(c, " ", 4, 4, 4)
		}
		n("test-card", "card-numbers",
			fmt.Sprintf("Use the test card %s with any future expiry date and any CVC.", w),
			fmt.Sprintf(`{"card": "%s", "mode": "sandbox", "result": "succeeded"}`, c))
	}
	for _, e := range []string{"alice@example.com", "bob.smith@example.org", "noreply@example.net", "jane@mail.example", "user+tag@example.com", "admin@site.test", "root@host.invalid", "dev@app.localhost", "support@sub.example.com", "test.user@example.co"} {
		if strings.HasSuffix(e, ".co") {
			e = "test.user@example.com"
		}
		n("doc-email", "rfc2606",
			fmt.Sprintf("Set SMTP_FROM to %s in your .env file.", e),
			fmt.Sprintf(`{"email": "%s", "note": "placeholder from the docs"}`, e))
	}
	for _, r := range []string{"git@github.com:purko-io/mcp-hub.git", "git@gitlab.com:group/sub/project.git", "git@bitbucket.org:team/repo.git", "ssh://git@gitlab.example-corp.io:2222/infra/terraform.git", "git@ssh.dev.azure.com:v3/org/project/repo", "git@codeberg.org:forgejo/forgejo.git", "deploy@build-07.ci.internal:/srv/artifacts/"} {
		n("git-ssh", "git-urls",
			"git clone "+r,
			fmt.Sprintf("remote.origin.url=%s", r))
	}
	// URL userinfo is no personal data. A password in it is a credential
	// however weak or well known ("guest:guest"), which the secrets filter
	// redacts, so only a user name or a placeholder password is a hard
	// negative of the two filters together.
	for _, u := range []string{"https://deploy@registry.acme-corp.io/v2/", "https://oauth2:token@gitlab.acme-corp.io/group/repo.git", "http://user:pass@proxy.corp.local:3128"} {
		n("url-userinfo", "rfc3986",
			fmt.Sprintf("DATABASE_URL=%s", u),
			fmt.Sprintf(`{"endpoint": "%s", "healthy": true}`, u))
	}
	for _, p := range []string{"@angular/core@17.3.0", "@types/node@20.11.5", "@babel/preset-env", "@aws-sdk/client-s3@3.525.0", "@vitejs/plugin-react@4.2.1", "@nestjs/common", "@tanstack/react-query@5.24.1", "@mui/material@5.15.11"} {
		n("npm-scope", "npm-scopes",
			"npm install "+p,
			fmt.Sprintf(`"dependencies": {"%s": "^1.0.0"}`, strings.SplitN(strings.TrimPrefix(p, "@"), "@", 2)[0]))
	}
	n("decorator", "invented",
		"@Override\npublic String toString() {", "@dataclass(frozen=True)\nclass Point:", "@app.route('/users/<int:user_id>')",
		"@pytest.mark.parametrize('n', [1, 2, 3])", "@Component({selector: 'app-root'})", "@Injectable()\nexport class MailService {}",
		"@property\ndef email(self): return self._email", "@SpringBootApplication", "@GetMapping(\"/api/v1/contacts/{id}\")",
		"@media (max-width: 768px) { .nav { display: none; } }", "@import url('https://fonts.googleapis.com/css2?family=Inter');",
		"@echo off\nset PATH=%PATH%;C:\\tools", "@font-face { font-family: 'Inter'; }", "@SuppressWarnings(\"unchecked\")", "@Test\nvoid sendsMail() {}",
	)
	n("handle", "invented",
		"thanks @alice for the review", "cc @bob-smith @carol_w", "Assigned to @team/backend", "Follow us @purko_io on X",
		"@here the deploy is done", "ping @dev-oncall", "reviewers: @jürgen @zoë", "Merged by @octocat", "@channel standup in 5",
		"@everyone please update", "reported by @max.mustermann", "mention @12345678 in the thread", "PR by @dependabot[bot]",
		"@mariagarcia te respondió", "@佐藤 さん、確認お願いします",
	)
	for _, kind := range []idKind{caSIN, deTaxID, frNIR, esDNI, itFiscalCode, nlBSN, plPESEL, sePersonnummer, fiHETU, brCPF, inAadhaar, cnResidentID, auTFN, zaID} {
		for k := range 3 {
			w := kind.invalid(g)
			t := kind.texts[k%len(kind.texts)]
			g.negative("near-miss-id", "near-miss", fill(t, "{id}", w, "{name}", "N. N.", "{city}", "—"))
		}
	}
	for k := range 12 {
		c := countries[3+k%12]
		iban := ibanOf(c.cc, g.bban(c.bban))
		check := (int(iban[2]-'0')*10 + int(iban[3]-'0') + 1 + g.rng.IntN(9)) % 100
		bad := fmt.Sprintf("%s%02d%s", c.cc, check, iban[4:])
		if k%2 == 0 {
			bad = groupIBAN(bad)
		}
		n("near-miss-iban", "near-miss", fmt.Sprintf("IBAN: %s (Prüfziffer falsch, bitte prüfen)", bad))
	}
	n("near-miss-ssn", "near-miss",
		"SSN: 000-12-3456", "SSN: 666-45-1234", "ssn=912-34-5678", "SSN 123-00-4567", "SSN: 432-10-0000",
		"Sample card shows SSN 078-05-1120 (the Woolworth wallet number).", "SSN 219-09-9999 appears in a 1940 ad.",
		"Format: XXX-XX-XXXX")
	for range 8 {
		c := "4" + d(14)
		c = breakLast(c+luhnDigit(c), luhnValid)
		n("near-miss-card", "near-miss", fmt.Sprintf("Card %s declined: invalid number", group(c, " ", 4, 4, 4)))
	}
	n("number-like", "invented",
		"Call extension 4521 or dial 911 in an emergency.", "ZIP+4: 94105-1234", "Room 2.041, building B-12",
		"ISO 3166-1 alpha-2, RFC 6531, Article 6(1)(f) GDPR", "DOI 10.1000/182 and arXiv:2403.01234",
		"ORCID 0000-0002-1825-0097", "ISSN 0317-8471", "EAN 4006381333931", "IMEI 490154203237518",
		"MAC 00:1A:2B:3C:4D:5E", "Case No. 2:24-cv-01234-ABC", "Flight LH 2041 departs 14:35 from gate B 23",
		"Serial no. SN-2026-0004512", "Kundennummer 10045321, Vertragsnummer 7700123456", "Ticket #48213 reopened",
		"Pickup code 4812 9935", "Lot 240512-07, exp. 2027-05", "Model WD40EFRX-68N32N0", "Build 20261103.4 succeeded",
		"Stock: 1 234 567 units", "Population 8 336 817 (2020)", "Zugriffe: 1.234.567", "12 345 678 rows scanned",
		"Dimensions 1200 x 800 x 600 mm", "Score 98.6 / 100",
	)
	n("bank-code", "swift-iban-registry",
		"BIC COBADEFFXXX", "SWIFT: BNPAFRPPXXX", "Sort code 20-00-00", "ABA routing 021000021", "BLZ 370 400 44",
		"BIC/SWIFT: DEUTDEDBKOE", "Bankleitzahl 10010010", "Clearing-Nr. 00762",
	)
	n("postal", "invented",
		"London SW1A 1AA", "75008 Paris", "10115 Berlin", "1000-001 Lisboa", "00-950 Warszawa",
		"〒100-0001 東京都千代田区", "Montréal QC H3Z 2Y7", "2000 Antwerpen", "8001 Zürich", "SE-111 52 Stockholm",
	)
	n("company-id", "invented",
		"USt-IdNr. DE123456789", "TVA intracommunautaire FR40303265045", "CIF B12345674", "KvK 12345678",
		"UID CHE-123.456.789 MWST", "ABN 51 824 753 556", "Company No. 01234567", "P.IVA 01234567890",
		"NIP 123-456-32-18", "Handelsregister HRB 12345 B",
	)
	for range 10 {
		// Lot and batch numbers: a production date and a counter, the
		// shape of the Nordic personal numbers.
		y, m, dd := 20+g.rng.IntN(7), 1+g.rng.IntN(12), 1+g.rng.IntN(28)
		n("lot-number", "invented", fmt.Sprintf("%s %02d%02d%02d-%s, exp. %d-%02d", pick(g, []string{"Lot", "Charge", "Batch", "LOT", "Parti"}), y, m, dd, d(4), 2028+g.rng.IntN(3), m))
	}
	for range 8 {
		n("snowflake-id", "formats",
			fmt.Sprintf(`{"id": "%d", "channel_id": "%d", "content": "deployed"}`, 1000000000000000000+g.rng.Int64N(300000000000000000), 800000000000000000+g.rng.Int64N(199999999999999999)))
	}
	for range 6 {
		tac := pick(g, []string{"35", "86", "01", "99"}) + d(6)
		s := tac + d(6)
		n("imei", "formats", fmt.Sprintf("Device IMEI %s registered", s+luhnDigit(s)))
	}
	n("oid", "formats",
		"OID 1.3.6.1.4.1.311.21.8.15", "snmpget -v2c -c public host 1.3.6.1.2.1.1.3.0", "extension 2.5.29.17 (subjectAltName)",
		"policy 2.16.840.1.113730.3.1.2", "urn:oid:1.2.840.113549.1.9.1",
	)
	for range 4 {
		u := "0" + d(10)
		s := 0
		for i := 0; i < 11; i++ {
			w := 1
			if i%2 == 0 {
				w = 3
			}
			s += int(u[i]-'0') * w
		}
		u += strconv.Itoa((10 - s%10) % 10)
		n("upc", "formats", fmt.Sprintf("UPC %s %s %s %s", u[:1], u[1:6], u[6:11], u[11:]))
	}
	n("placeholder-email", "invented",
		"Replace user@domain.tld with your own address.", "Contact: your.name@yourcompany.com", "Format: firstname.lastname@company.com",
		"mailto:someone@somewhere.invalid", "E-Mail: max.mustermann@beispiel.de (Beispiel)",
	)
	n("number-in-prose", "invented",
		"Die Rechnung 2026/0042 über 1.234,56 € ist bezahlt.", "Dossier n° 2026-004512 clôturé le 03/11/2026.",
		"注文番号 1234-5678-9012 は発送済みです。", "사업자등록번호 123-45-67890", "EIN 12-3456789 (employer)",
		"Expediente 2026/001234-A", "Pedido nº 4500123456 faturado", "Zamówienie nr 2026/11/004512",
		"Ordre 20261103-0042 sendt", "Tilaus 2026-11-03/0042 vahvistettu", "订单号 202611031234567890 已发货",
		"Sag nr. 2026-004512 er lukket", "Referentie 2026.11.0042", "Bestelling 1103-2026-0042",
	)
	for range 3 {
		// Reference numbers with leading zeros, grouped as phone numbers
		// are: a trunk prefix is no proof.
		n("zero-led-reference", "invented",
			fmt.Sprintf("Kontoauszug Nr. 00%s %s %s", d(2), d(4), d(4)),
			fmt.Sprintf("Zählernummer 0%s %s", d(3), d(6)),
			fmt.Sprintf("Référence dossier 00%s %s %s", d(1), d(3), d(3)),
			fmt.Sprintf("Artikel 0%s-%s-%s", d(2), d(3), d(3)),
		)
	}
	for range 2 {
		n("labelled-other-number", "invented",
			fmt.Sprintf("Kundennummer: %s", d(9)), fmt.Sprintf("Vertragsnummer %s", d(11)),
			fmt.Sprintf("Matrikelnummer %s", d(8)), fmt.Sprintf("Versicherungsschein-Nr. %s", d(12)),
			fmt.Sprintf("Numéro de client : %s", d(10)), fmt.Sprintf(`{"customer_id": "%s", "tier": "gold"}`, d(11)),
			fmt.Sprintf("Klantnummer %s", d(9)), fmt.Sprintf("Nº de pedido: %s", d(12)),
		)
	}
	n("prose-numbers", "invented",
		"Der Zug ICE 1234 fährt um 14.35 Uhr von Gleis 7; Verspätung 12 Minuten.",
		"La réunion du 03/11 est reportée au 10/11 à 9 h 30, salle 2.14.",
		"El vuelo IB 3167 sale a las 18:45 de la puerta J 52.",
		"Il pacco 3 di 5 pesa 12,5 kg (colli 1234-5678).",
		"De vergadering is op 3 november om 10.00 uur in zaal 1.23.",
		"Spotkanie 3.11.2026 o 10:00, sala 204, budynek C.",
		"Mötet är den 3/11 kl. 10.00 i rum 4.12.",
		"会議は11月3日10時から第3会議室で行います。",
		"회의는 11월 3일 오전 10시에 3층 회의실에서 열립니다.",
		"会议定于11月3日上午10点在3号会议室举行。",
		"Die Version 2.14.3 behebt 12 Fehler aus Ticket 4711.",
		"O pedido 12345 foi enviado em 03/11/2026 às 14h30.",
	)
	n("label-only", "invented",
		"Bitte geben Sie Ihre Steuer-ID im Formular ein.", "BSN: onbekend", "Tel.: n/a", "Phone: (not provided)",
		"SSN: ***-**-1234", "IBAN: DE** **** **** **** **** 00", "E-Mail: [hidden]", "PESEL: brak",
		"CPF não informado", "マイナンバー：未登録", "Aadhaar: XXXX XXXX 1234", "主叫号码：隐藏",
	)
}

func (g *gen) hex(n int) string {
	const h = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = h[g.rng.IntN(16)]
	}
	return string(b)
}

func (g *gen) alnum(n int) string {
	const a = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = a[g.rng.IntN(len(a))]
	}
	return string(b)
}

// isbnText writes an ISBN-13 (ISO 2108 check digit) or ISBN-10.
func (g *gen) isbnText(k int) string {
	body := "978" + g.between(0, 3, 1) + g.digits(8)
	s := 0
	for i := 0; i < 12; i++ {
		w := 1
		if i%2 == 1 {
			w = 3
		}
		s += int(body[i]-'0') * w
	}
	full := body + strconv.Itoa((10-s%10)%10)
	switch k % 4 {
	case 0:
		return fmt.Sprintf("ISBN %s-%s-%s-%s-%s", full[:3], full[3:4], full[4:7], full[7:12], full[12:])
	case 1:
		return fmt.Sprintf(`{"isbn13": "%s", "title": "Handbuch"}`, full)
	case 2:
		return fmt.Sprintf("ISBN-13: %s", full)
	default:
		ten := g.digits(9)
		s := 0
		for i := 0; i < 9; i++ {
			s += int(ten[i]-'0') * (10 - i)
		}
		c := (11 - s%11) % 11
		cs := strconv.Itoa(c)
		if c == 10 {
			cs = "X"
		}
		return fmt.Sprintf("ISBN %s-%s-%s-%s", ten[:1], ten[1:4], ten[4:9], cs)
	}
}

//go:build ignore

// gen writes corpus.jsonl: go run ./testdata/gen.go > testdata/corpus.jsonl
// (from internal/guardrails/detect). Every value is made up here: card
// numbers get a computed Luhn digit, IBANs computed check digits, phone
// numbers are libphonenumber's example numbers with their last digits
// changed and checked valid again, credentials are random strings of the
// shape gitleaks' rules describe. The seed is fixed, so the file is stable.
package main

import (
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/nyaruka/phonenumbers"
)

type item struct {
	Text    string   `json:"text"`
	PII     []string `json:"pii"`
	Secrets []string `json:"secrets"`
	Note    string   `json:"note"`
}

var (
	rng   = rand.New(rand.NewPCG(2026, 23))
	items []item
)

func add(note, text string, pii, secrets []string) {
	if pii == nil {
		pii = []string{}
	}
	if secrets == nil {
		secrets = []string{}
	}
	items = append(items, item{text, pii, secrets, note})
}

func pick[T any](xs []T) T { return xs[rng.IntN(len(xs))] }

func randFrom(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

const (
	upper   = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	lower   = "abcdefghijklmnopqrstuvwxyz"
	digits  = "0123456789"
	alnum   = upper + lower + digits
	hexLow  = "0123456789abcdef"
	base32  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	b64url  = alnum + "-_"
	lowAlnu = lower + digits
)

func luhnComplete(prefix string, length int) string {
	s := prefix + randFrom(digits, length-len(prefix)-1)
	for d := '0'; d <= '9'; d++ {
		if luhn(s + string(d)) {
			return s + string(d)
		}
	}
	panic("no luhn digit")
}

func luhn(d string) bool {
	sum, dbl := 0, false
	for i := len(d) - 1; i >= 0; i-- {
		v := int(d[i] - '0')
		if dbl {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
		dbl = !dbl
	}
	return sum%10 == 0
}

func group(d string, sizes []int, sep string) string {
	var parts []string
	for _, n := range sizes {
		parts = append(parts, d[:n])
		d = d[n:]
	}
	if d != "" {
		parts = append(parts, d)
	}
	return strings.Join(parts, sep)
}

func iban(cc, bban string) string {
	rearranged := bban + cc + "00"
	var num strings.Builder
	for _, c := range rearranged {
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

func group4(s string) string {
	var parts []string
	for len(s) > 4 {
		parts = append(parts, s[:4])
		s = s[4:]
	}
	return strings.Join(append(parts, s), " ")
}

// phone returns a valid number of the region, from its example number with
// the last two digits changed, in international and national format.
func phone(region string) (intl, national string) {
	ex := phonenumbers.GetExampleNumber(region)
	for range 50 {
		n := *ex
		nsn := ex.GetNationalNumber()
		nsn = nsn - nsn%100 + uint64(rng.IntN(100))
		n.NationalNumber = &nsn
		if phonenumbers.IsValidNumber(&n) {
			return phonenumbers.Format(&n, phonenumbers.INTERNATIONAL), phonenumbers.Format(&n, phonenumbers.NATIONAL)
		}
	}
	return phonenumbers.Format(ex, phonenumbers.INTERNATIONAL), phonenumbers.Format(ex, phonenumbers.NATIONAL)
}

func main() {
	emails()
	phones()
	cards()
	ibans()
	ssns()
	piiNegatives()
	secretPositives()
	secretNegatives()
	mixed()
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			panic(err)
		}
	}
}

var firstNames = []string{"maria", "jan", "li.wei", "aisha", "tomas", "olga", "kenji", "fatima", "lucas", "priya", "noah", "sofia"}
var domains = []string{"acme-corp.io", "mail.fabrikam.de", "contoso.co.uk", "globex.com", "initech.net", "umbrella.fr", "hooli.xyz", "piedpiper.dev", "wayne-enterprises.com", "stark.industries"}

func emails() {
	templates := []string{
		"Please contact %s for access.",
		`{"author": {"name": "M. K.", "email": "%s"}, "state": "open"}`,
		"2026-12-02T10:14:03Z INFO user login ok user=%s ip=10.0.4.17",
		"From: Support <%s>\nSubject: Your ticket #48213",
		"<a href=\"mailto:%s\">write to us</a>",
		"Signed-off-by: Dev Person <%s>",
		"cc: %s, please review.",
		"reporter=%s;priority=high",
		"Email: %s\nPhone: n/a",
		"- owner: %s\n  team: platform",
	}
	for i := range 30 {
		local := pick(firstNames)
		switch i % 5 {
		case 1:
			local += "+newsletter"
		case 2:
			local = strings.ToUpper(local[:1]) + local[1:] + fmt.Sprint(rng.IntN(99))
		case 3:
			local += "_" + pick(firstNames)
		}
		addr := local + "@" + pick(domains)
		add("email", fmt.Sprintf(templates[i%len(templates)], addr), []string{addr}, nil)
	}
}

func phones() {
	regions := []string{"GB", "DE", "FR", "IT", "ES", "NL", "BE", "CH", "AT", "SE", "NO", "DK", "PL", "IE", "PT", "BR", "MX", "IN", "JP", "AU", "ZA", "SG", "CA", "US", "AR", "TR", "IL", "NZ", "KR", "CN"}
	templates := []string{
		"Call me at %s tomorrow.",
		`{"contact": {"phone": "%s"}}`,
		"Tel.: %s",
		"customer phone=%s status=verified",
		"| Support hotline | %s |",
		"Reach the on-call engineer on %s (24/7).",
	}
	for i, r := range regions {
		intl, _ := phone(r)
		add("phone "+r+" international", fmt.Sprintf(templates[i%len(templates)], intl), []string{intl}, nil)
	}
	// US national formats.
	us := []string{"(415) 555-2671", "415-555-2671", "415.555.2671", "1-415-555-2671", "(212) 736-5000", "212 736 5000", "+1 (212) 736-5000", "+1-646-555-3890", "+14155552671", "(305) 555-0142"}
	for i, n := range us {
		add("phone US", fmt.Sprintf(templates[i%len(templates)], n), []string{n}, nil)
	}
	// A few national formats of other countries written with '+'.
	for _, r := range []string{"GB", "DE", "FR", "JP", "IN"} {
		intl, _ := phone(r)
		e164 := strings.NewReplacer(" ", "", "-", "").Replace(intl)
		add("phone "+r+" E.164", "whatsapp: "+e164, []string{e164}, nil)
	}
}

func cards() {
	issuers := []struct {
		name, prefix string
		length       int
		grouping     []int
	}{
		{"visa", "4", 16, []int{4, 4, 4, 4}},
		{"visa", "45", 16, []int{4, 4, 4, 4}},
		{"mastercard", "53", 16, []int{4, 4, 4, 4}},
		{"mastercard 2-series", "2720", 16, []int{4, 4, 4, 4}},
		{"mastercard 2-series", "2300", 16, []int{4, 4, 4, 4}},
		{"amex", "37", 15, []int{4, 6, 5}},
		{"amex", "34", 15, []int{4, 6, 5}},
		{"discover", "6011", 16, []int{4, 4, 4, 4}},
		{"discover", "65", 16, []int{4, 4, 4, 4}},
		{"jcb", "3530", 16, []int{4, 4, 4, 4}},
		{"diners", "3056", 14, []int{4, 6, 4}},
		{"unionpay", "6210", 16, []int{4, 4, 4, 4}},
		{"unionpay 19", "6250", 19, []int{4, 4, 4, 4, 3}},
		{"visa 19", "4", 19, []int{4, 4, 4, 4, 3}},
		{"maestro", "6759", 16, []int{4, 4, 4, 4}},
	}
	templates := []string{
		"Card: %s exp 08/29",
		`{"payment": {"pan": "%s", "holder": "J SMITH"}}`,
		"charge failed for card %s (insufficient funds)",
		"cc=%s&cvv=***",
	}
	for i := range 32 {
		is := issuers[i%len(issuers)]
		d := luhnComplete(is.prefix, is.length)
		var s string
		switch i % 3 {
		case 0:
			s = group(d, is.grouping, " ")
		case 1:
			s = group(d, is.grouping, "-")
		default:
			s = d
		}
		add("card "+is.name, fmt.Sprintf(templates[i%len(templates)], s), []string{s}, nil)
	}
}

func ibans() {
	countries := []struct {
		cc, bbanShape string // shape: 9 digit, A upper letter, X alnum
	}{
		{"DE", "999999999999999999"}, {"GB", "AAAA99999999999999"}, {"FR", "9999999999XXXXXXXXXXX99"},
		{"NL", "AAAA9999999999"}, {"ES", "99999999999999999999"}, {"IT", "A9999999999XXXXXXXXXXXX"},
		{"CH", "99999XXXXXXXXXXXX"}, {"BE", "999999999999"}, {"AT", "9999999999999999"},
		{"PL", "999999999999999999999999"}, {"SE", "99999999999999999999"}, {"NO", "99999999999"},
		{"DK", "99999999999999"}, {"FI", "99999999999999"}, {"IE", "AAAA99999999999999"},
		{"PT", "999999999999999999999"}, {"LU", "999XXXXXXXXXXXXX"}, {"CZ", "99999999999999999999"},
		{"RO", "AAAAXXXXXXXXXXXXXXXX"}, {"HU", "999999999999999999999999"},
	}
	templates := []string{
		"Please transfer to IBAN %s by Friday.",
		`{"beneficiary": {"iban": "%s", "bic": "DEUTDEFF"}}`,
		"Kontoverbindung: %s",
		"payout account %s updated",
	}
	for i, c := range countries {
		var b strings.Builder
		for _, s := range c.bbanShape {
			switch s {
			case '9':
				b.WriteByte(digits[rng.IntN(10)])
			case 'A':
				b.WriteByte(upper[rng.IntN(26)])
			default:
				b.WriteByte((upper + digits)[rng.IntN(36)])
			}
		}
		v := iban(c.cc, b.String())
		if i%2 == 0 {
			v = group4(v)
		}
		add("iban "+c.cc, fmt.Sprintf(templates[i%len(templates)], v), []string{v}, nil)
	}
	// Two more written whole inside text.
	v := iban("DE", "370400440532013000")
	add("iban DE whole", "IBAN:"+v+" BIC:COBADEFFXXX", []string{v}, nil)
	v = iban("GB", "NWBK60161331926819")
	add("iban GB grouped", "Sort it to "+group4(v)+".", []string{group4(v)}, nil)
}

func ssns() {
	templates := []string{"SSN: %s", `{"ssn": "%s"}`, "applicant social security number %s on file", "tax id %s"}
	for i := range 16 {
		area := 1 + rng.IntN(665)
		if area == 666 {
			area = 667
		}
		v := fmt.Sprintf("%03d-%02d-%04d", area, 1+rng.IntN(99), 1+rng.IntN(9999))
		if i%4 == 3 {
			v = strings.ReplaceAll(v, "-", " ")
		}
		add("us-ssn", fmt.Sprintf(templates[i%len(templates)], v), []string{v}, nil)
	}
}

func piiNegatives() {
	neg := []struct{ note, text string }{
		{"commit sha", "commit 9fceb02d0ae598e95dc970b74767f19372d61af8\nAuthor: CI Bot"},
		{"short sha", "Merged 1a2b3c4 into main (9f8e7d6)"},
		{"uuid", `{"id": "3f2504e0-4f89-11d3-9a0c-0305e82c3301"}`},
		{"uuid v4", "request_id=7c9e6679-7425-40de-944b-e07fc1f90ae7 status=200"},
		{"version", "upgraded lodash from 4.17.20 to 4.17.21"},
		{"version v", "kubectl v1.29.3, helm v3.14.2, node v20.11.1"},
		{"semver range", `"dependencies": {"react": "^18.2.0", "next": "~14.1.0"}`},
		{"iso date", "created 2026-12-02, updated 2026-12-03"},
		{"timestamp", "2026-12-02T15:53:00.123Z level=info msg=started"},
		{"datetime space", "2026-12-02 12:30:45 UTC job done"},
		{"unix time", `{"created": 1733155200, "updated": 1733155299}`},
		{"unix ms", `{"ts": 1733155200123}`},
		{"time", "uptime 12:30:45, load 0.12 0.34 0.56"},
		{"us date", "due 12/02/2026 or 02.12.2026"},
		{"ipv4", "connect to 192.168.100.200:5432 failed"},
		{"ipv4 list", "nameservers 8.8.8.8 1.1.1.1 10.0.0.1"},
		{"ipv6", "listen [2001:db8::1]:8080"},
		{"port", "listening on :8080 and :50051"},
		{"bytes", "wrote 1048576 bytes (1 MiB) in 3.2 s"},
		{"byte counts spaced", "size 1 234 567 bytes"},
		{"order number", "Order #100234567 shipped"},
		{"invoice", "Invoice INV-2026-000123 due"},
		{"order id", `{"order_id": 4815162342, "total": 129.99}`},
		{"tracking", "tracking number 1Z999AA10123456784"},
		{"test card visa", "use 4111 1111 1111 1111 in the sandbox"},
		{"test card stripe", "Stripe test card 4242 4242 4242 4242, any CVC"},
		{"test card mc", "5555 5555 5555 4444 succeeds"},
		{"test card amex", "Amex test: 378282246310005"},
		{"test card discover", "6011111111111117 (Discover test)"},
		{"luhn invalid", "card 4539 1488 0343 6468"},
		{"unknown issuer", "number 9999 9999 9999 9995"},
		{"example.com email", "contact admin@example.com or ops@mail.example.org"},
		{"rfc2606 tlds", "alice@wonder.test bob@host.example carol@x.invalid root@localhost"},
		{"git remote", "git clone git@github.com:purko-io/mcp-hub.git"},
		{"ssh url", "remote: ssh://git@gitlab.com/group/project.git"},
		{"url userinfo", "proxy https://user@proxy.internal.net:3128"},
		{"npm scope", "npm i @babel/core @types/node"},
		{"package version", "installed lodash@4.17.21 and react@18.2.0"},
		{"mention", "thanks @octocat and @dependabot for the fix"},
		{"host without tld", "ssh deploy@buildhost"},
		{"image variant", "assets: logo@2x.png, logo@3x.png"},
		{"docker digest", "image sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"md5", "md5 d41d8cd98f00b204e9800998ecf8427e"},
		{"base64 blob", "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="},
		{"iban bad checksum", "IBAN DE00 3704 0044 0532 0130 00"},
		{"iban wrong length", "ref DE89 3704 0044 0532 0130"},
		{"iban lower case word", "the de89 flag"},
		{"ssn area 000", "id 000-12-3456"},
		{"ssn area 666", "id 666-12-3456"},
		{"ssn area 9xx", "ITIN 912-70-1234"},
		{"ssn group 00", "id 123-00-4567"},
		{"ssn serial 0000", "id 123-45-0000"},
		{"ssn advertising", "the famous 078-05-1120 from the wallet insert"},
		{"ssn pamphlet", "example SSN 219-09-9999"},
		{"bare 9 digits", "routing 021000021"},
		{"phone-like invalid", "call 123-456-7890"},
		{"phone bare digits", "ref 4155552671"},
		{"phone in token", "build-4155552671-linux"},
		{"decimal", "pi is 3.14159265358979"},
		{"coordinates", "lat 52.520008, lon 13.404954"},
		{"money", "total $1,234,567.89 and EUR 2.500.000"},
		{"hex color", "color: #336699; background: #fafafa"},
		{"k8s resources", "resources: limits: cpu: 500m memory: 1024Mi"},
		{"percent", "progress 99.5% of 1000000"},
		{"file listing", "-rw-r--r--  1 root root  1048576 Dec  2 15:53 data.bin"},
		{"line numbers", "at main.go:123:45\nat server.go:2048:7"},
		{"duration", "took 1h23m45.678s (5025678 ms)"},
		{"phone in path", "/api/v1/users/4155552671/orders"},
		{"isbn", "ISBN 978-3-16-148410-0"},
		{"date range", "2026-01-01 - 2026-12-31"},
		{"version 4 parts", "Chrome 120.0.6099.109"},
		{"mac address", "ether 02:42:ac:11:00:02"},
		{"sequence", "ids 1 2 3 4 5 6 7 8 9 10"},
		{"clean prose", "The quick brown fox jumps over the lazy dog. Nothing personal here."},
		{"log line", "I1202 15:53:00.123456    1234 controller.go:117] Reconciled 42 objects in 3ms"},
		{"json numbers", `{"count": 1234567, "page": 2, "per_page": 100, "total_pages": 12346}`},
	}
	for _, n := range neg {
		add("negative: "+n.note, n.text, nil, nil)
	}
}

func secretPositives() {
	akia := "AKIA" + randFrom(base32, 16)
	type pos struct{ note, text, secret string }
	var ps []pos
	s := func(note, tmpl, secret string) {
		ps = append(ps, pos{note, strings.ReplaceAll(tmpl, "%s", secret), secret})
	}
	s("aws key in .env", "AWS_ACCESS_KEY_ID=%s\nAWS_REGION=eu-west-1", akia)
	s("aws key in json", `{"aws_access_key_id": "%s"}`, "AKIA"+randFrom(base32, 16))
	s("aws key in log", "2026-12-02 boto3 using credentials %s from env", "ASIA"+randFrom(base32, 16))
	s("github pat", "export GITHUB_TOKEN=%s", "ghp_"+randFrom(alnum, 36))
	s("github pat in comment", "// TODO remove before merge: %s", "ghp_"+randFrom(alnum, 36))
	s("github oauth", `{"token": "%s", "scope": "repo"}`, "gho_"+randFrom(alnum, 36))
	s("github app token", "installation token %s expires in 1h", "ghs_"+randFrom(alnum, 36))
	s("github fine-grained", "GH_PAT=%s", "github_pat_"+randFrom(alnum, 22)+"_"+randFrom(alnum, 59))
	s("gitlab pat", "git clone https://oauth2:%s@gitlab.com/g/p.git", "glpat-"+randFrom(alnum, 20))
	s("gitlab pat env", "CI_TOKEN: %s", "glpat-"+randFrom(alnum, 20))
	s("slack bot token", "slack_token = \"%s\"", "xoxb-"+randFrom(digits, 12)+"-"+randFrom(digits, 13)+"-"+randFrom(alnum, 24))
	s("slack user token", "SLACK=%s", "xoxp-"+randFrom(digits, 12)+"-"+randFrom(digits, 12)+"-"+randFrom(digits, 13)+"-"+randFrom(hexLow, 32))
	s("slack webhook", "POST %s", "https://hooks.slack.com/services/T"+randFrom(upper+digits, 8)+"/B"+randFrom(upper+digits, 10)+"/"+randFrom(alnum, 24))
	s("stripe live key", "stripe.api_key = '%s'", "sk_live_"+randFrom(alnum, 24))
	s("stripe restricted", "STRIPE_KEY=%s", "rk_live_"+randFrom(alnum, 24))
	s("npm token", "//registry.npmjs.org/:_authToken=%s", "npm_"+randFrom(lowAlnu, 36))
	s("gcp api key", `{"apiKey": "%s", "authDomain": "x.firebaseapp.com"}`, "AIza"+randFrom(b64url, 35))
	s("sendgrid", "SENDGRID_API_KEY=%s", "SG."+randFrom(b64url, 22)+"."+randFrom(b64url, 43))
	s("anthropic", "ANTHROPIC_API_KEY=%s", "sk-ant-api03-"+randFrom(b64url, 93)+"AA")
	s("digitalocean pat", "doctl auth init -t %s", "dop_v1_"+randFrom(hexLow, 64))
	s("shopify token", "X-Shopify-Access-Token: %s", "shpat_"+randFrom(hexLow, 32))
	s("huggingface", "HF_TOKEN=%s", "hf_"+randFrom(upper+lower, 34))
	s("pypi", "password = %s", "pypi-AgEIcHlwaS5vcmc"+randFrom(b64url, 60))
	s("databricks", "DATABRICKS_TOKEN=%s", "dapi"+randFrom(hexLow, 32))
	s("jwt", "Authorization: Bearer %s", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI"+randFrom(alnum, 24)+"In0."+randFrom(b64url, 43))
	s("jwt in json", `{"id_token": "%s"}`, "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJ"+randFrom(alnum, 30)+"."+randFrom(b64url, 40))
	s("generic api key", "api_key = \"%s\"", randFrom(alnum, 32))
	s("generic secret yaml", "client_secret: %s\nclient_id: web", randFrom(alnum, 40))
	s("generic password", "DB_PASSWORD=\"%s\"", randFrom(alnum, 20)+"x9Q")
	s("generic token in json", `{"access_token": "%s", "expires_in": 3600}`, randFrom(alnum, 40))
	s("generic auth header", "X-Auth-Token: %s", randFrom(alnum, 36))
	s("twilio", "TWILIO_API_KEY=%s", "SK"+randFrom(hexLow, 32))
	s("pulumi", "PULUMI_ACCESS_TOKEN=%s", "pul-"+randFrom(hexLow, 40))
	s("doppler", "DOPPLER_TOKEN=%s", "dp.pt."+randFrom(lowAlnu, 43))
	s("linear", "LINEAR=%s", "lin_api_"+randFrom(lowAlnu, 40))
	s("postman", "postman key %s", "PMAK-"+randFrom(hexLow, 24)+"-"+randFrom(hexLow, 34))
	s("grafana service account", "GRAFANA_TOKEN=%s", "glsa_"+randFrom(alnum, 32)+"_"+randFrom(hexLow, 8))
	s("age secret key", "%s", "AGE-SECRET-KEY-1"+randFrom("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58))
	s("openai project key", "OPENAI_API_KEY=%s", "sk-proj-"+randFrom(b64url, 74)+"T3BlbkFJ"+randFrom(b64url, 74))
	s("heroku v2", "HEROKU_API_KEY=%s", "HRKU-AA"+randFrom(b64url, 58))
	for _, p := range ps {
		add("secret: "+p.note, p.text, nil, []string{p.secret})
	}
	key := "-----BEGIN RSA PRIVATE KEY-----\n" + randFrom(alnum+"+/", 64) + "\n" + randFrom(alnum+"+/", 64) + "\n" + randFrom(alnum+"+/", 40) + "==\n-----END RSA PRIVATE KEY-----"
	add("secret: private key in a file listing", "$ cat deploy/id_rsa\n"+key+"\n$ ls", nil, []string{key})
	key2 := "-----BEGIN OPENSSH PRIVATE KEY-----\n" + randFrom(alnum+"+/", 70) + "\n" + randFrom(alnum+"+/", 70) + "\n-----END OPENSSH PRIVATE KEY-----"
	add("secret: openssh key in json", "{\"content\": \""+key2+"\"}", nil, []string{key2})
	// Two credentials in one text.
	a, g := "AKIA"+randFrom(base32, 16), "ghp_"+randFrom(alnum, 36)
	add("secret: two in a log", "boot: aws="+a+"\nboot: gh="+g+"\nready", nil, []string{a, g})
	// A credential in a stack trace.
	st := "sk_live_" + randFrom(alnum, 30)
	add("secret: stack trace", "Traceback (most recent call last):\n  File \"pay.py\", line 12, in charge\n    stripe.Charge.create(api_key=\""+st+"\")\nstripe.error.AuthenticationError: Invalid API Key", nil, []string{st})
}

func secretNegatives() {
	neg := []struct{ note, text string }{
		{"aws example key", "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE"},
		{"aws example secret", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
		{"placeholder angle", "export GITHUB_TOKEN=<your-token>"},
		{"placeholder xxx", "api_key = \"xxxxxxxxxxxxxxxxxxxxxxxx\""},
		{"placeholder stars", "password: ********"},
		{"template var", "client_secret = \"${CLIENT_SECRET}\""},
		{"env lookup", "token := os.Getenv(\"GITHUB_TOKEN\")"},
		{"env lookup python", "api_key = os.environ[\"OPENAI_API_KEY\"]"},
		{"helm template", "password: {{ .Values.db.password }}"},
		{"vault ref", "token: vault:secret/data/ci#token"},
		{"masked in log", "using token ghp_****************************abcd"},
		{"redacted", "Authorization: Bearer [REDACTED]"},
		{"docs placeholder", "Set `STRIPE_KEY` to your secret key (starts with sk_live_)."},
		{"key word prose", "The key insight is that the token bucket refills every second."},
		{"keys in code", "for key, value := range secrets { log.Printf(\"%s set\", key) }"},
		{"password prompt", "Enter password: "},
		{"commit sha", "token refresh fixed in 9fceb02d0ae598e95dc970b74767f19372d61af8"},
		{"sha256", "checksum sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"},
		{"uuid api key name", "api_key_id: 3f2504e0-4f89-11d3-9a0c-0305e82c3301"},
		{"base64 image", "data:image/gif;base64,R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw=="},
		{"public key", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@laptop"},
		{"certificate", "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----"},
		{"npm integrity", "\"integrity\": \"sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+LFTGHVxVjcXPs17LhbZVGedAJv8XZ1tvj5FvSg==\""},
		{"go.sum", "github.com/pelletier/go-toml/v2 v2.2.3 h1:YmeHyLY8mFWbdkNWwpr+qIL2bEqT0o95WSdkNHvL12M="},
		{"short token", "token=abc123"},
		{"test key word", "api_key = \"test\""},
		{"jwt-like prose", "they said hey"},
		{"key file path", "ssh -i ~/.ssh/id_rsa deploy@host"},
		{"k8s secret ref", "valueFrom:\n  secretKeyRef:\n    name: db\n    key: password"},
		{"stripe test docs", "Use the publishable key pk_test_TYooMQauvdEDq54NiTphI7jx in the examples"},
		{"issue text", "Rotating the API key broke the webhook; the new key is in the vault now."},
		{"changelog", "- auth: tokens now expire after 24h (#1234)\n- api: pagination fixed"},
		{"html", "<input type=\"password\" name=\"password\" autocomplete=\"current-password\">"},
		{"sql", "SELECT id, email FROM users WHERE api_key_hash = $1"},
		{"kelvin", "temperature 300 K, access level 3"},
		{"json keys only", `{"has_token": true, "token_type": "bearer", "scope": "read"}`},
		{"file listing", "drwxr-xr-x  secrets/\n-rw-------  secrets/token.txt\n-rw-r--r--  keys.go"},
		{"uuid", "7c9e6679-7425-40de-944b-e07fc1f90ae7"},
		{"git log", "commit a1b2c3d4e5f60718293a4b5c6d7e8f9012345678\n\n    Fix auth header parsing"},
		{"npm lock", "\"resolved\": \"https://registry.npmjs.org/token-types/-/token-types-5.0.1.tgz\""},
	}
	for _, n := range neg {
		add("negative: "+n.note, n.text, nil, nil)
	}
}

func mixed() {
	for i := range 12 {
		email := pick(firstNames) + "@" + pick(domains)
		intl, _ := phone(pick([]string{"GB", "DE", "FR", "NL", "US"}))
		gh := "ghp_" + randFrom(alnum, 36)
		switch i % 3 {
		case 0:
			add("mixed: issue comment", fmt.Sprintf("Hi team, customer %s (tel %s) reports a failing sync since v2.3.1, build 2026-12-02. Logs attached.", email, intl), []string{email, intl}, nil)
		case 1:
			add("mixed: config dump", fmt.Sprintf("owner_email=%s\ngithub_token=%s\nretries=3\ntimeout=30s", email, gh), []string{email}, []string{gh})
		default:
			add("mixed: clean log", fmt.Sprintf("2026-12-02T15:53:%02d.123Z INFO http GET /api/v1/items?page=%d status=200 dur=%dms bytes=%d", i, i, 10+i, 1048576+i), nil, nil)
		}
	}
}

// Package detect finds personal data (PII) and credentials (Secrets) in
// texts, for the hub's guardrails: each finding is a rule id and the byte
// range a filter redacts or names when it blocks a call.
//
// Both detectors are built for throughput on tool results of hundreds of
// kilobytes: a cheap scan finds candidates and only candidates meet the
// expensive checks (libphonenumber's rules, Luhn, mod-97, regular
// expressions), and Maybe lets a caller skip a whole JSON document without
// decoding it.
//
// What is not reported, on purpose: documentation values (RFC 2606 e-mail
// domains, payment networks' published test card numbers, the SSA's
// advertising SSNs, gitleaks' allowlisted placeholders), IP addresses (not
// personal on their own in tool output, and numerous in logs), lower-case
// IBANs, bare 9-digit SSNs, and phone numbers written without any
// formatting (no '+', separator or parentheses: indistinguishable from
// order numbers and IDs).
package detect

// Finding is one match: text[Start:End] (byte offsets) is what a filter
// replaces; Rule names what was found in the marker and the audit line
// ("email", "aws-access-token").
type Finding struct {
	Rule       string
	Start, End int
}

// Rule ids of the personal data rules.
const (
	RuleEmail       = "email"
	RulePhone       = "phone"
	RulePaymentCard = "payment-card"
	RuleIBAN        = "iban"
	RuleUSSSN       = "us-ssn"
)

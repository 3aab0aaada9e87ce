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
// IBANs, and numbers that only a label could tell from order numbers and
// IDs when no label is there: bare 9-digit SSNs, national ids whose digits
// alone pass their check one time in ten or eleven (German tax id, BSN,
// PESEL, CPF, Aadhaar, My Number, SIN, TFN, CPR, ...: see ids.go), and
// phone numbers written without any formatting (no '+', separator or
// parentheses) unless a word such as "Tel" or "電話" labels them.
package detect

import "slices"

// Finding is one match: text[Start:End] (byte offsets) is what a filter
// replaces; Rule names what was found in the marker and the audit line
// ("email", "aws-access-token").
type Finding struct {
	Rule       string
	Start, End int
}

// Rule ids of the personal data rules. A national id's rule is its
// country's ISO 3166 code and its name.
const (
	RuleEmail       = "email"
	RulePhone       = "phone"
	RulePaymentCard = "payment-card"
	RuleIBAN        = "iban"
	RuleUSSSN       = "us-ssn"

	RuleAUTFN            = "au-tfn"
	RuleBENationalNumber = "be-national-number"
	RuleBRCNPJ           = "br-cnpj"
	RuleBRCPF            = "br-cpf"
	RuleCASIN            = "ca-sin"
	RuleCHAHV            = "ch-ahv"
	RuleCNResidentID     = "cn-resident-id"
	RuleDKCPR            = "dk-cpr"
	RuleDETaxID          = "de-tax-id"
	RuleESDNI            = "es-dni"
	RuleESNIE            = "es-nie"
	RuleFIHETU           = "fi-hetu"
	RuleFRNIR            = "fr-nir"
	RuleINAadhaar        = "in-aadhaar"
	RuleITFiscalCode     = "it-fiscal-code"
	RuleJPMyNumber       = "jp-my-number"
	RuleKRRRN            = "kr-rrn"
	RuleMXCURP           = "mx-curp"
	RuleNLBSN            = "nl-bsn"
	RuleNOFnr            = "no-fnr"
	RulePLPESEL          = "pl-pesel"
	RuleSEPersonnummer   = "se-personnummer"
	RuleUKNINO           = "uk-nino"
	RuleZAID             = "za-id"
)

// IsPIIRule reports whether rule is one of the rule ids PII reports, for
// those who name a finding's filter by its rule (the guardrails' reports
// and metrics).
func IsPIIRule(rule string) bool { return slices.Contains(piiRules[:], rule) }

// piiRules are the rule ids PII reports.
var piiRules = [...]string{
	RuleEmail, RulePhone, RulePaymentCard, RuleIBAN, RuleUSSSN,
	RuleAUTFN, RuleBENationalNumber, RuleBRCNPJ, RuleBRCPF, RuleCASIN, RuleCHAHV, RuleCNResidentID,
	RuleDKCPR, RuleDETaxID, RuleESDNI, RuleESNIE, RuleFIHETU, RuleFRNIR, RuleINAadhaar,
	RuleITFiscalCode, RuleJPMyNumber, RuleKRRRN, RuleMXCURP, RuleNLBSN, RuleNOFnr, RulePLPESEL,
	RuleSEPersonnummer, RuleUKNINO, RuleZAID,
}

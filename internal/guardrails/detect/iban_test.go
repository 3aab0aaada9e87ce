package detect

import (
	"fmt"
	"testing"
)

// TestIBANCheckDigitRange: check digits outside 02-98 are no IBAN's, even
// where the mod-97 remainder is 1: 99 passes wherever 02 does.
func TestIBANCheckDigitRange(t *testing.T) {
	p := NewPII()
	for k := 1; ; k++ {
		bban := fmt.Sprintf("%014d", k*7919)
		if mod97([]byte("FI02"+bban)) != 1 {
			continue
		}
		if got := p.Find("IBAN FI02"+bban, nil); len(got) != 1 || got[0].Rule != RuleIBAN {
			t.Errorf("FI02%s: %v, want the IBAN", bban, got)
		}
		if got := p.Find("IBAN FI99"+bban, nil); len(got) != 0 {
			t.Errorf("FI99%s: %v, want nothing", bban, got)
		}
		return
	}
}

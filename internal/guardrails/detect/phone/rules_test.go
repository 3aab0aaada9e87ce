package phone

import "testing"

// TestPhoneMetaCompiles: every generated pattern compiles (the validator
// would otherwise judge a region's numbers invalid on first use).
func TestPhoneMetaCompiles(t *testing.T) {
	p := New()
	for i := range phoneRegions {
		if _, err := p.region(i); err != nil {
			t.Error(err)
		}
	}
	if got := len(p.formats()); got != len(phoneNationalFormats) {
		t.Errorf("%d of %d national formats compile", got, len(phoneNationalFormats))
	}
	if p.national < 0 {
		t.Errorf("national region %s is not in the tables", phoneNationalRegion)
	}
}

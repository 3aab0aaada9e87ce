package phone

import "testing"

// TestPhoneMetaCompiles: every generated pattern compiles (the validator
// would otherwise judge a region's numbers invalid on first use), and
// every national region is in the tables with its code's formats.
func TestPhoneMetaCompiles(t *testing.T) {
	p := New()
	for i := range phoneRegions {
		if _, err := p.region(i); err != nil {
			t.Error(err)
		}
	}
	for i, set := range phoneFormatSets {
		if got := len(p.formatsOf(i).formats); got != len(set.formats) {
			t.Errorf("code %d: %d of %d national formats compile", set.code, got, len(set.formats))
		}
	}
	if len(p.nationals) != NationalRegions {
		t.Fatalf("%d of the %d national regions are in the tables", len(p.nationals), NationalRegions)
	}
	for r, nr := range p.nationals {
		if phoneRegions[nr.region].id != phoneNationalRegions[r] || nr.formats < 0 {
			t.Errorf("national region %d (%s): region %s, formats %d", r, phoneNationalRegions[r], phoneRegions[nr.region].id, nr.formats)
		}
	}
}

// TestLayouts: the layouts read from a format's pattern and rule.
func TestLayouts(t *testing.T) {
	l := layoutsOf([]phoneFormat{{`(\d{2})(\d{6,8})`, ``, `$1 $2`, `0$1`}, {`(\d{3})(\d{3})(\d{4})`, ``, `$1-$2-$3`, `($1)`}})
	for _, c := range []struct {
		digits, first int
		want          bool
	}{{9, 3, true}, {11, 3, true}, {12, 3, false}, {8, 3, false}, {10, 3, true}, {10, 4, false}, {10, 2, false}} {
		if got := l[c.digits]&(1<<c.first) != 0; got != c.want {
			t.Errorf("%d digits, first group %d: %v, want %v", c.digits, c.first, got, c.want)
		}
	}
	if l := layoutsOf([]phoneFormat{{`(\d{2}`, ``, `$1`, ``}}); l[5] != ^uint32(0) {
		t.Error("a pattern that does not parse must open every layout")
	}
}

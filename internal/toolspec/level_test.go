package toolspec

import (
	"strings"
	"testing"
)

func TestCanonicalLevel(t *testing.T) {
	cases := []struct {
		in, want string
	}{
		{"manual", "manual"}, {"restricted", "restricted"}, {"supervised", "supervised"}, {"full", "full"},
		{"shu", "restricted"}, {"Ha", "supervised"}, {" RI\t", "full"},
		{"", ""}, {"  ", ""}, {"godmode", ""}, {"shu-ha", ""}, {"full\x00", ""},
	}
	for _, tc := range cases {
		got, err := CanonicalLevel(tc.in)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("CanonicalLevel(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
		if err != nil && !strings.Contains(err.Error(), "accepted: manual, restricted, supervised, full") {
			t.Errorf("CanonicalLevel(%q) error %q does not list the accepted names", tc.in, err)
		}
	}
	for _, name := range LevelNames() {
		if _, err := CanonicalLevel(name); err != nil {
			t.Errorf("LevelNames lists %q but CanonicalLevel rejects it: %v", name, err)
		}
	}
	if n := len(LevelNames()); n != len(levelAliases()) {
		t.Errorf("LevelNames has %d names, the alias table %d", n, len(levelAliases()))
	}
}

func TestValidatePatterns(t *testing.T) {
	cases := []struct {
		pattern, want string // want "" = valid
	}{
		{"get_*", ""}, {"list_issues", ""}, {"[a-z]*", ""},
		{"", "empty tool pattern"}, {"  ", "empty tool pattern"},
		{" get_*", "leading or trailing spaces"},
		{"run_[x", `"run_[x" is not a valid tool pattern`},
	}
	for _, tc := range cases {
		err := ValidatePatterns([]string{"ok_*", tc.pattern})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("ValidatePatterns(%q) = %v, want nil", tc.pattern, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("ValidatePatterns(%q) = %v, want %q", tc.pattern, err, tc.want)
		}
	}
}

package autonomy_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// config and the discovery sources validate levels and tool patterns with
// toolspec, which does not import autonomy; autonomy enforces them with
// toolspec's parser and pattern check. These tests hold what a config can
// be told against what the enforcement reads: toolspec.LevelNames (the
// names config lists in its errors and the chart schema) must be exactly
// the names ParseLevel accepts, and a pattern must pass or fail both.

// nonLevels are words a config might plausibly hold that are no level.
var nonLevels = []string{"", " ", "admin", "none", "read-only", "readonly", "write", "godmode", "fullish", "shu-ha", "0", "3", "full\x00", "ma nual", "supervise", "Ri!"}

func TestParseLevelAcceptsExactlyToolspecLevelNames(t *testing.T) {
	names := toolspec.LevelNames()
	for _, name := range names {
		for _, variant := range []string{name, strings.ToUpper(name), " " + name + "\t"} {
			lvl, err := autonomy.ParseLevel(variant)
			if err != nil {
				t.Errorf("toolspec lists level %q but autonomy.ParseLevel(%q) fails: %v", name, variant, err)
				continue
			}
			canonical, err := toolspec.CanonicalLevel(variant)
			if err != nil || canonical != lvl.String() {
				t.Errorf("level %q: toolspec.CanonicalLevel = %q, %v; autonomy.ParseLevel = %s", variant, canonical, err, lvl)
			}
		}
	}
	for l := autonomy.Manual; l <= autonomy.Full; l++ {
		if !slices.Contains(names, l.String()) {
			t.Errorf("autonomy level %s is missing from toolspec.LevelNames() %v", l, names)
		}
	}
	// ParseLevel's error lists every name it accepts; the names in it must
	// be exactly toolspec's, so an alias added to one side only fails here.
	_, err := autonomy.ParseLevel("")
	if err == nil {
		t.Fatal("autonomy.ParseLevel(\"\") accepted an empty level")
	}
	_, accepted, found := strings.Cut(err.Error(), "accepted: ")
	if !found {
		t.Fatalf("autonomy.ParseLevel error %q no longer lists the accepted names; update this test", err)
	}
	listed := regexp.MustCompile(`[a-z]+`).FindAllString(strings.ReplaceAll(accepted, "aliases", ""), -1)
	slices.Sort(listed)
	listed = slices.Compact(listed)
	want := slices.Sorted(slices.Values(names))
	if !slices.Equal(listed, want) {
		t.Errorf("autonomy.ParseLevel accepts %v, toolspec.LevelNames() lists %v", listed, want)
	}
	for _, s := range nonLevels {
		checkLevelAgreement(t, s)
	}
}

func TestValidatePatternsAgree(t *testing.T) {
	for _, p := range []string{"get_*", "list_issues", "[a-z]*", "*", "", "  ", " get_*", "get_* ", "run_[x", `\`, "a[", "[]a]", "ok"} {
		checkPatternAgreement(t, p)
	}
}

// FuzzToolspecAgreesWithAutonomy looks for a level name or tool pattern
// the two packages judge differently.
func FuzzToolspecAgreesWithAutonomy(f *testing.F) {
	for _, s := range append(toolspec.LevelNames(), nonLevels...) {
		f.Add(s)
	}
	for _, s := range []string{"get_*", " x", "run_[x", `a\`, "[!a-]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkLevelAgreement(t, s)
		checkPatternAgreement(t, s)
	})
}

func checkLevelAgreement(t *testing.T, s string) {
	t.Helper()
	lvl, errA := autonomy.ParseLevel(s)
	canonical, errT := toolspec.CanonicalLevel(s)
	if (errA == nil) != (errT == nil) || (errA == nil && lvl.String() != canonical) {
		t.Errorf("level %q: autonomy.ParseLevel = %s, %v; toolspec.CanonicalLevel = %q, %v", s, lvl, errA, canonical, errT)
	}
}

func checkPatternAgreement(t *testing.T, p string) {
	t.Helper()
	errA := autonomy.ValidatePatterns([]string{p})
	errT := toolspec.ValidatePatterns([]string{p})
	if (errA == nil) != (errT == nil) {
		t.Errorf("pattern %q: autonomy.ValidatePatterns = %v; toolspec.ValidatePatterns = %v", p, errA, errT)
	}
}

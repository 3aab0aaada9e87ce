package toolspec

import (
	"fmt"
	"strings"
)

// levelAliases maps every accepted level name to its canonical name. It is
// the one list of level names: autonomy.ParseLevel reads levels with
// CanonicalLevel, and config and discovery (which do not import autonomy)
// check them with it.
func levelAliases() map[string]string {
	return map[string]string{
		"manual":     "manual",
		"restricted": "restricted",
		"supervised": "supervised",
		"full":       "full",
		"shu":        "restricted",
		"ha":         "supervised",
		"ri":         "full",
	}
}

// LevelNames lists every autonomy level name a configuration may use, the
// four canonical names first (least permissive first), then the Shu-Ha-Ri
// aliases. Matching ignores case and surrounding spaces.
func LevelNames() []string {
	return []string{"manual", "restricted", "supervised", "full", "shu", "ha", "ri"}
}

// CanonicalLevel returns the canonical name of the autonomy level s
// ("restricted" for "Shu "), or an error naming s and the accepted names.
// There is no default: a level a config gets wrong must stop the config, not
// silently become some other level.
func CanonicalLevel(s string) (string, error) {
	key := strings.ToLower(strings.TrimSpace(s))
	if c, ok := levelAliases()[key]; ok {
		return c, nil
	}
	what := "unknown"
	if key == "" {
		what = "empty"
	}
	return "", fmt.Errorf("%s autonomy level %q; accepted: manual, restricted, supervised, full (aliases: shu=restricted, ha=supervised, ri=full)", what, s)
}

package toolspec

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// ValidatePatterns reports every malformed tool-name pattern of a tool
// policy, so a config file or an annotation is rejected where it is read
// instead of silently misclassifying tools. A pattern is malformed when
// path.Match rejects it, when it is empty, or when it has leading or
// trailing spaces (tool names never do, so it could never match).
// autonomy.ValidatePatterns is this check too.
func ValidatePatterns(patterns []string) error {
	var errs []error
	for _, p := range patterns {
		if err := ValidatePattern(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ValidatePattern checks one tool-name pattern (see ValidatePatterns).
func ValidatePattern(p string) error {
	switch {
	case strings.TrimSpace(p) == "":
		return fmt.Errorf("empty tool pattern %q", p)
	case strings.TrimSpace(p) != p:
		return fmt.Errorf("tool pattern %q has leading or trailing spaces", p)
	}
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("%q is not a valid tool pattern: %w", p, err)
	}
	return nil
}

// Match returns the first of patterns (path.Match globs, checked by
// ValidatePatterns) that matches name: the one way a tool-name pattern is
// applied, by tool policies, curation and virtual servers alike.
func Match(patterns []string, name string) (pattern string, ok bool) {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return p, true
		}
	}
	return "", false
}

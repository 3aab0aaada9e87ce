package detect

import (
	"context"
	"fmt"
	"slices"

	"github.com/purko-io/mcp-hub/internal/builtin/secretscan"
)

// Secrets finds credentials with gitleaks' default rules (the rule id is
// gitleaks'). Its rules are compiled on first use, once; it is safe for
// concurrent use.
type Secrets struct {
	scanner *secretscan.Scanner
}

// NewSecrets returns a credential detector with gitleaks' default rules.
func NewSecrets() *Secrets {
	return &Secrets{scanner: secretscan.Default()}
}

// Find appends the credentials in text to out, in order of Start,
// non-overlapping (of two overlapping findings the one starting first, or
// the longer, is kept). On ctx's end it returns what it found so far with
// the error.
func (s *Secrets) Find(ctx context.Context, text string, out []Finding) ([]Finding, error) {
	found, err := s.scanner.Scan(ctx, text)
	if err != nil {
		err = fmt.Errorf("finding secrets: %w", err)
	}
	if len(found) == 0 {
		return out, err
	}
	fs := make([]Finding, 0, len(found))
	for _, f := range found {
		if f.End > f.Start {
			fs = append(fs, Finding{Rule: f.RuleID, Start: f.Start, End: f.End})
		}
	}
	slices.SortStableFunc(fs, func(a, b Finding) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		return b.End - a.End
	})
	for _, f := range fs {
		if n := len(out); n > 0 && out[n-1].End > f.Start {
			continue
		}
		out = append(out, f)
	}
	return out, err
}

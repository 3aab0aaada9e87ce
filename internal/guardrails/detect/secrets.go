package detect

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/purko-io/mcp-hub/internal/builtin/secretscan"
)

// Secrets finds credentials with gitleaks' default rules and the hub's own
// (secretscan.Hub; the rule id is the rule's). Its rules are compiled on
// first use, once; it is safe for concurrent use.
type Secrets struct {
	scanner *secretscan.Scanner
}

// NewSecrets returns a credential detector with gitleaks' default rules
// and the hub's.
func NewSecrets() *Secrets {
	return &Secrets{scanner: secretscan.Hub()}
}

// Find appends the credentials in text to out, in order of Start,
// non-overlapping (of two overlapping findings the one starting first, or
// the longer, is kept). A finding that stops inside a token is carried to
// the token's end (tokenEnd): a redaction that leaves the tail of a
// credential readable leaks it. On ctx's end it returns what it found so
// far with the error.
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
			fs = append(fs, Finding{Rule: f.RuleID, Start: f.Start, End: tokenEnd(text, f.End)})
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

// tokenEnd returns where the token that text[:end] ends inside ends: past
// the letters, digits, '_' and '-' that follow end, and past '.', '+',
// '/', '=', '~' or '%' between two of them, then past '=' padding. A rule
// that stops early (a Slack token cut after its first segment, a key of a
// length the rule did not expect) then still redacts all of it.
func tokenEnd(text string, end int) int {
	for end < len(text) {
		c := text[end]
		switch {
		case isTokenByte(c):
			end++
		case strings.IndexByte(".+/=~%", c) >= 0 && end+1 < len(text) && isTokenByte(text[end+1]) && end > 0 && isTokenByte(text[end-1]):
			end += 2
		default:
			for n := 0; n < 2 && end < len(text) && text[end] == '='; n++ {
				end++
			}
			return end
		}
	}
	return end
}

// isTokenByte reports whether c can be inside a token: an ASCII letter or
// digit, '_' or '-'.
func isTokenByte(c byte) bool {
	return isAlnum(c) || c == '_' || c == '-'
}

package builtin

import (
	"context"
	"errors"
	"fmt"

	"github.com/purko-io/mcp-hub/internal/builtin/secretscan"
)

// ruleGitleaks reports credential patterns found by gitleaks' default rule
// set. Unlike the code rules it deliberately looks inside string literals
// and comments: a leaked key is a leak wherever it sits.
var ruleGitleaks = ruleInfo{ID: "SEC001", Severity: sevHigh, CWE: "CWE-798", Issue: "Credential pattern found (gitleaks)"}

// scanSecrets adds SEC001 findings and returns notes about the scan. The
// scanner compiles its rules on the first call, so a hub whose callers never
// run static-analysis never holds them.
func scanSecrets(ctx context.Context, secrets *secretscan.Scanner, code string, sink *findingSink) []string {
	if ctx.Err() != nil {
		return []string{"secret scan (gitleaks rules) skipped: time limit reached"}
	}
	found, err := secrets.Scan(ctx, code)
	for _, f := range found {
		// The secret itself is not echoed: the result may be logged.
		sink.add(ruleGitleaks, f.Line, f.Column, fmt.Sprintf("%s (%s)", f.RuleID, f.Description))
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return []string{"secret scan (gitleaks rules) incomplete: time limit reached"}
	default:
		return []string{fmt.Sprintf("secret scan (gitleaks rules) unavailable: %v", err)}
	}
}

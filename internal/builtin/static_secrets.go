package builtin

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/logging"
)

// ruleGitleaks reports credential patterns found by gitleaks' default rule
// set. Unlike the code rules it deliberately looks inside string literals
// and comments: a leaked key is a leak wherever it sits.
var ruleGitleaks = ruleInfo{ID: "SEC001", Severity: sevHigh, CWE: "CWE-798", Issue: "Credential pattern found (gitleaks)"}

var (
	gitleaksOnce     sync.Once
	gitleaksDetector *detect.Detector
	gitleaksErr      error
)

// gitleaks builds its detector once: loading the default configuration
// compiles a few hundred regular expressions and goes through a global viper
// instance, which is neither cheap nor safe to do concurrently. Detection on
// the shared detector is safe: DetectContext only reads the configuration.
func loadGitleaks() (*detect.Detector, error) {
	gitleaksOnce.Do(func() {
		defer func() {
			if p := recover(); p != nil {
				gitleaksErr = fmt.Errorf("gitleaks init panicked: %v", p)
			}
		}()
		// gitleaks logs through its own global logger; the hub must not get
		// its stderr written to by a library on every call.
		logging.Logger = zerolog.Nop()
		gitleaksDetector, gitleaksErr = detect.NewDetectorDefaultConfig()
	})
	return gitleaksDetector, gitleaksErr
}

// scanSecretsGitleaks adds SEC001 findings and returns notes about the scan.
func scanSecretsGitleaks(ctx context.Context, code string, sink *findingSink) (notes []string) {
	defer func() {
		if p := recover(); p != nil {
			notes = append(notes, fmt.Sprintf("secret scan (gitleaks) failed: %v", p))
		}
	}()
	d, err := loadGitleaks()
	if err != nil || d == nil {
		return []string{fmt.Sprintf("secret scan (gitleaks) unavailable: %v", err)}
	}
	if ctx.Err() != nil {
		return []string{"secret scan (gitleaks) skipped: time limit reached"}
	}
	lines := strings.Split(code, "\n")
	for _, f := range d.DetectContext(ctx, detect.Fragment{Raw: code}) {
		line := f.StartLine + 1 // gitleaks counts lines from 0
		col := f.StartColumn
		if line >= 1 && line <= len(lines) && f.Secret != "" {
			if i := strings.Index(lines[line-1], f.Secret); i >= 0 {
				col = i + 1
			}
		}
		if col < 1 {
			col = 1
		}
		// The secret itself is not echoed: the result may be logged.
		sink.add(ruleGitleaks, line, col, fmt.Sprintf("%s (%s)", f.RuleID, f.Description))
	}
	return nil
}

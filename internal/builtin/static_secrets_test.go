package builtin

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/builtin/secretscan"
)

// A SEC001 finding names the rule and what it found, where it is, and
// never the credential.
func TestStaticSecretFinding(t *testing.T) {
	_, h := StaticAnalysis(StaticOptions{})
	const token = "ghp_Yq4mX2Vb9Lk8Rt7Wn3Zp6Hs1Dj5Fc0Ga2Ee4"
	code := "package p\n\n// token: " + token + "\nvar x = 1\n"
	res := h(context.Background(), map[string]any{"code": code, "language": "go"})
	txt := resultText(t, res)
	if strings.Contains(txt, token) || strings.Contains(txt, token[4:20]) {
		t.Fatalf("the result echoes the secret: %s", txt)
	}
	var rep StaticReport
	if err := json.Unmarshal([]byte(txt), &rep); err != nil {
		t.Fatal(err)
	}
	issue := regexp.MustCompile(`^Credential pattern found \(gitleaks\): github-pat \(\S.*\)$`)
	var sec []Finding
	for _, f := range rep.Findings {
		if f.Rule == "SEC001" {
			sec = append(sec, f)
		}
	}
	if len(sec) != 1 || !issue.MatchString(sec[0].Issue) || sec[0].Line != 3 || sec[0].Column != 11 ||
		sec[0].Severity != sevHigh || sec[0].CWE != "CWE-798" {
		t.Errorf("SEC001 findings %+v; want one github-pat at 3:11", sec)
	}
}

func TestScanSecretsNotes(t *testing.T) {
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	cases := []struct {
		name    string
		ctx     context.Context
		scanner *secretscan.Scanner
		note    string // "" for none
		found   int
	}{
		{"scanned", context.Background(), secretscan.Default(), "", 1},
		{"time limit reached before", expired, secretscan.Default(), "skipped: time limit reached", 0},
		{"rules that do not compile", context.Background(), secretscan.New("[[rules]"), "unavailable", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sink findingSink
			notes := scanSecrets(tc.ctx, tc.scanner, "AWS = 'AKIAZ3MSJV5WKQ7TYRXB'\n", &sink)
			if tc.note == "" && len(notes) != 0 || tc.note != "" && (len(notes) != 1 || !strings.Contains(notes[0], tc.note)) {
				t.Errorf("notes %q, want one containing %q", notes, tc.note)
			}
			if len(sink.list) != tc.found {
				t.Errorf("findings %+v, want %d", sink.list, tc.found)
			}
		})
	}
}

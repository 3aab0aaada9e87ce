package origins

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct{ in, wantErr string }{
		{"https://ui.example.com", ""},
		{"http://localhost:3000", ""},
		{"*", "not allowed"},
		{"ftp://x", "not an http or https origin"},
		{"https://x:0", "port"},
		{"https://x/path", "alone"},
		{"HTTPS://x", "alone"},
	} {
		err := Check(tc.in)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("Check(%q) = %v, want %q", tc.in, err, tc.wantErr)
		}
	}
}

package credentials

import (
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/config"
)

const (
	testToken  = "s3cr3t-bearer-T0KEN"
	testAPIKey = "k3y-in-a-header-42"
	testQuery  = "q-s3cr3t-in-url-7"
	testPass   = "pa55w0rd-in-userinfo"
)

// Every credential a spec holds is known to its redactor, and the values
// that are plainly not credentials are left readable.
func TestRedactorKnowsEveryCredentialOfTheSpec(t *testing.T) {
	spec := config.ServerSpec{
		Name:        "all",
		URL:         "https://tok3n-user:" + testPass + "@mcp.example.com/mcp?key=" + testQuery,
		BearerToken: config.Secret(testToken),
		Headers:     map[string]string{"X-Api-Key": testAPIKey, "Accept-Language": "en-GB"},
		Env:         map[string]string{"GITHUB_TOKEN": "ghp_env-t0ken-123"},
	}
	s := New(spec, nil)
	cases := []struct{ in, want string }{
		{"bad token Bearer " + testToken, "bad token Bearer [redacted]"},
		{"key " + testAPIKey + " refused", "key [redacted] refused"},
		{"query key=" + testQuery, "query [redacted]"},
		{"value " + testQuery, "value [redacted]"},
		{"user tok3n-user pass " + testPass, "user [redacted] pass [redacted]"},
		{"env ghp_env-t0ken-123", "env [redacted]"},
		{"language en-GB", "language en-GB"},
		{"server all failed", "server all failed"},
	}
	for _, tc := range cases {
		if got := s.Text(tc.in); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if h := s.Headers(); h["Authorization"] != "Bearer "+testToken || h["X-Api-Key"] != testAPIKey {
		t.Errorf("Headers() = %v, want the bearer token and the configured headers", h)
	}
}

// ReadExcerpt (for the direct path's non-200 answers) redacts a
// credential even when its cut at n splits it.
func TestReadExcerptRedactsACutCredential(t *testing.T) {
	s := New(config.ServerSpec{Name: "x", URL: "http://127.0.0.1:1/mcp", BearerToken: config.Secret(testToken)}, nil)
	body := "  bad token Bearer " + testToken + " and more\n"
	cases := []struct {
		n    int
		want string
	}{
		{len(body), "bad token Bearer [redacted] and more"},
		{len("  bad token Bearer ") + 10, "bad token Bearer [redacted]"},
		{len("  bad token"), "bad token"},
	}
	for _, tc := range cases {
		if got := s.ReadExcerpt(strings.NewReader(body), tc.n); got != tc.want {
			t.Errorf("ReadExcerpt(n=%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

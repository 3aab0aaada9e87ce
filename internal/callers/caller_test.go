package callers_test

import (
	"net/http"
	"testing"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
)

func TestAnonymousKey(t *testing.T) {
	for remote, want := range map[string]string{
		"127.0.0.1:5555":                       "anonymous@127.0.0.1",
		"[::ffff:10.1.2.3]:80":                 "anonymous@10.1.2.3",
		"[2001:db8:1:2:3:4:5:6]:443":           "anonymous@2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff:ffff:ffff:ffff]:1": "anonymous@2001:db8:1:2::/64",
		"[2001:db8:1:3::1]:1":                  "anonymous@2001:db8:1:3::/64",
		"pipe":                                 "anonymous@pipe",
	} {
		if got := callers.AnonymousKey(remote); got != want {
			t.Errorf("callers.AnonymousKey(%q) = %q, want %q", remote, got, want)
		}
	}
}

// TestLimitKeys: what each kind of caller's limits count under.
func TestLimitKeys(t *testing.T) {
	auth := callers.NewAuth([]callers.TokenCaller{{Name: "ci", Token: "tok-ci", Ceiling: autonomy.Full}}, new(autonomy.Full), nil)
	for _, tc := range []struct {
		name, token, remote, want string
	}{
		{"token", "tok-ci", "10.0.0.7:1234", "ci"},
		{"anonymous", "", "10.0.0.7:1234", "anonymous@10.0.0.7"},
		{"anonymous, another port", "", "10.0.0.7:999", "anonymous@10.0.0.7"},
		{"anonymous, another address", "", "10.0.0.8:1234", "anonymous@10.0.0.8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodPost, "/mcp", nil)
			r.RemoteAddr = tc.remote
			if tc.token != "" {
				r.Header.Set("Authorization", "Bearer "+tc.token)
			}
			c, err := auth.Authenticate(r)
			if err != nil {
				t.Fatal(err.Msg)
			}
			if got := c.Key(); got != tc.want {
				t.Errorf("limit key %q, want %q", got, tc.want)
			}
		})
	}
	// A ServiceAccount caller and stdio count under their names.
	for _, name := range []string{"system:serviceaccount:purko:executor", "stdio"} {
		if got := (callers.Caller{Name: name}).Key(); got != name {
			t.Errorf("limit key of %s: %q", name, got)
		}
	}
}

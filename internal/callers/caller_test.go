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

// TestBudgetKey (issue 41): an anonymous caller's budgets are its
// network's (a /24, a /64), what it owns its address's (Key); every other
// caller's budgets count under its name, an admin's too.
func TestBudgetKey(t *testing.T) {
	for _, tc := range []struct {
		remote, key, budget string
	}{
		{"192.0.2.7:4711", "anonymous@192.0.2.7", "anonymous@192.0.2.0/24"},
		{"192.0.2.250:1", "anonymous@192.0.2.250", "anonymous@192.0.2.0/24"},
		{"192.0.3.7:4711", "anonymous@192.0.3.7", "anonymous@192.0.3.0/24"},
		{"[::ffff:192.0.2.9]:80", "anonymous@192.0.2.9", "anonymous@192.0.2.0/24"},
		{"[2001:db8::1]:443", "anonymous@2001:db8::/64", "anonymous@2001:db8::/64"},
		{"[2001:db8::ffff:1]:443", "anonymous@2001:db8::/64", "anonymous@2001:db8::/64"},
		{"[2001:db8:0:1::1]:443", "anonymous@2001:db8:0:1::/64", "anonymous@2001:db8:0:1::/64"},
		{"not-an-address", "anonymous@not-an-address", "anonymous@not-an-address"},
	} {
		c := callers.Anonymous(tc.remote, autonomy.Restricted)
		if got := c.Key(); got != tc.key {
			t.Errorf("Key of %s: %q, want %q", tc.remote, got, tc.key)
		}
		if got := c.BudgetKey(); got != tc.budget {
			t.Errorf("BudgetKey of %s: %q, want %q", tc.remote, got, tc.budget)
		}
		if got := callers.BudgetKeyOf(c.Key()); got != tc.budget {
			t.Errorf("BudgetKeyOf(%q): %q, want %q", c.Key(), got, tc.budget)
		}
		if got := c.Class(); got != callers.ClassAnonymous {
			t.Errorf("class of %s: %v", tc.remote, got)
		}
	}
	local := callers.Anonymous("127.0.0.1:5000", autonomy.Full)
	local.Admin = true // the local user of a laptop hub
	for _, tc := range []struct {
		c      callers.Caller
		budget string
		class  callers.Class
	}{
		{callers.Caller{Name: "ops"}, "ops", callers.ClassAuthenticated},
		{callers.Caller{Name: "anonymous@192.0.2.7"}, "anonymous@192.0.2.7", callers.ClassAuthenticated}, // a token so named is not grouped
		{callers.Caller{Name: "ops", Admin: true}, "ops", callers.ClassAdmin},
		{local, "anonymous@127.0.0.0/24", callers.ClassAdmin},
	} {
		if got := tc.c.BudgetKey(); got != tc.budget || tc.c.Class() != tc.class {
			t.Errorf("%s: budget %q, class %v; want %q, %v", tc.c.Name, got, tc.c.Class(), tc.budget, tc.class)
		}
	}
	if got := callers.BudgetKeyOf("ops"); got != "ops" {
		t.Errorf("BudgetKeyOf a token caller's key: %q", got)
	}
}

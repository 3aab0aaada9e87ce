package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestHTTPSettingsDefaults(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       HTTPSettings
	}{
		{"embedded default", "", HTTPSettings{
			MaxBodyBytes: 4194304, MaxSessions: 10000, MaxSessionsPerCaller: 1000, AnonymousShare: new(25),
			SessionIdleTimeout: Duration(5 * time.Minute), ReadTimeout: Duration(30 * time.Second), ReadHeaderTimeout: Duration(10 * time.Second),
		}},
		{"explicit values kept", "servers: []\nhttp:\n  maxBodyBytes: 1024\n  allowedOrigins: ['https://ui.example.com', 'http://localhost:3000']\n  maxSessions: 50\n  maxSessionsPerCaller: 5\n  anonymousShare: 0\n  sessionIdleTimeout: 10s\n  readTimeout: 1m\n  readHeaderTimeout: 2s\n",
			HTTPSettings{
				MaxBodyBytes: 1024, AllowedOrigins: []string{"https://ui.example.com", "http://localhost:3000"}, MaxSessions: 50, MaxSessionsPerCaller: 5, AnonymousShare: new(0),
				SessionIdleTimeout: Duration(10 * time.Second), ReadTimeout: Duration(time.Minute), ReadHeaderTimeout: Duration(2 * time.Second),
			}},
		// A total below the per-caller default must not fail over a value
		// nobody wrote: the per-caller cap follows the total down.
		{"small total lowers the per-caller default", "servers: []\nhttp: {maxSessions: 200}\n", HTTPSettings{
			MaxBodyBytes: 4194304, MaxSessions: 200, MaxSessionsPerCaller: 200, AnonymousShare: new(25),
			SessionIdleTimeout: Duration(5 * time.Minute), ReadTimeout: Duration(30 * time.Second), ReadHeaderTimeout: Duration(10 * time.Second),
		}},
		{"largest body", "servers: []\nhttp: {maxBodyBytes: 1073741824}\n", HTTPSettings{
			MaxBodyBytes: 1 << 30, MaxSessions: 10000, MaxSessionsPerCaller: 1000, AnonymousShare: new(25),
			SessionIdleTimeout: Duration(5 * time.Minute), ReadTimeout: Duration(30 * time.Second), ReadHeaderTimeout: Duration(10 * time.Second),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c *Config
			var err error
			if tc.yaml == "" {
				c, err = Default()
			} else {
				c, err = Parse("t.yaml", []byte(tc.yaml))
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.HTTP; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("http = %+v\nwant   %+v", got, tc.want)
			}
		})
	}
}

// TestAnonymousShare (issue 41): http.anonymousShare is a percent, 0
// included (anonymous callers get no sessions), left out it is 25; any
// other value is refused with an error naming the field.
func TestAnonymousShare(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, wantErr string
		want                int
	}{
		{"left out", "servers: []\nhttp: {maxSessions: 100}\n", "", 25},
		{"none", "servers: []\nhttp: {anonymousShare: 0}\n", "", 0},
		{"all", "servers: []\nhttp: {anonymousShare: 100}\n", "", 100},
		{"negative", "servers: []\nhttp: {anonymousShare: -1}\n", "http.anonymousShare: -1 is not a percent within 0..100", 0},
		{"over 100", "servers: []\nhttp: {anonymousShare: 101}\n", "http.anonymousShare: 101 is not a percent within 0..100", 0},
		{"not a number", "servers: []\nhttp: {anonymousShare: half}\n", "anonymousShare", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("t.yaml", []byte(tc.yaml))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := *c.HTTP.AnonymousShare; got != tc.want {
				t.Errorf("anonymousShare = %d, want %d", got, tc.want)
			}
		})
	}
}

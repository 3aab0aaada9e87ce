package config

import (
	"reflect"
	"testing"
	"time"
)

func TestHTTPSettingsDefaults(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       HTTPSettings
	}{
		{"embedded default", "", HTTPSettings{
			MaxBodyBytes: 4194304, MaxSessions: 10000, MaxSessionsPerCaller: 1000,
			SessionIdleTimeout: Duration(5 * time.Minute), ReadTimeout: Duration(30 * time.Second), ReadHeaderTimeout: Duration(10 * time.Second),
		}},
		{"explicit values kept", "servers: []\nhttp:\n  maxBodyBytes: 1024\n  allowedOrigins: ['https://ui.example.com', 'http://localhost:3000']\n  maxSessions: 50\n  maxSessionsPerCaller: 5\n  sessionIdleTimeout: 10s\n  readTimeout: 1m\n  readHeaderTimeout: 2s\n",
			HTTPSettings{
				MaxBodyBytes: 1024, AllowedOrigins: []string{"https://ui.example.com", "http://localhost:3000"}, MaxSessions: 50, MaxSessionsPerCaller: 5,
				SessionIdleTimeout: Duration(10 * time.Second), ReadTimeout: Duration(time.Minute), ReadHeaderTimeout: Duration(2 * time.Second),
			}},
		// A total below the per-caller default must not fail over a value
		// nobody wrote: the per-caller cap follows the total down.
		{"small total lowers the per-caller default", "servers: []\nhttp: {maxSessions: 200}\n", HTTPSettings{
			MaxBodyBytes: 4194304, MaxSessions: 200, MaxSessionsPerCaller: 200,
			SessionIdleTimeout: Duration(5 * time.Minute), ReadTimeout: Duration(30 * time.Second), ReadHeaderTimeout: Duration(10 * time.Second),
		}},
		{"largest body", "servers: []\nhttp: {maxBodyBytes: 1073741824}\n", HTTPSettings{
			MaxBodyBytes: 1 << 30, MaxSessions: 10000, MaxSessionsPerCaller: 1000,
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

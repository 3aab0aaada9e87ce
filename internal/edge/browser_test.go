package edge

import "testing"

func TestSameOrigin(t *testing.T) {
	for _, tc := range []struct {
		origin, host string
		want         bool
	}{
		{"http://127.0.0.1:8080", "127.0.0.1:8080", true},
		{"https://hub.example", "hub.example", true},
		{"https://hub.example", "hub.example:443", true},
		{"http://hub.example:80", "hub.example", true},
		{"HTTP://Hub.Example:8080", "hub.example:8080", true},
		{"http://[::1]:8080", "[::1]:8080", true},
		{"http://localhost:8080", "127.0.0.1:8080", false},
		{"http://localhost:3000", "localhost:8080", false},
		{"https://hub.example", "hub.example:80", false},
		{"http://hub.example.evil:8080", "hub.example:8080", false},
		{"null", "hub.example", false},
		{"file://", "hub.example", false},
		{"chrome-extension://abc", "abc", false},
	} {
		if got := sameOrigin(tc.origin, tc.host); got != tc.want {
			t.Errorf("sameOrigin(%q, %q) = %v, want %v", tc.origin, tc.host, got, tc.want)
		}
	}
}

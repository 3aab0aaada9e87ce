package autonomy

import (
	"strings"
	"testing"
)

func TestParseLevel(t *testing.T) {
	tests := []struct {
		in      string
		want    Level
		wantErr bool
	}{
		{"manual", Manual, false},
		{"restricted", Restricted, false},
		{"supervised", Supervised, false},
		{"full", Full, false},
		{"shu", Restricted, false},
		{"ha", Supervised, false},
		{"ri", Full, false},
		{"FULL", Full, false},
		{"Restricted", Restricted, false},
		{"SHU", Restricted, false},
		{"  ha\t", Supervised, false},
		{"\nmanual ", Manual, false},
		{"", Manual, true},
		{"   ", Manual, true},
		{"godmode", Manual, true},
		{"fullish", Manual, true},
		{"shu-ha", Manual, true},
		{"0", Manual, true},
		{"full\x00", Manual, true},
	}
	for _, tt := range tests {
		got, err := ParseLevel(tt.in)
		if (err != nil) != tt.wantErr {
			t.Fatalf("ParseLevel(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
		}
		if err != nil {
			msg := err.Error()
			for _, must := range []string{`"` + strings.ReplaceAll(tt.in, "\x00", `\x00`) + `"`, "manual", "restricted", "supervised", "full", "shu", "ha", "ri"} {
				if !strings.Contains(msg, must) {
					t.Errorf("ParseLevel(%q) error %q does not mention %q", tt.in, msg, must)
				}
			}
			continue
		}
		if got != tt.want {
			t.Errorf("ParseLevel(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestLevelStringRoundTrip(t *testing.T) {
	tests := []struct {
		l    Level
		want string
	}{
		{Manual, "manual"},
		{Restricted, "restricted"},
		{Supervised, "supervised"},
		{Full, "full"},
		{Level(-1), "Level(-1)"},
		{Level(4), "Level(4)"},
	}
	for _, tt := range tests {
		if got := tt.l.String(); got != tt.want {
			t.Errorf("Level(%d).String() = %q, want %q", int(tt.l), got, tt.want)
		}
		if tt.l < Manual || tt.l > Full {
			if _, err := ParseLevel(tt.want); err == nil {
				t.Errorf("ParseLevel(%q) accepted an out-of-range name", tt.want)
			}
			continue
		}
		if back, err := ParseLevel(tt.want); err != nil || back != tt.l {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", tt.want, back, err, tt.l)
		}
	}
}

func TestLevelOrder(t *testing.T) {
	if !(Manual < Restricted && Restricted < Supervised && Supervised < Full) {
		t.Fatal("levels are not ordered Manual < Restricted < Supervised < Full")
	}
	var zero Level
	if zero != Manual {
		t.Fatal("the zero Level must be Manual")
	}
}

func TestLower(t *testing.T) {
	tests := []struct{ a, b, want Level }{
		{Full, Restricted, Restricted},
		{Restricted, Full, Restricted},
		{Supervised, Supervised, Supervised},
		{Manual, Full, Manual},
		{Full, Manual, Manual},
		{Supervised, Full, Supervised},
		{Full, Full, Full},
	}
	for _, tt := range tests {
		if got := Lower(tt.a, tt.b); got != tt.want {
			t.Errorf("Lower(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

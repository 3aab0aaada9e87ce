package findtools

import (
	"slices"
	"strconv"
	"testing"
)

// TestFoundSetsBounded: a session keeps its newest maxFoundPerSession
// tools, at most maxFoundSessions sessions are kept, and a session's set
// goes with it.
func TestFoundSetsBounded(t *testing.T) {
	names := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = prefix + strconv.Itoa(i)
		}
		return out
	}
	tests := []struct {
		name     string
		found    [][]string // remembered one after the other
		want     int        // found tools then kept
		wantNew  []bool
		wantLast string
	}{
		{"none", nil, 0, nil, ""},
		{"some", [][]string{{"a", "b"}}, 2, []bool{true}, "b"},
		{"again", [][]string{{"a", "b"}, {"b", "a"}}, 2, []bool{true, false}, "b"},
		{"more", [][]string{{"a"}, {"a", "c"}}, 2, []bool{true, true}, "c"},
		{"over the bound", [][]string{names("t", maxFoundPerSession), {"last"}}, maxFoundPerSession, []bool{true, true}, "last"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := New(1, nil)
			for i, batch := range tt.found {
				if got := f.remember("s1", batch); got != tt.wantNew[i] {
					t.Errorf("remember #%d: new %v, want %v", i, got, tt.wantNew[i])
				}
			}
			got := f.Found("s1")
			if len(got) != tt.want || (tt.want > 0 && got[len(got)-1] != tt.wantLast) {
				t.Fatalf("found %d (last %v), want %d (last %s)", len(got), got[max(len(got)-1, 0):], tt.want, tt.wantLast)
			}
			if tt.want == maxFoundPerSession && slices.Contains(got, "t0") {
				t.Error("the oldest found tool was kept over the bound")
			}
			f.Forget("s1")
			if got := f.Found("s1"); len(got) != 0 {
				t.Errorf("after forget: %v", got)
			}
			if f.remember("", []string{"x"}) || len(f.Found("")) != 0 {
				t.Error("a request without a session kept what it found")
			}
		})
	}
	f := New(1, nil)
	for i := range maxFoundSessions + 10 {
		f.remember("s"+strconv.Itoa(i), []string{"x"})
	}
	if n := f.found.Len(); n != maxFoundSessions {
		t.Errorf("%d sessions kept, want %d", n, maxFoundSessions)
	}
	if New(0, nil) != nil {
		t.Error("above 0 must be off")
	}
}

package main

import (
	"bytes"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/rs/zerolog"
)

// keepMemoryLimit restores the test process's memory limit and clears the
// variables setMemoryLimit reads.
func keepMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	for _, k := range []string{"GOMEMLIMIT", "AUTOMEMLIMIT"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func TestSetMemoryLimit(t *testing.T) {
	cases := []struct {
		name     string
		env      map[string]string
		provider memlimit.Provider
		want     int64
		log      string
	}{
		{"90% of the container's limit", nil, memlimit.Limit(1000 << 20), 900 << 20, `"MiB":900`},
		{"no container limit", nil, func() (uint64, error) { return 0, memlimit.ErrNoLimit }, math.MaxInt64, "the container has no memory limit"},
		{"not in a container", nil, func() (uint64, error) { return 0, memlimit.ErrCgroupsNotSupported }, -1, "not in a container"},
		{"AUTOMEMLIMIT ratio", map[string]string{"AUTOMEMLIMIT": "0.5"}, memlimit.Limit(512 << 20), 256 << 20, `"MiB":256`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			keepMemoryLimit(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			before := debug.SetMemoryLimit(-1)
			var buf bytes.Buffer
			got := setMemoryLimit(tc.provider, zerolog.New(&buf))
			want := tc.want
			if want == -1 {
				want = before // unchanged
			}
			if got != want || debug.SetMemoryLimit(-1) != want {
				t.Errorf("limit %d (runtime %d), want %d", got, debug.SetMemoryLimit(-1), want)
			}
			if !strings.Contains(buf.String(), tc.log) {
				t.Errorf("log %q does not say %q", buf.String(), tc.log)
			}
		})
	}
}

// TestSetMemoryLimitLeavesGOMEMLIMIT: an operator's GOMEMLIMIT wins; the
// container's limit is not even read.
func TestSetMemoryLimitLeavesGOMEMLIMIT(t *testing.T) {
	keepMemoryLimit(t)
	t.Setenv("GOMEMLIMIT", "300MiB")
	var buf bytes.Buffer
	setMemoryLimit(func() (uint64, error) {
		t.Error("the provider was asked though GOMEMLIMIT is set")
		return 1 << 30, nil
	}, zerolog.New(&buf))
	if !strings.Contains(buf.String(), `"GOMEMLIMIT":"300MiB"`) {
		t.Errorf("log %q does not name GOMEMLIMIT", buf.String())
	}
}

package main

import (
	"runtime/debug"
	"testing"
)

// TestResolveBuild covers the builds `make build` does not do: plain go
// build, go install of a tag, GoReleaser's unprefixed version, and a
// version from before semver tags. Each must still print a semver.
func TestResolveBuild(t *testing.T) {
	vcs := func(rev, tm string, modified bool) []debug.BuildSetting {
		m := "false"
		if modified {
			m = "true"
		}
		return []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: tm}, {Key: "vcs.modified", Value: m}}
	}
	for _, tc := range []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  string
	}{
		{"release", "v0.1.0", "1a2b3c4", "2026-12-01", nil, "v0.1.0 (commit 1a2b3c4, built 2026-12-01)"},
		{"goreleaser without v", "0.1.0", "1a2b3c4", "2026-12-01", nil, "v0.1.0 (commit 1a2b3c4, built 2026-12-01)"},
		{"snapshot", "v0.1.1-dev+1a2b3c4.dirty", "1a2b3c4", "2026-12-01", nil, "v0.1.1-dev+1a2b3c4.dirty (commit 1a2b3c4, built 2026-12-01)"},
		{"old git describe hash", "ec11610-dirty", "ec11610", "", nil, "v0.0.0-dev+ec11610-dirty (commit ec11610)"},
		{"nothing at all", "", "", "", nil, "v0.0.0-dev (commit unknown)"},
		{"dev default", "dev", "", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "v0.0.0-dev (commit unknown)"},
		{"go install of a tag", "", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}}, "v0.1.0 (commit unknown)"},
		{"go build with vcs stamping", "", "", "", &debug.BuildInfo{
			Main:     debug.Module{Version: "v0.1.1-0.20261201093000-1a2b3c4d5e6f+dirty"},
			Settings: vcs("1a2b3c4d5e6f7a8b", "2026-12-01T09:30:00Z", true),
		}, "v0.1.1-0.20261201093000-1a2b3c4d5e6f+dirty (commit 1a2b3c4-dirty, built 2026-12-01)"},
		{"vcs without a module version", "", "", "", &debug.BuildInfo{
			Main:     debug.Module{Version: "(devel)"},
			Settings: vcs("1a2b3c4d5e6f7a8b", "2026-12-01T09:30:00Z", false),
		}, "v0.0.0-dev+1a2b3c4 (commit 1a2b3c4, built 2026-12-01)"},
	} {
		b := resolveBuild(tc.version, tc.commit, tc.date, tc.bi)
		if got := b.String(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
		if !semverRE.MatchString(b.version) {
			t.Errorf("%s: version %q is not semver", tc.name, b.version)
		}
	}
}

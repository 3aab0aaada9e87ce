package main

import (
	"fmt"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
)

// version, commit and date are set at link time by the Makefile (from
// hack/version.sh), the Dockerfile and .goreleaser.yaml:
//
//	-ldflags "-X main.version=v0.1.0 -X main.commit=1a2b3c4 -X main.date=2026-12-01"
//
// A build without them (plain `go build`, `go install ...@v0.1.0`) falls back
// to what the Go toolchain stamped into the binary (runtime/debug.BuildInfo),
// so that the version is always semver-shaped and says which commit it is.
var (
	version = ""
	commit  = ""
	date    = ""
)

// devVersion is the version of a build that knows none: semver-shaped, and
// lower than any release.
const devVersion = "v0.0.0-dev"

// buildInfo is what `mcp-hub version` prints; its version is also the one of
// the "listening on" banner, initialize's serverInfo, the clientInfo sent
// upstream and the service.version of traces.
type buildInfo struct {
	version string // semver with a leading v, e.g. v0.1.0 or v0.1.1-dev+1a2b3c4
	commit  string // short commit hash, "unknown" when not known
	date    string // build date (YYYY-MM-DD), empty when not known
}

// String is the version line's text after "mcp-hub ".
func (b buildInfo) String() string {
	if b.date == "" {
		return fmt.Sprintf("%s (commit %s)", b.version, b.commit)
	}
	return fmt.Sprintf("%s (commit %s, built %s)", b.version, b.commit, b.date)
}

// currentBuild is resolved once: the link-time values and BuildInfo do not
// change while the process runs.
var currentBuild = sync.OnceValue(func() buildInfo {
	bi, _ := debug.ReadBuildInfo()
	return resolveBuild(version, commit, date, bi)
})

// hubVersion is the semver the hub announces (banner, serverInfo, traces).
func hubVersion() string { return currentBuild().version }

// semverRE is semver 2.0.0 with the leading v Go and git tags use.
var semverRE = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// notMetaRE matches what semver build metadata may not hold.
var notMetaRE = regexp.MustCompile(`[^0-9A-Za-z-.]+`)

// resolveBuild prefers the link-time values and fills what they leave empty
// from bi (nil when the binary carries no build info). A version that is not
// semver (an old `git describe` hash, "dev") is replaced by devVersion with
// the value kept as build metadata, so that tools comparing versions never
// choke on it.
func resolveBuild(version, commit, date string, bi *debug.BuildInfo) buildInfo {
	var vcsRev, vcsTime string
	var vcsModified bool
	mainVersion := ""
	if bi != nil {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			mainVersion = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				vcsRev = s.Value
			case "vcs.time":
				vcsTime = s.Value
			case "vcs.modified":
				vcsModified = s.Value == "true"
			}
		}
	}
	b := buildInfo{version: version, commit: commit, date: date}
	if b.commit == "" && vcsRev != "" {
		b.commit = vcsRev
		if len(b.commit) > 7 {
			b.commit = b.commit[:7]
		}
		if vcsModified {
			b.commit += "-dirty"
		}
	}
	if b.commit == "" {
		b.commit = "unknown"
	}
	if b.date == "" && len(vcsTime) >= len("2006-01-02") {
		b.date = vcsTime[:len("2006-01-02")] // the commit's date: the best a plain go build knows
	}
	if b.version == "" {
		b.version = mainVersion
	}
	if b.version != "" && !strings.HasPrefix(b.version, "v") && semverRE.MatchString("v"+b.version) {
		b.version = "v" + b.version // GoReleaser's {{.Version}} has no v
	}
	if !semverRE.MatchString(b.version) {
		meta := b.version
		if meta == "" || meta == "dev" {
			meta = strings.TrimSuffix(b.commit, "-dirty")
		}
		b.version = devVersion
		if meta = strings.Trim(notMetaRE.ReplaceAllString(meta, "-"), ".-"); meta != "" && meta != "unknown" {
			b.version += "+" + meta
		}
	}
	return b
}

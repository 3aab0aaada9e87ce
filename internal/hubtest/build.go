// Package hubtest is the one harness with which mcp-hub's integration tests
// and its benchmark run real processes: it builds the hub binary, starts it
// (or a reference server) on a free 127.0.0.1 port, waits until it is ready,
// keeps its output for failure messages, and stops it by PID. It exists so
// that every test package starts, waits for and stops processes the same
// way, instead of each carrying its own copy of that plumbing, with its own
// bugs.
//
// Only tests and the benchmark (test/bench) import it; the hub itself never
// does. Two layers share one implementation: functions that take a
// context and return an error (Build, Launch, LaunchHub, LaunchServer,
// Poll), which the benchmark binary uses, and functions that take a
// testing.TB, fail the test on error and stop what they started at
// t.Cleanup (HubBinary, StartProcess, StartHub, StartServer, StartUpstream,
// Eventually), which tests use.
//
// Every child runs in a process group of its own, so that stopping it also
// stops what it started, and (on Linux) dies with the process that started
// it. Nothing here listens on anything but 127.0.0.1.
package hubtest

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// module is the module path of the repository whose hub is built.
const module = "github.com/purko-io/mcp-hub"

// RepoRoot returns the repository root: the nearest directory at or above
// the working directory whose go.mod declares this module. go test runs a
// package's tests in its source directory and `go run ./test/bench` runs in
// the caller's, so both find it without being told.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if modulePath(filepath.Join(dir, "go.mod")) == module {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of %s at or above the working directory", module)
		}
		dir = parent
	}
}

// modulePath reads the module line of a go.mod; "" when there is none.
func modulePath(gomod string) string {
	f, err := os.Open(gomod)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// Build builds cmd/mcp-hub and returns the binary's path.
//
// The binary lives at a fixed path in the user's cache directory, one per
// checkout, and `go build -o` onto it relinks only when the build's inputs
// changed: the go command compares the build ID written into the existing
// binary with the one the current sources, flags and toolchain give. So the
// cache is keyed by nothing but the build itself, a stale binary is never
// reused, and an unchanged one costs the go command's check (about a second)
// instead of a link (ten or more on a small machine). A file lock makes the
// test packages that `go test ./...` runs at once build it one at a time.
func Build(ctx context.Context) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	dir, err := buildDir(root)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "mcp-hub")
	if err := goBuild(ctx, root, "./cmd/mcp-hub", bin, versionFlags(ctx, root)...); err != nil {
		return "", err
	}
	return bin, nil
}

// HubBinary is Build for a test: it fails t when the hub does not build.
func HubBinary(t testing.TB) string {
	t.Helper()
	bin, err := Build(context.Background())
	if err != nil {
		t.Fatalf("hubtest: %v", err)
	}
	return bin
}

// versionFlags stamp the tests' hub with the version and commit that
// `make build` gives it (hack/version.sh, git rev-parse), so that tests see
// the version a developer's build prints. The build date is left out: it
// would relink the binary every day for nothing. Outside a git checkout
// there is nothing to stamp and the hub falls back to its own default.
func versionFlags(ctx context.Context, root string) []string {
	v, err := exec.CommandContext(ctx, filepath.Join(root, "hack", "version.sh")).Output()
	if err != nil {
		return nil
	}
	c := exec.CommandContext(ctx, "git", "rev-parse", "--short=7", "HEAD")
	c.Dir = root
	h, err := c.Output()
	if err != nil {
		return nil
	}
	return []string{"-ldflags", fmt.Sprintf("-X main.version=%s -X main.commit=%s",
		strings.TrimSpace(string(v)), strings.TrimSpace(string(h)))}
}

// buildDir is the cache directory of the checkout at root, created when
// missing. Each checkout gets its own, so that two checkouts do not relink
// one binary back and forth.
func buildDir(root string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir() // no HOME: a cache that lasts as long as /tmp
	}
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(base, "mcp-hub", "hubtest", hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("hub binary cache: %w", err)
	}
	return dir, nil
}

// goBuild runs `go build -o out pkg` in moduleDir while holding an
// exclusive lock on out+".lock".
func goBuild(ctx context.Context, moduleDir, pkg, out string, flags ...string) error {
	unlock, err := lockFile(out + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	cmd := exec.CommandContext(ctx, "go", append(append([]string{"build"}, flags...), "-o", out, pkg)...)
	cmd.Dir = moduleDir
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s in %s: %w\n%s", pkg, moduleDir, err, output)
	}
	return nil
}

// lockFile takes an exclusive flock on path (created when missing) and
// returns its release. The lock goes with the process, so a test killed
// mid-build leaves no stale lock behind.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("build lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("build lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

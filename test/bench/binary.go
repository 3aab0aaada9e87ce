package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// Benchmark 9: what the hub weighs. The release binary is built with the
// Makefile's release flags (-trimpath, -ldflags '-s -w': no symbol table,
// no DWARF) into the run's scratch directory, and its size read; `go list
// -deps ./cmd/mcp-hub` counts the packages a cold build compiles, the
// standard library's included.

const (
	targetBinaryMB   = 40.0
	targetBinaryPkgs = 700
)

// releaseFlags are the Makefile's build flags without its -X stamps,
// which add a few bytes of strings.
var releaseFlags = []string{"-trimpath", "-ldflags", "-s -w"}

// BinaryBench is benchmark 9.
type BinaryBench struct {
	Flags    string  `json:"flags"`
	Bytes    int64   `json:"bytes"`
	MB       float64 `json:"mb"` // Bytes / 2^20
	BuildMs  float64 `json:"buildMs"`
	Packages int     `json:"packages"`       // go list -deps ./cmd/mcp-hub
	NonStd   int     `json:"nonStdPackages"` // of them, outside the standard library
}

func (e *benchEnv) runBinary(ctx context.Context) (*BinaryBench, error) {
	root, err := hubtest.RepoRoot()
	if err != nil {
		return nil, err
	}
	out := &BinaryBench{Flags: strings.Join([]string{releaseFlags[0], releaseFlags[1], "'" + releaseFlags[2] + "'"}, " ")}
	bin := filepath.Join(e.tmp, "mcp-hub-release")
	e.progress("binary: go build %s ./cmd/mcp-hub", out.Flags)
	t0 := time.Now()
	if _, err := goCmd(ctx, root, append(append([]string{"build"}, releaseFlags...), "-o", bin, "./cmd/mcp-hub")...); err != nil {
		return nil, err
	}
	out.BuildMs = msSince(t0)
	st, err := os.Stat(bin)
	if err != nil {
		return nil, fmt.Errorf("the release binary: %w", err)
	}
	out.Bytes, out.MB = st.Size(), float64(st.Size())/(1<<20)
	list, err := goCmd(ctx, root, "list", "-deps", "-f", "{{if .Standard}}std{{else}}{{.ImportPath}}{{end}}", "./cmd/mcp-hub")
	if err != nil {
		return nil, err
	}
	for line := range strings.SplitSeq(strings.TrimSpace(list), "\n") {
		out.Packages++
		if line != "std" {
			out.NonStd++
		}
	}
	return out, nil
}

// goCmd runs the go command in dir and returns its stdout.
func goCmd(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(stdout), nil
}

func (b *BinaryBench) verdicts() []Verdict {
	return []Verdict{
		judge("binary", "release binary size", b.MB, "<=", targetBinaryMB, " MB"),
		judge("binary", "packages a cold build compiles (go list -deps)", float64(b.Packages), "<=", targetBinaryPkgs, ""),
	}
}

func (b *BinaryBench) writeTable(w io.Writer) {
	fmt.Fprintf(w, "\n[9] binary: go build %s ./cmd/mcp-hub\n", b.Flags)
	fmt.Fprintf(w, "size %.1f MB (%d bytes), built in %.1f s; go list -deps: %d packages, %d outside the standard library\n",
		b.MB, b.Bytes, b.BuildMs/1000, b.Packages, b.NonStd)
}

func (b *BinaryBench) markdownLine() string {
	return fmt.Sprintf("binary: %.1f MB built with `%s`; `go list -deps ./cmd/mcp-hub`: %d packages (%d outside the standard library)",
		b.MB, b.Flags, b.Packages, b.NonStd)
}

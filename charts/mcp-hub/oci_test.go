package chart_test

import (
	"bytes"
	"io"
	"log"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// TestChartAsOCIArtifact: the chart goes out as the release workflow
// sends it, `helm package` then `helm push` to an OCI registry (here
// go-containerregistry's, in memory, on loopback), and comes back whole:
// `helm show chart` and `helm template` read it from the registry, at the
// version pushed, with the image of its appVersion.
func TestChartAsOCIArtifact(t *testing.T) {
	h := helm(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0)))}
	go func() { _ = srv.Serve(ln) }() // stopped by Close below
	t.Cleanup(func() { _ = srv.Close() })
	repo := "oci://" + ln.Addr().String() + "/charts"

	dir := t.TempDir()
	env := []string{"HELM_CONFIG_HOME=" + filepath.Join(dir, "config"), "HELM_CACHE_HOME=" + filepath.Join(dir, "cache"),
		"HELM_DATA_HOME=" + filepath.Join(dir, "data"), "HELM_REGISTRY_CONFIG=" + filepath.Join(dir, "registry.json")}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(h, args...)
		cmd.Env = append(cmd.Environ(), env...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
		}
		return out.String() + errb.String()
	}

	const version = "0.9.1-rc.1"
	run("package", ".", "--version", version, "--app-version", version, "-d", dir)
	pushed := run("push", filepath.Join(dir, "mcp-hub-"+version+".tgz"), repo, "--plain-http")
	if !strings.Contains(pushed, "Digest: sha256:") {
		t.Fatalf("helm push said no digest:\n%s", pushed)
	}
	meta := run("show", "chart", repo+"/mcp-hub", "--version", version, "--plain-http")
	for _, want := range []string{"name: mcp-hub", "version: " + version, "appVersion: " + version} {
		if !strings.Contains(meta, want) {
			t.Errorf("chart read back from the registry lacks %q:\n%s", want, meta)
		}
	}
	manifests := run("template", "hub", repo+"/mcp-hub", "--version", version, "--plain-http")
	if !strings.Contains(manifests, `image: "ghcr.io/purko-io/mcp-hub:`+version+`"`) {
		t.Errorf("the chart pulled from the registry does not run the image of its appVersion %s", version)
	}
	// A version never pushed is not there: the registry answers, it does
	// not echo.
	cmd := exec.Command(h, "show", "chart", repo+"/mcp-hub", "--version", "0.0.0-absent", "--plain-http")
	cmd.Env = append(cmd.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("helm show chart of a version never pushed succeeded:\n%s", out)
	}
}

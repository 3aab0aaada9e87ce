package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestTracingSettingsTheHubCannotHonourStopStart: an OTEL_* setting the hub
// cannot honour fails start-up with the variable's name, rather than a hub
// that silently exports nothing.
func TestTracingSettingsTheHubCannotHonourStopStart(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"OTEL_TRACES_EXPORTER=zipkin"}, `OTEL_TRACES_EXPORTER: "zipkin"`},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, `OTEL_EXPORTER_OTLP_PROTOCOL: "grpc"`},
	} {
		cmd := exec.Command(hubBin, "serve", "--listen", "127.0.0.1:0")
		cmd.Env = append(cmd.Environ(), tc.env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if exitCode(err) != 1 || !strings.Contains(stderr.String(), "tracing: "+tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", tc.env, exitCode(err), stderr.String(), tc.want)
		}
	}
}

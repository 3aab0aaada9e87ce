package stdiochild

import (
	"context"
	"strings"
	"testing"
)

// A child sees its own env and PATH, not the hub's secrets.
func TestChildEnvIsMinimal(t *testing.T) {
	t.Setenv("MCPHUB_SECRET_FOR_TEST", "hunter2")
	cmd, err := Command(context.Background(), "env", []string{"OWN=1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Join(cmd.Env, "\n")
	if strings.Contains(env, "hunter2") || !strings.Contains(env, "OWN=1") || !strings.Contains(env, "PATH=") {
		t.Fatalf("child env = %q", env)
	}
}

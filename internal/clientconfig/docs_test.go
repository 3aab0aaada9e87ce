package clientconfig

import (
	"os"
	"strings"
	"testing"
)

// docs/connect.md shows each client's entry for a hub that takes a token:
// they are what Plan writes.
func TestDocsShowWhatPlanWrites(t *testing.T) {
	doc, err := os.ReadFile("../../docs/connect.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, client := range Clients() {
		ch, err := Plan(client, Hub{URL: "http://127.0.0.1:8080/mcp", Token: "<token>"}, Env{Home: "~", GOOS: "linux"})
		if err != nil {
			t.Fatal(err)
		}
		lang := "json"
		if client == "codex" {
			lang = "toml"
		}
		if block := "```" + lang + "\n" + ch.Snippet + "```\n"; !strings.Contains(string(doc), block) {
			t.Errorf("docs/connect.md lacks %s's entry as written:\n%s", client, block)
		}
	}
}

package pinning

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// v1Sum is the digest as digest version 1 computed it: the title, the
// description, the schemas and the annotations, in that order.
func v1Sum(t *testing.T, tool mcp.Tool) string {
	t.Helper()
	d := defOf(t, tool)
	b, err := json.Marshal(struct {
		Title        string          `json:"title,omitempty"`
		Description  string          `json:"description,omitempty"`
		InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
		OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
		Annotations  json.RawMessage `json:"annotations,omitempty"`
	}{d.Title, d.Description, d.InputSchema, d.OutputSchema, d.Annotations})
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// withMeta returns tool with _meta, icons and execution.
func withMeta(tool mcp.Tool, ui string) mcp.Tool {
	tool.Meta = &mcp.Meta{AdditionalFields: map[string]any{"ui": map[string]any{"resourceUri": ui}}}
	tool.Icons = []mcp.Icon{{Src: "https://example.com/icon.png"}}
	tool.Execution = &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional}
	return tool
}

// TestEveryMemberIsPinned: a change to any member of a definition changes
// its digest and is named in the diff; a definition without the members
// version 1 left out has the digest it had then.
func TestEveryMemberIsPinned(t *testing.T) {
	base := rawTool(t, "get", "Get a file", `{"type":"object"}`)
	if got, want := defOf(t, base).Sum(), v1Sum(t, base); got != want {
		t.Fatalf("a definition without _meta, icons or execution: digest %s, was %s in version 1", got, want)
	}
	full := withMeta(base, "ui://widget/a.html")
	if defOf(t, full).Sum() == v1Sum(t, full) || defOf(t, full).Legacy().Sum() != v1Sum(t, full) {
		t.Fatal("the digest leaves out _meta, icons or execution, or Legacy is not version 1's")
	}
	for _, c := range []struct {
		name   string
		change func(mcp.Tool) mcp.Tool
		diff   string
	}{
		{"_meta", func(x mcp.Tool) mcp.Tool { return withMeta(x, "ui://widget/b.html") }, "_meta.ui:"},
		{"icons", func(x mcp.Tool) mcp.Tool { x.Icons = []mcp.Icon{{Src: "https://evil.example/i.png"}}; return x }, "icons changed"},
		{"execution", func(x mcp.Tool) mcp.Tool {
			x.Execution = &mcp.ToolExecution{TaskSupport: mcp.TaskSupportRequired}
			return x
		}, "execution.taskSupport:"},
		{"defer_loading", func(x mcp.Tool) mcp.Tool { x.DeferLoading = true; return x }, "extra.defer_loading:"},
		{"outputSchema", func(x mcp.Tool) mcp.Tool {
			x.RawOutputSchema = json.RawMessage(`{"type":"object"}`)
			return x
		}, "outputSchema"},
		{"annotations", func(x mcp.Tool) mcp.Tool { x.Annotations.OpenWorldHint = mcp.ToBoolPtr(true); return x }, "annotations.openWorldHint:"},
		{"title", func(x mcp.Tool) mcp.Tool { x.Title = "Get"; return x }, "title changed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			old, cur := defOf(t, full), defOf(t, c.change(full))
			if old.Sum() == cur.Sum() {
				t.Fatal("the digest did not change")
			}
			if d := Diff(old, cur); !strings.Contains(d, c.diff) {
				t.Errorf("diff %q lacks %q", d, c.diff)
			}
		})
	}
}

// writeV1Pins writes a pins file as a hub of digest version 1 wrote it.
func writeV1Pins(t *testing.T, path string, pins ...Pin) {
	t.Helper()
	for i := range pins {
		pins[i].Version = 0
		pins[i].Definition = pins[i].Definition.Legacy()
		pins[i].SHA256 = pins[i].Definition.Sum()
	}
	b, err := json.Marshal(pinSet{Version: formatVersion, Pins: pins})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeFromDigestVersion1: pins written before the digest covered
// every member are upgraded where the server offers what they pinned,
// without a report, keeping when they were first seen and their approval;
// a definition that changed in what they pinned is still reported, and a
// change of _meta after the upgrade is too.
func TestUpgradeFromDigestVersion1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "pins.json")
	plain := rawTool(t, "plain", "Plain", `{"type":"object"}`)
	app := withMeta(rawTool(t, "app", "Shows a widget", `{"type":"object"}`), "ui://widget/a.html")
	changed := rawTool(t, "changed", "Changed", `{"type":"object"}`)
	then := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pin := func(tool mcp.Tool, approved string) Pin {
		p := NewPin(Key{Server: "s", Tool: tool.Name}, defOf(t, tool), then)
		p.Approved = approved
		return p
	}
	writeV1Pins(t, path, pin(plain, ""), pin(app, "api:admin"), pin(changed, ""))
	store, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := New(Enforce, store, nil)
	now := []mcp.Tool{plain, app, rawTool(t, "changed", "Changed. Also leak.", `{"type":"object"}`)}
	// Screening's approval holds before the upgrade is written, too.
	if !p.Approved(Key{Server: "s", Tool: "app"}, defOf(t, app)) {
		t.Error("an approved pin of version 1 does not approve the definition it pinned")
	}
	ch, err := p.Check(ctx, "s", now)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch) != 1 || ch["changed"].Diff == "" || strings.Contains(ch["changed"].Diff, "_meta") {
		t.Fatalf("changes after the upgrade = %+v; want only the one that changed, diffed in what was pinned", ch)
	}
	reopened, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []mcp.Tool{plain, app} {
		got, _ := reopened.Get(Key{Server: "s", Tool: tool.Name})
		d := defOf(t, tool)
		meta, _ := canonical(got.Definition.Meta) // the file is indented
		if got.Version != DigestVersion || got.SHA256 != d.Sum() || !got.FirstSeen.Equal(then) || string(meta) != string(d.Meta) {
			t.Errorf("%s: upgraded pin: version %d, digest %s (want %s), first seen %s, _meta %s", tool.Name, got.Version, got.SHA256, d.Sum(), got.FirstSeen, meta)
		}
	}
	if got, _ := reopened.Get(Key{Server: "s", Tool: "app"}); got.Approved != "api:admin" {
		t.Errorf("the upgrade lost the approval: %+v", got)
	}
	if got, _ := reopened.Get(Key{Server: "s", Tool: "changed"}); got.Version != 0 {
		t.Errorf("a changed tool's pin was upgraded: %+v", got)
	}
	// Now _meta is pinned.
	now[1] = withMeta(app, "ui://widget/evil.html")
	ch, _ = p.Check(ctx, "s", now)
	if c, ok := ch["app"]; !ok || !strings.Contains(c.Diff, "_meta.ui") {
		t.Errorf("a _meta change after the upgrade = %+v", ch)
	}
}

// TestUpgradeLeavesAnApprovalAlone: an upgrade that another replica's
// approval overtook does not put the old definition back.
func TestUpgradeLeavesAnApprovalAlone(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "pins.json")
	app := withMeta(rawTool(t, "app", "Shows a widget", `{"type":"object"}`), "ui://widget/a.html")
	k := Key{Server: "s", Tool: "app"}
	writeV1Pins(t, path, NewPin(k, defOf(t, app), time.Now()))
	store, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := store.Get(k)
	up := old.Upgraded(defOf(t, app))
	approved := NewPin(k, defOf(t, rawTool(t, "app", "Shows another widget", `{"type":"object"}`)), time.Now())
	approved.Approved = "api"
	if err := store.Replace(ctx, approved); err != nil {
		t.Fatal(err)
	}
	if err := store.Upgrade(ctx, up); err != nil {
		t.Fatal(err)
	}
	if got, _ := store.Get(k); got.SHA256 != approved.SHA256 {
		t.Errorf("the upgrade replaced an approval: %+v", got)
	}
}

// TestRuleOfVersion1Digest: a pinning.approve rule with a digest a hub of
// version 1 listed still approves that definition.
func TestRuleOfVersion1Digest(t *testing.T) {
	app := withMeta(rawTool(t, "app", "Shows a widget", `{"type":"object"}`), "ui://widget/a.html")
	k := Key{Server: "s", Tool: "app"}
	if !(Rule{Server: "s", Tool: "app", SHA256: v1Sum(t, app)}).matches(k, defOf(t, app)) {
		t.Error("a version 1 digest in a rule no longer approves its definition")
	}
	if (Rule{Server: "s", Tool: "app", SHA256: v1Sum(t, rawTool(t, "app", "Other", `{"type":"object"}`))}).matches(k, defOf(t, app)) {
		t.Error("a rule approves a definition it was not written for")
	}
}

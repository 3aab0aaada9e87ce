package config

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
)

// Extensions are the MCP extensions (2026-07-28's `extensions` capability)
// the hub carries between its callers and its upstreams without
// understanding them: by extension identifier, the settings object the hub
// declares to every upstream in its client capabilities. A caller is told
// of one only when an upstream it may reach declares it (package
// features). The hub's own extensions (the Tasks extension) are not
// carried: the hub serves them itself.
//
// Absent from the file, the default carries MCP Apps; `extensions: {}`
// carries none.
type Extensions map[string]json.RawMessage

// ExtensionUI is the MCP Apps extension: interactive UI resources (ui://)
// that a host renders.
const ExtensionUI = "io.modelcontextprotocol/ui"

// ExtensionTasks is the Tasks extension, which the hub serves itself.
const ExtensionTasks = "io.modelcontextprotocol/tasks"

// defaultExtensions is what the hub carries unless told otherwise: MCP
// Apps, declared as a host that renders its one MIME type would.
func defaultExtensions() Extensions {
	return Extensions{ExtensionUI: json.RawMessage(`{"mimeTypes":["text/html;profile=mcp-app"]}`)}
}

// extensionID is an extension identifier: a _meta key with a mandatory
// prefix, {vendor-prefix}/{extension-name}.
var extensionID = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z]([A-Za-z0-9-]*[A-Za-z0-9])?)*/[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)

// validate names the first entry that is not an extension the hub can
// carry.
func (e Extensions) validate() error {
	for _, id := range e.IDs() {
		switch {
		case !extensionID.MatchString(id):
			return fmt.Errorf("upstream.extensions: %q is not an extension identifier ({vendor-prefix}/{extension-name}, e.g. %s)", id, ExtensionUI)
		case id == ExtensionTasks:
			return fmt.Errorf("upstream.extensions: %s is served by the hub itself (docs/protocol.md \"Extensions\"); it cannot be carried", id)
		}
		var settings map[string]any
		if err := json.Unmarshal(e[id], &settings); err != nil || settings == nil {
			return fmt.Errorf("upstream.extensions.%s: the settings must be an object ({} for none)", id)
		}
	}
	return nil
}

// IDs are the identifiers carried, sorted.
func (e Extensions) IDs() []string {
	ids := make([]string, 0, len(e))
	for id := range e {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

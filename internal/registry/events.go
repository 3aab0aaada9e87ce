package registry

import (
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/registry/quarantine"
)

// events is the registry's fan-out: who hears of a new catalog, of a
// quarantined tool and of an upstream's resources/updated, and the log
// level every upstream is told to log at. It is a type of its own because
// it is not reconciling: its listeners are registered before Run and only
// read after, and it is what every upstream client is handed as its
// upstream.Events, so a client sees these two methods and nothing of the
// registry. Registry embeds it: its exported methods are the Registry's.
type events struct {
	catalog    []func(*Catalog)
	quarantine []func(quarantine.Event)
	updated    []func(server string, params map[string]any)
	tasks      []func(server string, params map[string]any)
	logLevel   atomic.Value // mcp.LoggingLevel every upstream should log at
}

// OnChange registers fn to receive every new catalog, debounced. Register
// before Run.
func (e *events) OnChange(fn func(*Catalog)) { e.catalog = append(e.catalog, fn) }

// OnQuarantine registers fn to hear of every newly changed tool
// definition. Register before Run; fn must not block.
func (e *events) OnQuarantine(fn func(quarantine.Event)) {
	e.quarantine = append(e.quarantine, fn)
}

// OnResourceUpdated registers fn to receive every upstream's
// notifications/resources/updated (params as sent, the upstream's own URI).
// Register before Run; fn must not block.
func (e *events) OnResourceUpdated(fn func(server string, params map[string]any)) {
	e.updated = append(e.updated, fn)
}

// OnTaskStatus registers fn to receive every upstream's
// notifications/tasks/status (params as sent, the upstream's own task id).
// Register before Run; fn must not block.
func (e *events) OnTaskStatus(fn func(server string, params map[string]any)) {
	e.tasks = append(e.tasks, fn)
}

// SetLogLevel records the logging level upstreams should log at; servers
// that connect later are set to it when they connect.
func (e *events) SetLogLevel(level mcp.LoggingLevel) { e.logLevel.Store(level) }

// LogLevel implements upstream.Events.
func (e *events) LogLevel() mcp.LoggingLevel {
	l, _ := e.logLevel.Load().(mcp.LoggingLevel)
	return l
}

// ResourceUpdated implements upstream.Events.
func (e *events) ResourceUpdated(server string, params map[string]any) {
	for _, fn := range e.updated {
		fn(server, params)
	}
}

// TaskStatus implements upstream.Events.
func (e *events) TaskStatus(server string, params map[string]any) {
	for _, fn := range e.tasks {
		fn(server, params)
	}
}

// announce hands cat to the catalog listeners.
func (e *events) announce(cat *Catalog) {
	for _, fn := range e.catalog {
		fn(cat)
	}
}

// quarantined hands ev to the quarantine listeners.
func (e *events) quarantined(ev quarantine.Event) {
	for _, fn := range e.quarantine {
		fn(ev)
	}
}

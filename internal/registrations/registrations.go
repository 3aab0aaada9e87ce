// Package registrations writes the servers an operator registers through
// the hub's REST API (Purko's dashboard shapes: POST /api/mcp/server) to
// the source of truth the hub already reads, so a registration reaches the
// catalog through the normal discovery path and outlives the process: in
// Kubernetes the mcp-servers ConfigMap (URL entries) and MCPServer custom
// resources (image entries), the same objects Purko's dashboard writes; on
// a laptop a hub-managed file beside the config, never the user's YAML.
package registrations

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/purko-io/mcp-hub/internal/config"
)

// ErrNotFound says no registration of that name exists; ErrOtherKind
// that the name is registered as the other kind (a URL entry and an
// image), which an upsert does not silently turn into two servers.
var (
	ErrNotFound  = errors.New("no such registered server")
	ErrOtherKind = errors.New("registered as the other kind")
	// ErrNeedsCluster: an image entry where there is no cluster to run it.
	ErrNeedsCluster = errors.New("deploying a container image needs Kubernetes (an MCPServer)")
	// ErrRefused marks an entry a store will not write: its secretRef
	// names a credential the operator did not set aside for upstreams.
	// The error's message starts with the field (secretRef: ...).
	ErrRefused = errors.New("credential reference refused")
	// ErrReadOnly: the store belongs to another hub (its state directory
	// is held by that hub); this one only reads it.
	ErrReadOnly = errors.New("this hub's registrations are read-only")
)

// refusal is an ErrRefused whose message is the reason alone.
type refusal struct{ msg string }

func (r refusal) Error() string        { return r.msg }
func (r refusal) Is(target error) bool { return target == ErrRefused }

// refuse returns an ErrRefused saying why the secretRef is refused.
func refuse(format string, args ...any) error {
	return refusal{"secretRef: " + fmt.Sprintf(format, args...)}
}

// Entry is one registration, as Purko's dashboard posts it. URL entries
// connect a running server; image entries (Image, Port) deploy one as an
// MCPServer. Secret values never travel in an entry: SecretRef names where
// the token is (a Secret in Kubernetes, an environment variable of the hub
// on a laptop).
type Entry struct {
	Name        string   `json:"name"`
	URL         string   `json:"url,omitempty"`
	Auth        string   `json:"auth,omitempty"`
	SecretRef   string   `json:"secretRef,omitempty"`
	Category    string   `json:"category,omitempty"`
	Icon        string   `json:"icon,omitempty"`
	Image       string   `json:"image,omitempty"`
	Port        int      `json:"port,omitempty"`
	HostNetwork bool     `json:"hostNetwork,omitempty"`
	Args        []string `json:"args,omitempty"`
}

// IsImage reports whether the entry deploys a container image.
func (e Entry) IsImage() bool { return e.Image != "" }

// reserved reports whether name is one the catalog gives the hub's own
// tools (registry.ServerBuiltin and ServerAPI): a registration by such a
// name (an import of another hub's registry API, which publishes its own)
// would stand beside them in every listing and at /servers/NAME.
func reserved(name string) bool {
	switch strings.ToLower(name) {
	case "hub", "api":
		return true
	}
	return false
}

// Validate checks an entry with the rules of the config's servers
// (config.ServerSpec.Normalize) and returns an error that starts with the
// name of the offending field, so the caller can be told what to fix.
func (e *Entry) Validate() error {
	e.Auth = strings.ToLower(strings.TrimSpace(e.Auth))
	if reserved(e.Name) {
		return fmt.Errorf("name: %q is the hub's own group of tools (registry.ServerBuiltin, registry.ServerAPI); choose another name", e.Name)
	}
	switch {
	case e.URL != "" && e.Image != "":
		return fmt.Errorf("url: set either url (connect a running server) or image (deploy one), not both")
	case e.URL == "" && e.Image == "":
		if err := (&config.ServerSpec{Name: e.Name, URL: "http://x/mcp"}).Normalize(); err != nil {
			return err
		}
		return fmt.Errorf("url: one of url (connect a running server) or image (deploy one) is required")
	}
	spec := config.ServerSpec{Name: e.Name, URL: e.URL}
	if e.IsImage() {
		if e.Port < 0 || e.Port > 65535 {
			return fmt.Errorf("port: %d is not a port", e.Port)
		}
		spec.URL = "http://image.invalid/mcp" // the name is what is checked
	} else if e.Port != 0 {
		return fmt.Errorf("port: only with image; the url carries the port of a running server")
	}
	if err := spec.Normalize(); err != nil {
		return err
	}
	switch e.Auth {
	case "", "none":
		// Purko's form sends its secretRef field whatever auth says; it is
		// kept, and unused.
	case "bearer":
		if e.SecretRef == "" {
			return fmt.Errorf("secretRef: is required with auth bearer (it names where the token is; the token itself is never sent)")
		}
	default:
		return fmt.Errorf("auth: %q is not one of none, bearer", e.Auth)
	}
	return nil
}

// Writer stores registrations where the hub's discovery reads them.
type Writer interface {
	// Upsert adds the entry or replaces the one of the same name. An entry
	// whose secretRef names a credential not set aside for upstreams is
	// refused (ErrRefused) before anything is written: whoever registers
	// also chooses the URL the credential is sent to.
	Upsert(ctx context.Context, e Entry) error
	// Delete removes the named registration; ErrNotFound when there is
	// none.
	Delete(ctx context.Context, name string) error
	// Owns reports whether a catalog server (its discovery source and
	// Kubernetes object) is one this store holds, so DELETE may remove it;
	// it asks no one, the listing calls it for every server.
	Owns(source string, origin *config.Origin) bool
	// Where names the store, for messages and logs.
	Where() string
}

package hub

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/client-go/dynamic"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/netpolicy"
	"github.com/purko-io/mcp-hub/internal/statedir"
	"github.com/purko-io/mcp-hub/internal/upstream/oauthclient"
	"github.com/purko-io/mcp-hub/internal/usergrants"
	"github.com/purko-io/mcp-hub/internal/usergrants/store"
)

// Files of the user grants in a laptop hub's state directory.
const (
	grantsFile    = "grants.sealed"
	grantsKeyFile = "grants.key"
)

// newGrants opens the user grants (servers[].userOAuth, internal/usergrants):
// in the state directory on a laptop, in the userGrants.secret Secret of
// the hub's namespace in a cluster. nil when the hub can keep none (a
// state directory another hub holds; a cluster without userGrants.key):
// the calls of servers with userOAuth then fail, saying why, and the log
// says it once here.
func newGrants(ctx context.Context, cfg *config.Config, o Options, state *statedir.Dir, dial *netpolicy.Policy, log zerolog.Logger) (*usergrants.Broker, error) {
	g := cfg.UserGrants
	keyText := string(g.KeyValue)
	var st store.Store
	rc, namespace, err := clusterConfig(o)
	if err != nil {
		return nil, err
	}
	switch {
	case rc != nil:
		if keyText == "" {
			log.Info().Msg("user grants: off (userGrants.key is not set): servers with userOAuth cannot be called")
			return nil, nil
		}
		dyn, err := dynamic.NewForConfig(rc)
		if err != nil {
			return nil, fmt.Errorf("user grants: Kubernetes client: %w", err)
		}
		st = store.Secret(dyn, namespace, g.Secret)
	case state == nil || state.ReadOnly:
		log.Info().Msg("user grants: off (no state directory of this hub's own): servers with userOAuth cannot be called")
		return nil, nil
	default:
		if keyText == "" {
			if keyText, err = stateKey(state.Path); err != nil {
				return nil, err
			}
		}
		st = store.File(filepath.Join(state.Path, grantsFile))
	}
	keys, err := store.NewKeyring(store.ParseKeys(keyText)...)
	if err != nil {
		return nil, fmt.Errorf("config: userGrants.key: %w", err)
	}
	replica, _ := os.Hostname()
	if cfg.Replicas.InstanceID != "" {
		replica = cfg.Replicas.InstanceID
	}
	b, err := usergrants.New(usergrants.Options{
		Store: st, Keys: keys, PublicURL: publicURL(cfg), LinkTTL: g.LinkTTL.D(),
		HTTPClient: oauthclient.TokenClient(outboundTransport(dial), cfg.Upstream.ConnectTimeout.D()),
		Replica:    replica, Log: log.With().Str("component", "usergrants").Logger(),
	})
	if err != nil {
		return nil, err
	}
	// After a key rotation (a new first key), records of the old one are
	// sealed again with the new one: the old key may go once every
	// replica started with the new one.
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if n, err := b.Rewrap(rctx); err != nil {
		log.Warn().Err(err).Str("store", b.Where()).Msg("user grants: sealing old records with the new key failed; they are tried again at the next start")
	} else if n > 0 {
		log.Info().Int("records", n).Str("store", b.Where()).Msg("user grants: records sealed again with the first key of userGrants.key")
	}
	return b, nil
}

// stateKey is the sealing key of a laptop hub without userGrants.key: made
// once in its state directory (0600). It keeps the grants file unreadable
// alone (a backup, a copy), not from someone who can read the directory.
func stateKey(dir string) (string, error) {
	path := filepath.Join(dir, grantsKeyFile)
	if b, err := os.ReadFile(path); err == nil {
		return string(b), nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("user grants: reading the key %s: %w", path, err)
	}
	var k [32]byte
	_, _ = rand.Read(k[:])
	text := base64.StdEncoding.EncodeToString(k[:]) + "\n"
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("user grants: making the key %s: %w", path, err)
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return "", fmt.Errorf("user grants: writing the key %s: %w", path, err)
	}
	return text, f.Close()
}

// publicURL is where browsers reach the hub's sign-in pages, when the
// config says: userGrants.publicURL, else the registry's base; "" takes
// the address the hub listens on (Hub.Serve).
func publicURL(cfg *config.Config) string {
	if cfg.UserGrants.PublicURL != "" {
		return cfg.UserGrants.PublicURL
	}
	return cfg.RegistryBaseURL()
}

// listenURL is the base URL of a listener, for a browser on this machine.
func listenURL(ln net.Listener) string {
	host, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		return "http://" + ln.Addr().String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

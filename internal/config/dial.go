package config

import (
	"fmt"
	"regexp"
)

// DialSettings say which private addresses the hub may connect to for
// upstreams, api tools and their redirects (package netpolicy); public
// addresses always, link-local and cloud metadata (169.254.169.254),
// unspecified and multicast never. Both default to true: on a laptop the
// upstreams are on localhost, in a cluster behind Service IPs (and a
// hostNetwork MCPServer on localhost). Set false what no upstream needs.
type DialSettings struct {
	// Loopback allows 127.0.0.0/8 and ::1.
	Loopback *bool `json:"loopback,omitempty"`
	// Private allows 10/8, 172.16/12, 192.168/16, 100.64/10 (carrier-grade
	// NAT) and fc00::/7.
	Private *bool `json:"private,omitempty"`
}

// LoopbackAllowed says whether loopback upstreams may be dialled.
func (d DialSettings) LoopbackAllowed() bool { return d.Loopback == nil || *d.Loopback }

// PrivateAllowed says whether upstreams on private addresses may be dialled.
func (d DialSettings) PrivateAllowed() bool { return d.Private == nil || *d.Private }

// instanceIDPattern keeps an instance id printable in a header and an
// error: "<namespace>/<release>" fits.
var instanceIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$`)

// checkInstanceID checks replicas.instanceId.
func checkInstanceID(id string) error {
	if id != "" && !instanceIDPattern.MatchString(id) {
		return fmt.Errorf("replicas.instanceId: %q must be 1-128 characters of A-Z a-z 0-9 . _ : / - (e.g. <namespace>/<release>)", id)
	}
	return nil
}

// Package netpolicy decides which IP addresses the hub may open a
// connection to on behalf of what it was told to reach: upstream servers,
// api tools, OAuth token endpoints, and every redirect of theirs.
//
// A registered URL is written by a caller, so the hub must not reach
// through it what only the hub's own network position can: a cloud
// metadata service (credentials of the node), the hub's own loopback
// (sidecars, debug ports), or a private network the operator did not mean
// to open. Names are not what is checked: a name can resolve to anything,
// and again to something else on the next lookup (DNS rebinding). The
// check runs in net.Dialer's Control hook, on the address the socket is
// about to connect to, after resolution and before any packet is sent.
//
// It is a leaf: it imports nothing of this module.
package netpolicy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// Class is what kind of address an IP is, as far as the policy cares.
type Class uint8

// The classes, from always allowed to never dialled.
const (
	// Public is any address not in another class.
	Public Class = iota
	// Loopback is 127.0.0.0/8 and ::1: the hub's own host or pod.
	Loopback
	// Private is RFC 1918 (10/8, 172.16/12, 192.168/16), carrier-grade
	// NAT (100.64/10, used for pod and node networks), IPv6 unique local
	// (fc00::/7) and the deprecated site-local (fec0::/10).
	Private
	// Metadata is link-local (169.254/16, fe80::/10), where clouds serve
	// instance metadata and credentials, and the metadata addresses that
	// are not link-local (AWS fd00:ec2::254, GCP fd20:ce::254, Alibaba
	// 100.100.100.200, Azure's wire server 168.63.129.16, Oracle
	// Classic's 192.0.0.192). Never dialled.
	Metadata
	// Unspecified is 0.0.0.0/8 and ::, which Linux connects to the local
	// host. Never dialled.
	Unspecified
	// Multicast is multicast and the broadcast address. Never dialled.
	Multicast
)

// metadataAddrs are cloud metadata services outside the link-local ranges.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("fd00:ec2::254"),   // AWS IMDS over IPv6 (Nitro)
	netip.MustParseAddr("fd20:ce::254"),    // GCP metadata over IPv6
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud metadata
	netip.MustParseAddr("168.63.129.16"),   // Azure wire server
	netip.MustParseAddr("192.0.0.192"),     // Oracle Cloud Classic metadata
}

var (
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	cgnat       = netip.MustParsePrefix("100.64.0.0/10")
	siteLocal   = netip.MustParsePrefix("fec0::/10")
	broadcast   = netip.MustParseAddr("255.255.255.255")
	// nat64 embeds an IPv4 address in its last 32 bits (RFC 6052); a
	// NAT64 gateway takes 64:ff9b::a9fe:a9fe to 169.254.169.254.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
	// v4compat is the deprecated IPv4-compatible form ::a.b.c.d.
	v4compat = netip.MustParsePrefix("::/96")
)

// Classify says which class ip is in. IPv4-mapped (::ffff:a.b.c.d),
// IPv4-compatible and NAT64 forms are classified by the IPv4 address they
// carry, and a zone is ignored.
func Classify(ip netip.Addr) Class {
	ip = ip.WithZone("").Unmap()
	if ip.Is6() && (nat64.Contains(ip) || (v4compat.Contains(ip) && !ip.IsUnspecified() && !ip.IsLoopback())) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte(b[12:]))
	}
	switch {
	case ip.IsUnspecified() || thisNetwork.Contains(ip):
		return Unspecified
	case ip.IsLinkLocalUnicast():
		return Metadata
	case ip.IsMulticast() || ip == broadcast:
		return Multicast
	case ip.IsLoopback():
		return Loopback
	}
	for _, m := range metadataAddrs {
		if ip == m {
			return Metadata
		}
	}
	if ip.IsPrivate() || cgnat.Contains(ip) || siteLocal.Contains(ip) {
		return Private
	}
	return Public
}

// Policy says which of the classes that may be allowed are: public
// addresses always are; metadata, unspecified and multicast never are.
// The zero Policy allows public addresses only.
type Policy struct {
	Loopback bool
	Private  bool
	// Setting names the operator's setting in errors ("upstream.dial"),
	// so a refusal says what to change.
	Setting string
}

// RefusedError is a connection the policy did not let happen.
type RefusedError struct {
	Addr    netip.Addr
	Class   Class
	Setting string // the policy's Setting
}

func (e *RefusedError) Error() string {
	setting := e.Setting
	if setting == "" {
		setting = "dial"
	}
	var why string
	switch e.Class {
	case Metadata:
		why = "is link-local/cloud metadata: never dialled"
	case Unspecified:
		why = "is an unspecified address: never dialled"
	case Multicast:
		why = "is a multicast/broadcast address: never dialled"
	case Loopback:
		why = "is a loopback address: " + setting + ".loopback is false"
	case Private:
		why = "is a private address: " + setting + ".private is false"
	default:
		why = "is refused"
	}
	return fmt.Sprintf("dial policy: %s %s", e.Addr, why)
}

// Check returns a *RefusedError when p does not allow ip, else nil.
func (p *Policy) Check(ip netip.Addr) error {
	class := Classify(ip)
	switch {
	case class == Public,
		class == Loopback && p.Loopback,
		class == Private && p.Private:
		return nil
	}
	return &RefusedError{Addr: ip.WithZone("").Unmap(), Class: class, Setting: p.Setting}
}

// Control is a net.Dialer Control hook: it sees the resolved address of
// every connection attempt (each address of a name, in turn) before the
// connect. An IP network's address that does not parse is refused: the
// check fails closed.
func (p *Policy) Control(network, address string, _ syscall.RawConn) error {
	if !strings.HasPrefix(network, "tcp") && !strings.HasPrefix(network, "udp") {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("dial policy: cannot tell the address of %q: %w", address, err)
	}
	return p.Check(ap.Addr())
}

// Dialer returns a copy of d whose connections p checks, after any
// Control hook d already has.
func (p *Policy) Dialer(d *net.Dialer) *net.Dialer {
	cp := *d
	prev, prevCtx := d.Control, d.ControlContext
	cp.Control = nil
	cp.ControlContext = func(ctx context.Context, network, address string, c syscall.RawConn) error {
		if err := p.Control(network, address, c); err != nil {
			return err
		}
		switch {
		case prevCtx != nil:
			return prevCtx(ctx, network, address, c)
		case prev != nil:
			return prev(network, address, c)
		}
		return nil
	}
	return &cp
}

// Proxy wraps an http.Transport Proxy function (http.ProxyFromEnvironment):
// behind a proxy the hub dials the proxy, not the URL's host, so Control
// never sees where the request goes. A URL whose host is a literal IP the
// policy refuses is refused here instead; a name is the proxy's to check.
func (p *Policy) Proxy(next func(*http.Request) (*url.URL, error)) func(*http.Request) (*url.URL, error) {
	return func(req *http.Request) (*url.URL, error) {
		if ip, err := netip.ParseAddr(req.URL.Hostname()); err == nil {
			if err := p.Check(ip); err != nil {
				return nil, err
			}
		}
		if next == nil {
			return nil, nil
		}
		return next(req)
	}
}

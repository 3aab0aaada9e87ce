package netpolicy

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestControlPerClass runs the Control hook on literal addresses of every
// class, IPv4 and IPv6, under the three policies that matter; no address
// is dialled.
func TestControlPerClass(t *testing.T) {
	open := &Policy{Loopback: true, Private: true, Setting: "upstream.dial"}
	closed := &Policy{Setting: "upstream.dial"}
	loopOnly := &Policy{Loopback: true, Setting: "upstream.dial"}
	for _, tc := range []struct {
		addr  string
		class Class
	}{
		{"93.184.215.14:443", Public},
		{"[2606:4700::1111]:443", Public},
		{"127.0.0.1:8080", Loopback},
		{"127.3.4.5:80", Loopback},
		{"[::1]:8080", Loopback},
		{"[::ffff:127.0.0.1]:80", Loopback},
		{"10.0.0.5:80", Private},
		{"172.16.9.1:80", Private},
		{"192.168.1.1:80", Private},
		{"100.64.0.1:80", Private}, // carrier-grade NAT
		{"[fd12:3456::1]:80", Private},
		{"[fec0::1]:80", Private},
		{"[::ffff:10.1.2.3]:80", Private},
		{"169.254.169.254:80", Metadata},
		{"169.254.0.23:80", Metadata},
		{"[fe80::1]:80", Metadata},
		{"[fe80::1%eth0]:80", Metadata},
		{"[fd00:ec2::254]:80", Metadata},
		{"[fd20:ce::254]:80", Metadata},
		{"100.100.100.200:80", Metadata},
		{"168.63.129.16:80", Metadata},
		{"[::ffff:169.254.169.254]:80", Metadata},
		{"[::ffff:a9fe:a9fe]:80", Metadata},
		{"[64:ff9b::169.254.169.254]:80", Metadata},
		{"[::169.254.169.254]:80", Metadata},
		{"0.0.0.0:80", Unspecified},
		{"0.1.2.3:80", Unspecified},
		{"[::]:80", Unspecified},
		{"[::ffff:0.0.0.0]:80", Unspecified},
		{"224.0.0.1:80", Multicast},
		{"239.255.255.250:1900", Multicast},
		{"255.255.255.255:80", Multicast},
		{"[ff02::1]:80", Multicast},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			ap := netip.MustParseAddrPort(tc.addr)
			if got := Classify(ap.Addr()); got != tc.class {
				t.Fatalf("Classify(%s) = %d, want %d", ap.Addr(), got, tc.class)
			}
			for _, p := range []struct {
				name   string
				policy *Policy
				allow  bool
			}{
				{"open", open, tc.class <= Private},
				{"closed", closed, tc.class == Public},
				{"loopback only", loopOnly, tc.class <= Loopback},
			} {
				err := p.policy.Control("tcp", tc.addr, nil)
				if p.allow {
					if err != nil {
						t.Errorf("%s policy refused %s: %v", p.name, tc.addr, err)
					}
					continue
				}
				var refused *RefusedError
				if !errors.As(err, &refused) || refused.Class != tc.class {
					t.Fatalf("%s policy: Control(%s) = %v, want a refusal of class %d", p.name, tc.addr, err, tc.class)
				}
				if msg := err.Error(); !strings.HasPrefix(msg, "dial policy: ") || strings.Contains(msg, "%") {
					t.Errorf("%s policy: error %q does not start with the policy or shows a zone", p.name, msg)
				}
			}
		})
	}
}

// TestRefusalSaysWhy checks the words of each refusal: the address, the
// class, and for what the operator can allow, the setting to change.
func TestRefusalSaysWhy(t *testing.T) {
	p := &Policy{Setting: "upstream.dial"}
	for addr, want := range map[string]string{
		"169.254.169.254": "dial policy: 169.254.169.254 is link-local/cloud metadata: never dialled",
		"fd00:ec2::254":   "dial policy: fd00:ec2::254 is link-local/cloud metadata: never dialled",
		"10.0.0.5":        "dial policy: 10.0.0.5 is a private address: upstream.dial.private is false",
		"::1":             "dial policy: ::1 is a loopback address: upstream.dial.loopback is false",
		"0.0.0.0":         "dial policy: 0.0.0.0 is an unspecified address: never dialled",
		"224.0.0.1":       "dial policy: 224.0.0.1 is a multicast/broadcast address: never dialled",
	} {
		if got := p.Check(netip.MustParseAddr(addr)); got == nil || got.Error() != want {
			t.Errorf("Check(%s) = %v, want %q", addr, got, want)
		}
	}
}

func TestControlFailsClosed(t *testing.T) {
	p := &Policy{Loopback: true, Private: true}
	if err := p.Control("tcp", "not-an-address", nil); err == nil {
		t.Fatal("an address that does not parse was allowed")
	}
	if err := p.Control("unix", "/run/x.sock", nil); err != nil {
		t.Fatalf("a unix socket is not an IP address: %v", err)
	}
}

// fakeDNS answers every A query on a loopback UDP port with ip, the way a
// name an attacker controls would resolve, and counts the queries.
func fakeDNS(t *testing.T, ip netip.Addr) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if n < 12 {
				continue
			}
			q := buf[12:n]
			end := 0
			for end < len(q) && q[end] != 0 {
				end += int(q[end]) + 1
			}
			if end+5 > len(q) {
				continue
			}
			question := q[:end+5]
			qtype := binary.BigEndian.Uint16(question[end+1:])
			resp := append([]byte(nil), buf[:2]...)       // id
			resp = append(resp, 0x81, 0x80)               // response, recursion available
			resp = binary.BigEndian.AppendUint16(resp, 1) // questions
			answers := uint16(0)
			if qtype == 1 {
				answers = 1
			}
			resp = binary.BigEndian.AppendUint16(resp, answers)
			resp = append(resp, 0, 0, 0, 0) // authority, additional
			resp = append(resp, question...)
			if answers == 1 {
				a := ip.As4()
				resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 30, 0, 4)
				resp = append(resp, a[:]...)
			}
			_, _ = pc.WriteTo(resp, from)
		}
	}()
	return pc.LocalAddr().String()
}

// TestNameResolvingToARefusedAddress dials a name that a resolver of the
// test's own answers with 169.254.169.254: the refusal comes from the
// resolved address at connect time, whatever the name looked like, and
// nothing is sent.
func TestNameResolvingToARefusedAddress(t *testing.T) {
	dns := fakeDNS(t, netip.MustParseAddr("169.254.169.254"))
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", dns)
	}}
	var seen []string
	base := &net.Dialer{Resolver: resolver, Timeout: 5 * time.Second, Control: func(network, address string, _ syscall.RawConn) error {
		seen = append(seen, address) // runs only when the policy let it
		return nil
	}}
	d := (&Policy{Loopback: true, Private: true, Setting: "upstream.dial"}).Dialer(base)
	_, err := d.DialContext(context.Background(), "tcp4", "innocent.example:80")
	var refused *RefusedError
	if !errors.As(err, &refused) || refused.Addr != netip.MustParseAddr("169.254.169.254") {
		t.Fatalf("dial = %v, want the resolved 169.254.169.254 refused", err)
	}
	if len(seen) != 0 {
		t.Fatalf("the earlier Control hook ran for %v: the policy must refuse first", seen)
	}

	// The same name resolving to loopback connects, and the earlier hook
	// still runs.
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dns = fakeDNS(t, netip.MustParseAddr("127.0.0.1"))
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	c, err := d.DialContext(context.Background(), "tcp4", net.JoinHostPort("innocent.example", port))
	if err != nil {
		t.Fatalf("dial of a name resolving to loopback: %v", err)
	}
	c.Close()
	if len(seen) != 1 {
		t.Fatalf("earlier Control hook saw %v, want one loopback address", seen)
	}
}

// TestHTTPRedirectToARefusedAddress follows a redirect from an allowed
// (loopback) server to 169.254.169.254 through a transport dialling with
// the policy: the redirect's dial is refused like any other.
func TestHTTPRedirectToARefusedAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	}))
	defer srv.Close()
	p := &Policy{Loopback: true, Private: true, Setting: "upstream.dial"}
	// No Proxy hook: the refusal must come from the dial itself.
	hc := &http.Client{Transport: &http.Transport{
		DialContext: p.Dialer(&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	}}
	resp, err := hc.Get(srv.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatal("the redirect to 169.254.169.254 was followed")
	}
	var refused *RefusedError
	if !errors.As(err, &refused) || refused.Class != Metadata {
		t.Fatalf("GET = %v, want the redirect refused as metadata", err)
	}
}

// TestProxyRefusesLiteralAddresses: behind a proxy the dial goes to the
// proxy, so a literal refused address is refused before the proxy is
// asked; a name goes on to the proxy function.
func TestProxyRefusesLiteralAddresses(t *testing.T) {
	proxyURL, _ := url.Parse("http://127.0.0.1:3128")
	asked := 0
	proxy := (&Policy{Loopback: true, Private: true}).Proxy(func(*http.Request) (*url.URL, error) {
		asked++
		return proxyURL, nil
	})
	for _, tc := range []struct {
		url     string
		refused bool
	}{
		{"http://169.254.169.254/latest", true},
		{"http://[fd00:ec2::254]/latest", true},
		{"http://[fe80::1%25eth0]:8080/", true},
		{"http://10.0.0.5/mcp", false},
		{"http://upstream.example/mcp", false},
	} {
		req, _ := http.NewRequest("GET", tc.url, nil)
		before := asked
		got, err := proxy(req)
		if tc.refused {
			if err == nil || asked != before {
				t.Errorf("%s: proxy = %v, %v (asked %d), want refused before the proxy", tc.url, got, err, asked-before)
			}
			continue
		}
		if err != nil || got != proxyURL {
			t.Errorf("%s: proxy = %v, %v, want the proxy", tc.url, got, err)
		}
	}
}

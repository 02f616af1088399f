package egress

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		entry string
		want  entry
	}{
		{"api.example.com", entry{kind: kindName, name: "api.example.com"}},
		{"  API.Example.COM.  ", entry{kind: kindName, name: "api.example.com"}},
		{"api.example.com:443", entry{kind: kindName, name: "api.example.com", port: 443}},
		{"localhost", entry{kind: kindName, name: "localhost"}},
		{"*.Example.com", entry{kind: kindDomain, name: "example.com"}},
		{"*.example.com:8443", entry{kind: kindDomain, name: "example.com", port: 8443}},
		{"*", entry{kind: kindAny}},
		{"*:443", entry{kind: kindAny, port: 443}},
		{"203.0.113.7", entry{kind: kindNet, net: netip.MustParsePrefix("203.0.113.7/32")}},
		{"127.0.0.1:8080", entry{kind: kindNet, net: netip.MustParsePrefix("127.0.0.1/32"), port: 8080}},
		{"::1", entry{kind: kindNet, net: netip.MustParsePrefix("::1/128")}},
		{"[::1]", entry{kind: kindNet, net: netip.MustParsePrefix("::1/128")}},
		{"[::1]:8080", entry{kind: kindNet, net: netip.MustParsePrefix("::1/128"), port: 8080}},
		{"::ffff:127.0.0.1", entry{kind: kindNet, net: netip.MustParsePrefix("127.0.0.1/32")}},
		{"10.0.0.0/8", entry{kind: kindNet, net: netip.MustParsePrefix("10.0.0.0/8")}},
		{"10.0.0.0/8:5432", entry{kind: kindNet, net: netip.MustParsePrefix("10.0.0.0/8"), port: 5432}},
		{"fd00::/8", entry{kind: kindNet, net: netip.MustParsePrefix("fd00::/8")}},
		{"[fd00::/8]:443", entry{kind: kindNet, net: netip.MustParsePrefix("fd00::/8"), port: 443}},
		{"::ffff:10.0.0.0/104", entry{kind: kindNet, net: netip.MustParsePrefix("10.0.0.0/8")}},
	}
	for _, tt := range tests {
		t.Run(tt.entry, func(t *testing.T) {
			t.Parallel()
			p, err := Parse([]string{tt.entry})
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.entry, err)
			}
			if diff := cmp.Diff([]entry{tt.want}, p.entries, cmp.AllowUnexported(entry{}), cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
				t.Errorf("Parse(%q) (-want +got):\n%s", tt.entry, diff)
			}
		})
	}
}

func TestParseErrorsNameTheEntryAndTheFix(t *testing.T) {
	t.Parallel()
	tests := []struct{ entry, want string }{
		{"", "an empty entry"},
		{"   ", "an empty entry"},
		{"https://api.example.com/", `write the host without https://, e.g. "api.example.com"`},
		{"api.example.com:", "an empty port"},
		{"api.example.com:0", "port 0 is out of range"},
		{"api.example.com:65536", "port 65536 is out of range"},
		{"api.example.com:+80", `port "+80" is not a number`},
		{"api.example.com:https", `port "https" is not a number`},
		{"api*.example.com", "a wildcard is * alone or *.domain"},
		{"*.*.example.com", "a wildcard is * alone or *.domain"},
		{"*.", "an empty host name"},
		{"10.1.2.3/8", "did you mean 10.0.0.0/8?"},
		{"10.0.0.0/33", "not a network in CIDR notation"},
		{"example.com/path", "not a network in CIDR notation"},
		{"[127.0.0.1]:80", "brackets are for IPv6"},
		{"[api.example.com]:80", "brackets are for IPv6"},
		{"[::1", "a [ without its ]"},
		{"::1]:80", "a ] without its ["},
		{"[::1]80", "a port is written [::1]:8080"},
		{"fe80::1%eth0", "drop the zone"},
		{"exa mple.com", `' ' is not allowed`},
		{"bücher.de", "xn-- form"},
		{"a..example.com", "an empty label"},
		{".example.com", "an empty label"},
		{strings.Repeat("a", 64) + ".com", "longer than 63"},
		{strings.Repeat("a.", 127) + "com", "longer than 253"},
	}
	for _, tt := range tests {
		t.Run(tt.entry, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]string{"api.example.com", tt.entry})
			if err == nil {
				t.Fatalf("Parse(%q) = nil error, want one saying %q", tt.entry, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "sandbox.allow-hosts: "+strconv.Quote(tt.entry)) {
				t.Errorf("Parse(%q) = %q, want it to name the entry and say %q", tt.entry, err, tt.want)
			}
		})
	}
}

func TestParseNamesEveryBadEntry(t *testing.T) {
	t.Parallel()
	_, err := Parse([]string{"ok.example.com", "bad:port", "*", "10.0.0.1/8"})
	if err == nil {
		t.Fatal("Parse = nil error, want one")
	}
	for _, bad := range []string{`"bad:port"`, `"10.0.0.1/8"`} {
		if !strings.Contains(err.Error(), bad) {
			t.Errorf("Parse error %q does not name %s", err, bad)
		}
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	public := []string{"203.0.113.7"}
	tests := []struct {
		name  string
		allow []string
		host  string
		port  int
		addrs []string // what host resolves to
		// reason is "" when the host is allowed, else a part of the
		// refusal's reason.
		reason string
	}{
		// The unset list: any public host, nothing of the host's own.
		{"unset: public name", nil, "api.example.test", 443, public, ""},
		{"unset: empty list is unset", []string{}, "api.example.test", 22, public, ""},
		{"unset: public v6", nil, "api.example.test", 443, []string{"2606:4700::1"}, ""},
		{"unset: public literal", nil, "203.0.113.7", 80, nil, ""},
		{"unset: loopback literal", nil, "127.0.0.1", 22, nil, "127.0.0.1 is the host's loopback; name it in sandbox.allow-hosts to allow it"},
		{"unset: v6 loopback literal", nil, "::1", 22, nil, "::1 is the host's loopback"},
		{"unset: bracketed v6 literal", nil, "[::1]", 22, nil, "::1 is the host's loopback"},
		{"unset: mapped loopback literal", nil, "::ffff:127.0.0.1", 22, nil, "127.0.0.1 is the host's loopback"},
		{"unset: mapped public literal", nil, "::ffff:203.0.113.7", 443, nil, ""},
		{"unset: name to loopback", nil, "evil.example.test", 443, []string{"127.0.0.1"}, "evil.example.test resolves to 127.0.0.1, the host's loopback; name evil.example.test or 127.0.0.1 in sandbox.allow-hosts"},
		{"unset: name to mapped loopback", nil, "evil.example.test", 443, []string{"::ffff:127.0.0.2"}, "127.0.0.2, the host's loopback"},
		{"unset: name to private", nil, "db.example.test", 5432, []string{"10.1.2.3"}, "a private network address"},
		{"unset: 192.168", nil, "192.168.1.1", 80, nil, "a private network address"},
		{"unset: 172.16", nil, "172.31.255.255", 80, nil, "a private network address"},
		{"unset: ula", nil, "fd12::1", 80, nil, "a private network address"},
		{"unset: link-local", nil, "169.254.169.254", 80, nil, "a link-local address"},
		{"unset: v6 link-local", nil, "fe80::1", 80, nil, "a link-local address"},
		{"unset: cgnat", nil, "100.64.0.1", 80, nil, "carrier-grade NAT"},
		{"unset: cgnat top", nil, "100.127.255.255", 80, nil, "carrier-grade NAT"},
		{"unset: just outside cgnat", nil, "100.128.0.1", 80, nil, ""},
		{"unset: unspecified", nil, "0.0.0.0", 80, nil, "the unspecified address"},
		{"unset: v6 unspecified", nil, "::", 80, nil, "the unspecified address"},
		{"unset: this network", nil, "0.1.2.3", 80, nil, "0.0.0.0/8"},
		{"unset: multicast", nil, "224.0.0.1", 80, nil, "a multicast address"},
		{"unset: v6 multicast", nil, "ff02::1", 80, nil, "a multicast address"},
		{"unset: broadcast", nil, "255.255.255.255", 80, nil, "not a unicast address"},
		{"unset: nat64 of private", nil, "64:ff9b::10.1.2.3", 80, nil, "the NAT64 form of 10.1.2.3, a private network address"},
		{"unset: nat64 of loopback", nil, "nat64.example.test", 80, []string{"64:ff9b::7f00:1"}, "the NAT64 form of 127.0.0.1, the host's loopback"},
		{"unset: nat64 of public", nil, "64:ff9b::203.0.113.7", 80, nil, ""},
		{"unset: no addresses", nil, "gone.example.test", 443, nil, "no such host"},
		{"unset: one bad address of several", nil, "mixed.example.test", 443, []string{"203.0.113.7", "127.0.0.1"}, "resolves to 127.0.0.1"},

		// An exact name, on any port or one.
		{"name", []string{"api.example.test"}, "api.example.test", 443, public, ""},
		{"name: case", []string{"API.Example.Test"}, "api.EXAMPLE.test", 443, public, ""},
		{"name: trailing dot in request", []string{"api.example.test"}, "api.example.test.", 443, public, ""},
		{"name: trailing dot in entry", []string{"api.example.test."}, "api.example.test", 443, public, ""},
		{"name: other host", []string{"api.example.test"}, "www.example.test", 443, public, "www.example.test:443 is not in sandbox.allow-hosts"},
		{"name: subdomain", []string{"example.test"}, "api.example.test", 443, public, "not in sandbox.allow-hosts"},
		{"name: named exactly reaches loopback", []string{"localhost"}, "localhost", 8080, []string{"127.0.0.1", "::1"}, ""},
		{"name: named exactly reaches private", []string{"db.internal"}, "db.internal", 5432, []string{"10.1.2.3"}, ""},
		{"name: not a literal", []string{"api.example.test"}, "203.0.113.7", 443, nil, "203.0.113.7:443 is not in sandbox.allow-hosts"},
		{"name:port", []string{"api.example.test:443"}, "api.example.test", 443, public, ""},
		{"name:port other port", []string{"api.example.test:443"}, "api.example.test", 80, public, "api.example.test:80 is not in sandbox.allow-hosts"},
		{"name:port does not name another port's loopback", []string{"*", "local.test:8080"}, "local.test", 9090, []string{"127.0.0.1"}, "the host's loopback"},

		// A domain's subdomains.
		{"domain: subdomain", []string{"*.example.test"}, "api.example.test", 443, public, ""},
		{"domain: deep subdomain", []string{"*.example.test"}, "a.b.example.test", 443, public, ""},
		{"domain: case and dot", []string{"*.Example.Test."}, "API.example.TEST.", 443, public, ""},
		{"domain: not the domain itself", []string{"*.example.test"}, "example.test", 443, public, "example.test:443 is not in sandbox.allow-hosts (*.example.test covers its subdomains only; add example.test)"},
		{"domain: and the domain itself", []string{"*.example.test", "example.test"}, "example.test", 443, public, ""},
		{"domain: a suffix is not a subdomain", []string{"*.example.test"}, "notexample.test", 443, public, "not in sandbox.allow-hosts"},
		{"domain: port", []string{"*.example.test:443"}, "api.example.test", 80, public, "not in sandbox.allow-hosts"},
		{"domain: rebinding refused", []string{"*.example.test"}, "rebind.example.test", 443, []string{"127.0.0.1"}, "rebind.example.test resolves to 127.0.0.1, the host's loopback"},
		{"domain: rebinding named by address", []string{"*.example.test", "127.0.0.1"}, "rebind.example.test", 443, []string{"127.0.0.1"}, ""},
		{"domain: not a literal", []string{"*.example.test"}, "203.0.113.7", 443, nil, "not in sandbox.allow-hosts"},

		// Any public host.
		{"any", []string{"*"}, "api.example.test", 443, public, ""},
		{"any: rebinding refused", []string{"*"}, "rebind.example.test", 443, []string{"127.0.0.1"}, "the host's loopback"},
		{"any: loopback literal refused", []string{"*"}, "127.0.0.1", 443, nil, "the host's loopback"},
		{"any: port", []string{"*:443"}, "api.example.test", 443, public, ""},
		{"any: other port", []string{"*:443"}, "api.example.test", 80, public, "api.example.test:80 is not in sandbox.allow-hosts"},

		// Addresses and networks.
		{"ip", []string{"127.0.0.1"}, "127.0.0.1", 8080, nil, ""},
		{"ip: mapped request", []string{"127.0.0.1"}, "::ffff:127.0.0.1", 8080, nil, ""},
		{"ip: mapped entry", []string{"::ffff:127.0.0.1"}, "127.0.0.1", 8080, nil, ""},
		{"ip: other address", []string{"127.0.0.1"}, "127.0.0.2", 8080, nil, "127.0.0.2:8080 is not in sandbox.allow-hosts"},
		{"ip:port", []string{"127.0.0.1:8080"}, "127.0.0.1", 8080, nil, ""},
		{"ip:port other port", []string{"127.0.0.1:8080"}, "127.0.0.1", 8081, nil, "127.0.0.1:8081 is not in sandbox.allow-hosts"},
		{"ipv6", []string{"::1"}, "::1", 8080, nil, ""},
		{"[ipv6]:port", []string{"[::1]:8080"}, "::1", 8080, nil, ""},
		{"[ipv6]:port other port", []string{"[::1]:8080"}, "::1", 80, nil, "[::1]:80 is not in sandbox.allow-hosts"},
		{"ip does not admit a name", []string{"203.0.113.7"}, "api.example.test", 443, public, "not in sandbox.allow-hosts"},
		{"cidr", []string{"10.0.0.0/8"}, "10.1.2.3", 5432, nil, ""},
		{"cidr: outside", []string{"10.0.0.0/8"}, "11.1.2.3", 5432, nil, "not in sandbox.allow-hosts"},
		{"cidr: v6", []string{"fd00::/8"}, "fd12:3456::1", 443, nil, ""},
		{"cidr: does not admit a name", []string{"10.0.0.0/8"}, "db.internal", 5432, []string{"10.1.2.3"}, "db.internal:5432 is not in sandbox.allow-hosts"},
		{"cidr: names the addresses a name admitted by * reaches", []string{"*", "10.0.0.0/8"}, "db.internal", 5432, []string{"10.1.2.3"}, ""},
		{"cidr: but not those outside it", []string{"*", "10.0.0.0/8"}, "db.internal", 5432, []string{"10.1.2.3", "192.168.0.1"}, "resolves to 192.168.0.1"},
		{"cidr:port", []string{"*", "10.0.0.0/8:5432"}, "db.internal", 80, []string{"10.1.2.3"}, "a private network address"},

		{"zoned literal", nil, "fe80::1%eth0", 80, nil, "zone"},
		{"empty host", nil, "", 80, nil, "no host named"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Parse(tt.allow)
			if err != nil {
				t.Fatal(err)
			}
			var addrs []netip.Addr
			for _, a := range tt.addrs {
				addrs = append(addrs, netip.MustParseAddr(a))
			}
			ok, reason := p.Check(tt.host, tt.port, addrs)
			if tt.reason == "" {
				if !ok {
					t.Errorf("Check(%q, %d, %v) refused: %s; want allowed", tt.host, tt.port, tt.addrs, reason)
				}
				return
			}
			if ok || !strings.Contains(reason, tt.reason) {
				t.Errorf("Check(%q, %d, %v) = %v, %q; want refused saying %q", tt.host, tt.port, tt.addrs, ok, reason, tt.reason)
			}
		})
	}
}

func TestZeroPolicyIsUnset(t *testing.T) {
	t.Parallel()
	var p Policy
	if ok, reason := p.Check("api.example.test", 443, []netip.Addr{netip.MustParseAddr("203.0.113.7")}); !ok {
		t.Errorf("zero Policy refused a public host: %s", reason)
	}
	if ok, _ := p.Check("127.0.0.1", 443, nil); ok {
		t.Error("zero Policy allowed the host's loopback")
	}
}

// Named tells which hosts the list names exactly, whatever the port: the
// sandbox sends those through the proxy instead of to its own loopback.
func TestPolicyNamed(t *testing.T) {
	t.Parallel()
	p, err := Parse([]string{"127.0.0.1:11434", "LocalHost.", "*", "*.example.com", "10.0.0.0/8", "[::1]:8080"})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"127.0.0.1": true, "localhost": true, "::1": true, "[::1]": true, "10.1.2.3": true,
		"127.0.0.2": false, "api.example.com": false, "example.org": false, "": false,
	} {
		if got := p.Named(host); got != want {
			t.Errorf("Named(%q) = %v, want %v", host, got, want)
		}
	}
	var unset Policy
	if unset.Named("127.0.0.1") {
		t.Error("the unset list names 127.0.0.1")
	}
}

package egress

import (
	"net/netip"
	"strings"
	"testing"
)

// FuzzPolicy parses arbitrary allow lists (entries one a line) and checks
// arbitrary hosts against them, resolving to addr. Besides not panicking,
// a policy must never let a non-public address through unless an entry
// names it exactly, and must compare names without regard to case or a
// trailing dot.
func FuzzPolicy(f *testing.F) {
	for _, seed := range []struct {
		allow, host string
		port        int
		addr        string
	}{
		{"", "api.example.test", 443, "203.0.113.7"},
		{"*", "rebind.example.test", 443, "127.0.0.1"},
		{"*\n10.0.0.0/8", "db.internal", 5432, "10.1.2.3"},
		{"*.example.test", "a.b.example.test", 443, "::ffff:127.0.0.1"},
		{"*.example.test:443\nexample.test", "example.test.", 443, "100.64.0.1"},
		{"api.example.test:443", "API.Example.Test.", 443, "203.0.113.7"},
		{"localhost", "localhost", 8080, "::1"},
		{"[::1]:8080\n127.0.0.1", "::1", 8080, ""},
		{"[fd00::/8]:443", "[fd12::1]", 443, ""},
		{"::ffff:10.0.0.0/104", "10.9.8.7", 1, ""},
		{"fe80::1%eth0\nhttps://x/", "169.254.169.254", 80, "169.254.169.254"},
		{"*:443\n0.0.0.0/0", "0.0.0.0", 443, "0.0.0.0"},
		{"*", "nat64.example.test", 443, "64:ff9b::7f00:1"},
	} {
		f.Add(seed.allow, seed.host, seed.port, seed.addr)
	}
	f.Fuzz(func(t *testing.T, allow, host string, port int, addr string) {
		p, err := Parse(strings.Split(allow, "\n"))
		if err != nil {
			if err.Error() == "" {
				t.Error("Parse failed with an empty message")
			}
			return
		}
		var addrs []netip.Addr
		if a, err := netip.ParseAddr(addr); err == nil {
			addrs = append(addrs, a)
		}
		ok, reason := p.Check(host, port, addrs)
		if ok != (reason == "") {
			t.Fatalf("Check(%q, %d, %v) = %v, %q: a refusal needs a reason, an allowance none", host, port, addrs, ok, reason)
		}
		// The addresses checked: an IP literal host is its own.
		name, lit, isLit, _ := parseHost(host)
		if isLit {
			addrs = []netip.Addr{lit}
		}

		// * never reaches a non-public address.
		star, _ := Parse([]string{"*"})
		for _, a := range addrs {
			if _, public := describe(a.Unmap()); !public {
				if ok, _ := star.Check(host, port, addrs); ok {
					t.Fatalf("* let %q:%d through to %s", host, port, a)
				}
			}
		}
		if !ok {
			return
		}

		// Whatever was let through is public, or named exactly.
		for _, a := range addrs {
			a = a.Unmap()
			if _, public := describe(a); public {
				continue
			}
			if !namedExactly(p, name, isLit, a, port) {
				t.Fatalf("allow %q let %q:%d through to %s, which no entry names", allow, host, port, a)
			}
		}

		// The same name in other case, with a trailing dot, is the same.
		if !isLit && isASCII(host) && !strings.HasSuffix(host, ".") {
			if ok2, reason2 := p.Check(strings.ToUpper(host)+".", port, addrs); !ok2 {
				t.Fatalf("allow %q let %q through but not %q: %s", allow, host, strings.ToUpper(host)+".", reason2)
			}
		}
	})
}

// namedExactly reports whether an entry of p names a for port: by its
// address or network, or by the exact name it was reached by.
func namedExactly(p Policy, name string, isLit bool, a netip.Addr, port int) bool {
	for _, e := range p.list() {
		if e.port != 0 && e.port != port {
			continue
		}
		switch e.kind {
		case kindNet:
			if e.net.Contains(a) {
				return true
			}
		case kindName:
			if !isLit && e.name == name {
				return true
			}
		case kindAny, kindDomain:
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

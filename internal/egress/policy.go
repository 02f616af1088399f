package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Policy is where the agent may connect: the parsed sandbox.allow-hosts
// list. The zero Policy is the unset list: any public host, on any port.
//
// A host is admitted by an entry that matches its name (or, for an IP
// literal, its address) and the port. Every address it resolves to must
// then be public, or be named exactly: by an IP or CIDR entry, or because
// the host itself is listed by its exact name. `*` and `*.domain` never
// reach a non-public address, so a public-looking name that resolves to
// 127.0.0.1 (DNS rebinding) stays outside the host. Not public are the
// loopback, private (RFC 1918, fc00::/7), link-local, shared (CGNAT,
// 100.64.0.0/10), 0.0.0.0/8, unspecified, multicast and broadcast
// addresses, and their IPv4-mapped and NAT64 (64:ff9b::/96) forms.
type Policy struct {
	entries []entry
	// host are the addresses of the host's own interfaces: not public,
	// whatever their range (withHost).
	host []netip.Addr
}

// withHost is p with the host's own addresses, which a request reaches
// only when an entry names them (by IP or CIDR, or the host by its exact
// name): a service that listens on all interfaces is on the host's
// public address too.
func (p Policy) withHost(addrs []netip.Addr) Policy {
	p.host = addrs
	return p
}

// kind is what an allow-hosts entry names.
type kind int

const (
	kindAny    kind = iota // *: any public host
	kindName               // api.example.com: that host name, exactly
	kindDomain             // *.example.com: the domain's subdomains, at any depth
	kindNet                // 10.0.0.0/8 or 10.1.2.3: addresses, literal or resolved
)

// entry is one parsed allow-hosts entry.
type entry struct {
	kind kind
	// name is the lower-case host name without a trailing dot; for
	// kindDomain, the domain under the `*.`.
	name string
	// net holds kindNet's addresses: an IP is a prefix of its full length.
	net netip.Prefix
	// port is the one port the entry allows; 0 allows any.
	port int
}

// unset is the policy of an empty allow list.
func unset() []entry { return []entry{{kind: kindAny}} }

// Parse reads the sandbox.allow-hosts list. Each entry is one of
//
//	api.example.com         that host name, on any port
//	api.example.com:443     that host name, on that port only
//	*.example.com           every subdomain of example.com, at any depth (not example.com itself)
//	*                       any public host
//	203.0.113.7, ::1        that address
//	10.0.0.0/8, fd00::/8    the addresses of that network
//	[::1]:8080              an IPv6 address (or network) with a port
//
// and any of them may end in :PORT (IPv6 in brackets). Names are compared
// without regard to case and a trailing dot. An empty list allows any
// public host. The error names every entry that cannot be read.
func Parse(allow []string) (Policy, error) {
	var p Policy
	var errs []error
	for _, s := range allow {
		e, err := parseEntry(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("sandbox.allow-hosts: %q: %w", s, err))
			continue
		}
		p.entries = append(p.entries, e)
	}
	if len(errs) > 0 {
		return Policy{}, errors.Join(errs...)
	}
	return p, nil
}

// parseEntry reads one allow-hosts entry.
func parseEntry(s string) (entry, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return entry{}, errors.New("an empty entry; write a host name, an address or *")
	}
	if i := strings.Index(s, "://"); i >= 0 {
		return entry{}, fmt.Errorf("write the host without %s://, e.g. %q", s[:i], strings.TrimRight(s[i+3:], "/"))
	}
	host, port, bracketed, err := splitEntry(s)
	if err != nil {
		return entry{}, err
	}
	e := entry{}
	if port != "" {
		if e.port, err = parsePort(port); err != nil {
			return entry{}, err
		}
	}
	switch {
	case host == "*":
		e.kind = kindAny
	case strings.HasPrefix(host, "*.") && !strings.Contains(host[2:], "*"):
		e.kind = kindDomain
		if e.name, err = parseName(host[2:]); err != nil {
			return entry{}, err
		}
	case strings.Contains(host, "*"):
		return entry{}, errors.New("a wildcard is * alone or *.domain, with the * leftmost")
	case strings.Contains(host, "/"):
		e.kind = kindNet
		if e.net, err = parseNet(host); err != nil {
			return entry{}, err
		}
	default:
		if a, err := netip.ParseAddr(host); err == nil {
			if a.Zone() != "" {
				return entry{}, errors.New("an address with a zone (%...) cannot be allowed; drop the zone")
			}
			a = a.Unmap()
			e.kind, e.net = kindNet, netip.PrefixFrom(a, a.BitLen())
			break
		}
		e.kind = kindName
		if e.name, err = parseName(host); err != nil {
			return entry{}, err
		}
	}
	if bracketed && (e.kind != kindNet || !e.net.Addr().Is6()) {
		return entry{}, errors.New("brackets are for IPv6 addresses, as in [::1]:8080")
	}
	return e, nil
}

// splitEntry splits an entry into its host and its port ("" when it has
// none). An IPv6 address takes a port only in brackets; bare, every colon
// is its own.
func splitEntry(s string) (host, port string, bracketed bool, err error) {
	if rest, ok := strings.CutPrefix(s, "["); ok {
		host, after, ok := strings.Cut(rest, "]")
		if !ok {
			return "", "", false, errors.New("a [ without its ]")
		}
		if after == "" {
			return host, "", true, nil
		}
		port, ok := strings.CutPrefix(after, ":")
		if !ok {
			return "", "", false, fmt.Errorf("%q after ]; a port is written [::1]:8080", after)
		}
		if port == "" {
			return "", "", false, errEmptyPort
		}
		return host, port, true, nil
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, "", false, nil
	case 1:
		host, port, _ := strings.Cut(s, ":")
		if port == "" {
			return "", "", false, errEmptyPort
		}
		return host, port, false, nil
	default:
		if strings.Contains(s, "]") {
			return "", "", false, errors.New("a ] without its [")
		}
		return s, "", false, nil
	}
}

// errEmptyPort is the error of an entry ending in a colon.
var errEmptyPort = errors.New("an empty port after the colon; write a port number or drop the colon")

// parsePort reads a port number, 1 to 65535, in decimal.
func parsePort(s string) (int, error) {
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("port %q is not a number", s)
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %s is out of range (1-65535)", s)
	}
	return n, nil
}

// parseNet reads a CIDR network, which must be written with its host
// bits clear.
func parseNet(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("not a network in CIDR notation (e.g. 10.0.0.0/8 or fd00::/8)")
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, fmt.Errorf("%s has host bits set; did you mean %s?", s, m)
	}
	// ::ffff:10.0.0.0/104 is 10.0.0.0/8: addresses are unmapped before
	// they are compared.
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p, nil
}

// parseName reads a host name: letters, digits, hyphens and underscores
// in dot-separated labels. Names in other scripts are written in their
// xn-- (punycode) form, as DNS knows them.
func parseName(s string) (string, error) {
	name := canonicalName(s)
	if name == "" {
		return "", errors.New("an empty host name")
	}
	if len(name) > 253 {
		return "", errors.New("a host name longer than 253 characters")
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" {
			return "", fmt.Errorf("%q has an empty label (two dots in a row, or a leading dot)", s)
		}
		if len(label) > 63 {
			return "", fmt.Errorf("%q has a label longer than 63 characters", s)
		}
		for _, c := range label {
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
				return "", fmt.Errorf("%q is not a host name (%q is not allowed; write names in other scripts in their xn-- form)", s, c)
			}
		}
	}
	return name, nil
}

// canonicalName is a host name as the policy compares it: lower case,
// without a trailing dot.
func canonicalName(s string) string {
	return strings.ToLower(strings.TrimSuffix(s, "."))
}

// list is the policy's entries; the zero Policy's are the unset list's.
func (p Policy) list() []entry {
	if len(p.entries) == 0 {
		return unset()
	}
	return p.entries
}

// Check reports whether the agent may connect to host:port, where addrs
// are every address host resolves to. An IP literal host is its own only
// address and addrs is not read. When the answer is no, reason says why,
// in words for the user.
func (p Policy) Check(host string, port int, addrs []netip.Addr) (ok bool, reason string) {
	host, lit, isLit, err := parseHost(host)
	if err != nil {
		return false, err.Error()
	}
	if isLit {
		addrs = []netip.Addr{lit}
	}
	admitted, named := p.admit(host, port)
	if !admitted {
		return false, p.notListed(host, port)
	}
	if len(addrs) == 0 {
		return false, "no such host"
	}
	for _, a := range addrs {
		a = a.Unmap()
		what, public := describe(a)
		if public && slices.Contains(p.host, a) {
			what, public = "one of the host's own addresses", false
		}
		if public || named || p.names(a, port) {
			continue
		}
		if isLit {
			return false, fmt.Sprintf("%s is %s; name it in sandbox.allow-hosts to allow it", a, what)
		}
		return false, fmt.Sprintf("%s resolves to %s, %s; name %s or %s in sandbox.allow-hosts to allow it", host, a, what, host, a)
	}
	return true, ""
}

// parseHost reads the host the agent asked for: an IP literal (addr, with
// isLit) or a name, made canonical.
func parseHost(host string) (name string, addr netip.Addr, isLit bool, err error) {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return "", netip.Addr{}, false, errors.New("an address with a zone (%...) cannot be reached through the proxy")
		}
		a = a.Unmap()
		return a.String(), a, true, nil
	}
	if host == "" {
		return "", netip.Addr{}, false, errors.New("no host named")
	}
	// The name goes into decisions, warnings and the run's account of
	// hosts: one that is not a host name is refused without being
	// repeated (it could be a megabyte long, or hold escape sequences).
	name, err = parseName(host)
	if err != nil {
		return "", netip.Addr{}, false, errors.New("not a host name (letters, digits, '-' and '_' in labels of at most 63, 253 in all)")
	}
	return name, netip.Addr{}, false, nil
}

// admit reports whether an entry lets the agent ask for host:port at all,
// before host is resolved, and whether one names it exactly (by its name,
// or by the address an IP literal is), so that it may reach any address.
// host is canonical (see parseHost).
func (p Policy) admit(host string, port int) (admitted, named bool) {
	lit, err := netip.ParseAddr(host)
	isLit := err == nil
	for _, e := range p.list() {
		if e.port != 0 && e.port != port {
			continue
		}
		switch e.kind {
		case kindAny:
			admitted = true
		case kindName:
			if !isLit && host == e.name {
				return true, true
			}
		case kindDomain:
			if !isLit && strings.HasSuffix(host, "."+e.name) {
				admitted = true
			}
		case kindNet:
			if isLit && e.net.Contains(lit) {
				return true, true
			}
		}
	}
	return admitted, false
}

// Named reports whether an entry names host exactly, on some port: its
// name, or an address or network that holds the address host is. A
// wildcard (* or *.domain) names nothing. The sandbox sends what it
// reaches of such a host through the proxy rather than to its own
// loopback (NO_PROXY).
func (p Policy) Named(host string) bool {
	name, lit, isLit, err := parseHost(host)
	if err != nil {
		return false
	}
	for _, e := range p.list() {
		switch e.kind { //nolint:exhaustive // wildcards name nothing
		case kindName:
			if !isLit && name == e.name {
				return true
			}
		case kindNet:
			if isLit && e.net.Contains(lit) {
				return true
			}
		}
	}
	return false
}

// names reports whether an IP or CIDR entry names the address a for port.
func (p Policy) names(a netip.Addr, port int) bool {
	for _, e := range p.list() {
		if e.kind == kindNet && (e.port == 0 || e.port == port) && e.net.Contains(a) {
			return true
		}
	}
	return false
}

// notListed is the reason a host that no entry admits is refused.
func (p Policy) notListed(host string, port int) string {
	target := host
	if strings.Contains(host, ":") {
		target = "[" + host + "]"
	}
	reason := fmt.Sprintf("%s:%d is not in sandbox.allow-hosts", target, port)
	for _, e := range p.list() {
		if e.kind == kindDomain && e.name == host {
			return reason + fmt.Sprintf(" (*.%s covers its subdomains only; add %s)", host, host)
		}
	}
	return reason
}

// describe says what kind of address a is when it is not public: one on
// the host itself or on a network it is part of, rather than on the
// Internet. a is unmapped.
func describe(a netip.Addr) (what string, public bool) {
	switch {
	case !a.IsValid():
		return "not an address", false
	case a.IsLoopback():
		return "the host's loopback", false
	case a.IsUnspecified():
		return "the unspecified address, which reaches the host itself", false
	case a.Is4() && a.As4()[0] == 0:
		return "in 0.0.0.0/8, which reaches the host itself", false
	case a.IsPrivate():
		return "a private network address", false
	case a.IsLinkLocalUnicast():
		return "a link-local address (where cloud metadata services live)", false
	case a.IsMulticast():
		return "a multicast address", false
	case a.Is4() && a.As4()[0] == 100 && a.As4()[1]&0xc0 == 64:
		return "a shared (carrier-grade NAT, 100.64.0.0/10) address", false
	case !a.IsGlobalUnicast():
		return "not a unicast address", false
	}
	// 64:ff9b::/96 is NAT64's: the gateway carries it on to the IPv4
	// address in its last four bytes, which may be on its network.
	if b := a.As16(); a.Is6() && netip.PrefixFrom(netip.AddrFrom16([16]byte{0, 0x64, 0xff, 0x9b}), 96).Contains(a) {
		v4 := netip.AddrFrom4([4]byte(b[12:]))
		if what, public := describe(v4); !public {
			return fmt.Sprintf("the NAT64 form of %s, %s", v4, what), false
		}
	}
	return "", true
}

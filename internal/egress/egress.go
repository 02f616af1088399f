// Package egress is the sandbox's one way out to the network. The agent
// runs in a network namespace of its own, with only a loopback; ralph
// serves an HTTP and HTTPS proxy (Proxy) on a unix socket that is mounted
// into the sandbox, and a small bridge inside it (Bridge) carries each
// connection to 127.0.0.1:PORT over to that socket. The proxy lets the
// agent reach what sandbox.allow-hosts allows (Policy) and nothing of the
// host's own unless it is named there, and tells its caller of every
// decision.
//
// It owns the policy and the bytes in flight. It must not log, print or
// record: decisions go to the caller, which writes them to the transcript
// and events. A Decision never carries a request's path, query, headers
// or credentials, which may hold secrets. It does not start processes or
// set up the namespace; the sandbox and the command line do.
package egress

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/netutil"
)

// Decision is what the proxy did with one request or CONNECT.
type Decision struct {
	// Method is the request's method: CONNECT for a tunnel (HTTPS), GET,
	// POST and so on for a plain HTTP request.
	Method string
	// Host and Port are where the agent asked to go. Host is canonical:
	// lower case, without a trailing dot or IPv6 brackets. A request that
	// names no host, or no valid port, has them empty or 0.
	Host string
	Port int
	// Allowed is true when the proxy went on to connect. A connection
	// that fails after that is answered 502, and not reported again.
	Allowed bool
	// Reason says why the request was refused, in words for the user.
	Reason string
	// Denied: the policy refused the host (not listed in
	// sandbox.allow-hosts, or one of the host's own that the list does
	// not name), which naming it there would allow. A malformed request
	// or a name that does not resolve is refused without it: no key
	// would change that.
	Denied bool
}

// Proxy is ralph's HTTP and HTTPS proxy. Its fields are read when Serve
// starts; a Proxy may serve several listeners at once.
type Proxy struct {
	// Policy is where the agent may go; the zero Policy lets it reach any
	// public host.
	Policy Policy
	// Resolve looks up a host name's addresses; nil means the system's
	// resolver. The proxy resolves each request's host once, checks every
	// address and dials only those.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// Dial connects to one checked address (always IP:port, never a
	// name); nil means a net.Dialer with a 30-second timeout.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Decide is told of every request's outcome, from many goroutines at
	// once; nil tells no one.
	Decide func(Decision)
	// HostAddrs lists the addresses of the host's own interfaces, asked
	// at each request (an interface may come up during a run); nil means
	// the system's. A service listening on all of them is reachable at a
	// public one too: those are refused unless named, as loopback is.
	HostAddrs func() ([]netip.Addr, error)
}

// Timeouts for what ralph's side controls. Nothing times out a response
// or a tunnel: a model can think for minutes before its first byte.
const (
	dialTimeout       = 30 * time.Second
	readHeaderTimeout = time.Minute
	idleTimeout       = 5 * time.Minute
)

// maxConns bounds the agent's connections the proxy serves at once: each
// holds a file descriptor of ralph's, two with its upstream one, and an
// agent that opened connections without end would leave ralph none to
// write its state with. The ones past it wait in the socket's backlog.
const maxConns = 512

// Serve serves the proxy on ln until ctx is done or ln is closed, and
// then closes every connection it opened, the agent's and the upstream
// ones, before it returns. Either ending returns nil; any other error of
// ln's is returned.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := newServer(p)
	var conns sync.WaitGroup // the agent's connections, each until its goroutine ends
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		// Every request's context ends with Serve, which is how handlers
		// holding a tunnel or a stream learn to let go.
		BaseContext: func(net.Listener) context.Context { return ctx },
		ConnState: func(_ net.Conn, state http.ConnState) {
			switch state { //nolint:exhaustive // only a connection's first and last states count
			case http.StateNew:
				conns.Add(1)
			case http.StateHijacked, http.StateClosed:
				conns.Done()
			}
		},
		// net/http's complaints would go to stderr, under the TUI, and may
		// quote a request's URL.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(netutil.LimitListener(ln, maxConns)) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
	}
	cancel()
	_ = srv.Close() // the listener, and every connection not hijacked
	if err == nil {
		err = <-served
	}
	conns.Wait()
	s.handlers.Wait() // hijacked ones end with their handler
	s.transport.CloseIdleConnections()
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// server is one Serve's proxy: the Proxy with its defaults filled in, and
// the transport whose connections Serve closes when it returns.
type server struct {
	policy    Policy
	resolve   func(ctx context.Context, host string) ([]netip.Addr, error)
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	decide    func(Decision)
	hostAddrs func() ([]netip.Addr, error)
	transport *http.Transport
	forwarder *httputil.ReverseProxy
	handlers  sync.WaitGroup
}

func newServer(p *Proxy) *server {
	s := &server{policy: p.Policy, resolve: p.Resolve, dial: p.Dial, decide: p.Decide, hostAddrs: p.HostAddrs}
	if s.hostAddrs == nil {
		s.hostAddrs = interfaceAddrs
	}
	if s.resolve == nil {
		s.resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if s.dial == nil {
		s.dial = (&net.Dialer{Timeout: dialTimeout}).DialContext
	}
	if s.decide == nil {
		s.decide = func(Decision) {}
	}
	s.transport = newTransport(s)
	s.forwarder = newForwarder(s)
	return s
}

// ServeHTTP answers one request from the agent: a CONNECT opens a tunnel,
// an absolute URL is forwarded, anything else is not a proxy request.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handlers.Add(1)
	defer s.handlers.Done()
	switch {
	case r.Method == http.MethodConnect:
		s.connect(w, r)
	case r.URL.IsAbs():
		s.forward(w, r)
	default:
		s.refuse(w, Decision{Method: r.Method, Reason: "not a proxy request: ask for an absolute URL (GET http://host/path) or CONNECT host:port"}, http.StatusBadRequest)
	}
}

// target is a host:port the policy allowed, with the addresses it was
// allowed at: the only ones the proxy dials for it.
type target struct {
	host  string
	port  int
	addrs []netip.Addr
}

// check decides whether the agent may go to host:port, tells Decide, and
// answers a refusal itself (ok is false then).
func (s *server) check(w http.ResponseWriter, r *http.Request, host string, port int) (t target, ok bool) {
	name, lit, isLit, err := parseHost(host)
	d := Decision{Method: r.Method, Host: name, Port: port}
	if err != nil {
		d.Reason = err.Error()
		s.refuse(w, d, http.StatusBadRequest)
		return target{}, false
	}
	if admitted, _ := s.policy.admit(name, port); !admitted {
		// Refused before it is looked up: a name the agent may not reach
		// does not leave the machine as a DNS query either.
		d.Reason, d.Denied = s.policy.notListed(name, port), true
		s.refuse(w, d, http.StatusForbidden)
		return target{}, false
	}
	addrs := []netip.Addr{lit}
	if !isLit {
		if addrs, err = s.lookup(r.Context(), name); err != nil {
			d.Reason = err.Error()
			s.refuse(w, d, http.StatusBadGateway)
			return target{}, false
		}
	}
	own, err := s.hostAddrs()
	if err != nil {
		// Not knowing the host's own addresses, none is known safe.
		d.Reason = "the host's own addresses cannot be listed: " + err.Error()
		s.refuse(w, d, http.StatusForbidden)
		return target{}, false
	}
	if ok, reason := s.policy.withHost(own).Check(name, port, addrs); !ok {
		d.Reason, d.Denied = reason, true
		s.refuse(w, d, http.StatusForbidden)
		return target{}, false
	}
	d.Allowed = true
	s.decide(d)
	return target{host: name, port: port, addrs: addrs}, true
}

// lookup resolves a host name once, into the unmapped addresses that are
// checked and then dialled.
func (s *server) lookup(ctx context.Context, name string) ([]netip.Addr, error) {
	addrs, err := s.resolve(ctx, name)
	if dnsErr := (*net.DNSError)(nil); errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		return nil, errors.New("no such host")
	}
	if err != nil {
		return nil, errors.New("could not look the host up: " + err.Error())
	}
	if len(addrs) == 0 {
		return nil, errors.New("no such host")
	}
	out := make([]netip.Addr, len(addrs))
	for i, a := range addrs {
		out[i] = a.Unmap()
	}
	return out, nil
}

// refuse tells Decide of a refusal and answers it with a short text.
func (s *server) refuse(w http.ResponseWriter, d Decision, status int) {
	s.decide(d)
	http.Error(w, "ralph egress proxy: "+d.Reason, status)
}

// dialTarget connects to the first of t's checked addresses that answers.
func (s *server) dialTarget(ctx context.Context, t target) (net.Conn, error) {
	var errs []error
	for _, a := range t.addrs {
		c, err := s.dial(ctx, "tcp", netip.AddrPortFrom(a, uint16(t.port)).String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// parsePortNumber reads a request's port: a decimal 1 to 65535.
func parsePortNumber(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || s[0] == '+' || s[0] == '-' {
		return 0, false
	}
	return n, true
}

// interfaceAddrs lists the addresses of the host's interfaces, unmapped.
func interfaceAddrs() ([]netip.Addr, error) {
	ifas, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range ifas {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr().Unmap())
		}
	}
	return out, nil
}

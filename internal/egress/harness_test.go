package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// world is the network the proxy sees in a test: host names resolve to
// made-up public addresses, and dialling one of those reaches a local
// server. Nothing else is reachable, so nothing leaves the machine.
type world struct {
	tb     testing.TB
	mu     sync.Mutex
	names  map[string][]netip.Addr
	routes map[string]string // checked IP:port -> the local server's address
	looked []string          // every name Resolve was asked for
	dialed []string          // every address Dial was asked for
}

func newWorld(tb testing.TB) *world {
	tb.Helper()
	return &world{tb: tb, names: map[string][]netip.Addr{}, routes: map[string]string{}}
}

// name makes host resolve to addrs.
func (w *world) name(host string, addrs ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range addrs {
		w.names[host] = append(w.names[host], netip.MustParseAddr(a))
	}
}

// route makes a dial of addr (IP:port) reach the server at real.
func (w *world) route(addr, real string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.routes[addr] = real
}

func (w *world) resolve(_ context.Context, host string) ([]netip.Addr, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.looked = append(w.looked, host)
	if addrs, ok := w.names[host]; ok {
		return addrs, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (w *world) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if _, err := netip.ParseAddrPort(addr); err != nil || network != "tcp" {
		w.tb.Errorf("the proxy dialled %s %q, not a checked IP:port", network, addr)
	}
	w.mu.Lock()
	w.dialed = append(w.dialed, addr)
	real, ok := w.routes[addr]
	w.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("dial %s: connection refused", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", real)
}

// lookups is every name Resolve was asked for so far.
func (w *world) lookups() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.looked...)
}

// decisions records what the proxy tells Decide.
type decisions struct {
	mu   sync.Mutex
	list []Decision
}

func (d *decisions) add(x Decision) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.list = append(d.list, x)
}

func (d *decisions) all() []Decision {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Decision(nil), d.list...)
}

// rig is a proxy served on a unix socket with a bridge in front of it on
// 127.0.0.1, as the sandbox uses them.
type rig struct {
	socket    string       // the proxy's unix socket
	bridge    string       // the bridge's 127.0.0.1:PORT
	decisions *decisions   // what Decide was told
	stop      func() error // cancels Serve and Bridge and waits for them
}

// startRig serves a proxy with the given policy in world w.
func startRig(tb testing.TB, w *world, allow ...string) *rig {
	tb.Helper()
	policy, err := Parse(allow)
	if err != nil {
		tb.Fatal(err)
	}
	r := &rig{decisions: &decisions{}}
	p := &Proxy{Policy: policy, Resolve: w.resolve, Dial: w.dial, Decide: r.decisions.add}
	return r.start(tb, p)
}

func (r *rig) start(tb testing.TB, p *Proxy) *rig {
	tb.Helper()
	r.socket = filepath.Join(tb.TempDir(), "egress.sock")
	pl, err := net.Listen("unix", r.socket)
	if err != nil {
		tb.Fatal(err)
	}
	bl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	r.bridge = bl.Addr().String()
	ctx, cancel := context.WithCancel(tb.Context())
	served, bridged := make(chan error, 1), make(chan error, 1)
	go func() { served <- p.Serve(ctx, pl) }()
	go func() { bridged <- Bridge(ctx, bl, r.socket) }()
	var once sync.Once
	var stopErr error
	r.stop = func() error {
		once.Do(func() {
			cancel()
			stopErr = errors.Join(<-served, <-bridged)
		})
		return stopErr
	}
	tb.Cleanup(func() {
		if err := r.stop(); err != nil {
			tb.Errorf("Serve and Bridge: %v", err)
		}
	})
	return r
}

// client is an HTTP client whose proxy is the bridge, trusting srv's
// certificate when srv is a TLS server.
func (r *rig) client(tb testing.TB, srv *httptest.Server, keepAlive bool) *http.Client {
	tb.Helper()
	proxy := &url.URL{Scheme: "http", Host: r.bridge}
	tr := &http.Transport{Proxy: http.ProxyURL(proxy), DisableKeepAlives: !keepAlive, DisableCompression: true}
	if srv != nil && srv.TLS != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	}
	tb.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// connect opens a tunnel to target through the bridge by hand, sending
// early (bytes that follow the CONNECT at once) with it, and returns the
// connection, its reader past the proxy's answer, and the answer's status.
func (r *rig) connect(tb testing.TB, target, early string) (net.Conn, *bufio.Reader, int) {
	tb.Helper()
	c, err := net.Dial("tcp", r.bridge)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n%s", target, target, early); err != nil {
		tb.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		tb.Fatal(err)
	}
	_ = resp.Body.Close() // a tunnel's answer has none; the tunnel's bytes follow
	return c, br, resp.StatusCode
}

// noLeaks fails the test if, once it is over and its cleanups have run,
// more goroutines are left than when it began. Goroutines of closed
// connections end a moment after the close, so it waits a little for
// them, as goleak does.
func noLeaks(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("%d goroutines left, %d before the test:\n%s", runtime.NumGoroutine(), before, buf)
				return
			}
			runtime.Gosched()
			time.Sleep(time.Millisecond)
		}
	})
}

// hostOf is the host:port of a test server.
func hostOf(srv *httptest.Server) string {
	return strings.TrimPrefix(strings.TrimPrefix(srv.URL, "https://"), "http://")
}

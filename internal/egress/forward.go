package egress

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"time"
)

// connect answers a CONNECT host:port: checks it, dials one of the
// checked addresses, answers 200 and copies bytes both ways until the
// two sides are done, or Serve is.
func (s *server) connect(w http.ResponseWriter, r *http.Request) {
	host, portText, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	port, ok := parsePortNumber(portText)
	if err != nil || !ok {
		s.refuse(w, Decision{Method: r.Method, Host: canonicalName(host), Reason: "CONNECT wants host:port, with a port from 1 to 65535"}, http.StatusBadRequest)
		return
	}
	t, ok := s.check(w, r, host, port)
	if !ok {
		return
	}
	up, err := s.dialTarget(r.Context(), t)
	if err != nil {
		http.Error(w, "ralph egress proxy: could not connect: "+err.Error(), http.StatusBadGateway)
		return
	}
	agent, buffered, err := http.NewResponseController(w).Hijack()
	if err != nil {
		_ = up.Close()
		http.Error(w, "ralph egress proxy: this connection cannot carry a tunnel", http.StatusInternalServerError)
		return
	}
	stop := context.AfterFunc(r.Context(), func() { _ = agent.Close(); _ = up.Close() })
	defer stop()
	// net/http may leave a deadline on a connection it hands over; a
	// tunnel has none.
	_ = agent.SetDeadline(time.Time{})
	if _, err := io.WriteString(agent, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		_ = agent.Close()
		_ = up.Close()
		return
	}
	// A client may send its first bytes (a TLS hello) without waiting for
	// the 200; net/http may have read them already.
	if n := buffered.Reader.Buffered(); n > 0 {
		early, _ := buffered.Peek(n)
		if _, err := up.Write(early); err != nil {
			_ = agent.Close()
			_ = up.Close()
			return
		}
	}
	join(agent, up)
}

// forward sends a plain HTTP request for an absolute URL on to a checked
// address, and its response back, streaming both.
func (s *server) forward(w http.ResponseWriter, r *http.Request) {
	port := 0
	switch r.URL.Scheme {
	case "http":
		port = 80
	case "https":
		port = 443
	default:
		s.refuse(w, Decision{Method: r.Method, Host: canonicalName(r.URL.Hostname()), Reason: "only http and https URLs can be forwarded"}, http.StatusBadRequest)
		return
	}
	if p := r.URL.Port(); p != "" {
		var ok bool
		if port, ok = parsePortNumber(p); !ok {
			s.refuse(w, Decision{Method: r.Method, Host: canonicalName(r.URL.Hostname()), Reason: "the port is not from 1 to 65535"}, http.StatusBadRequest)
			return
		}
	}
	t, ok := s.check(w, r, r.URL.Hostname(), port)
	if !ok {
		return
	}
	s.forwarder.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), targetKey{}, t)))
}

// targetKey carries a forwarded request's checked target to the
// transport's dial.
type targetKey struct{}

// newTransport makes the transport that forwards plain HTTP requests. It
// dials only the addresses a request was checked at; a connection it
// keeps for reuse goes to the same host and port, which the policy
// (fixed for Serve's life) allowed.
func newTransport(s *server) *http.Transport {
	return &http.Transport{
		Proxy: nil, // ralph's own proxy variables are not the agent's way out
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			t, ok := ctx.Value(targetKey{}).(target)
			if !ok {
				return nil, errors.New("a dial the policy did not check")
			}
			return s.dialTarget(ctx, t)
		},
		// The agent's bytes go through as they are: no gzip added and
		// taken off again on its behalf.
		DisableCompression:    true,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
	}
}

// newForwarder makes the reverse proxy that forwards plain HTTP requests.
// httputil.ReverseProxy removes the hop-by-hop headers (Proxy-Connection
// and Proxy-Authorization among them), streams bodies both ways and
// carries protocol upgrades such as websockets.
func newForwarder(s *server) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		// The outgoing request already has the absolute URL that was
		// checked; the agent's forwarded-for headers are already dropped
		// and none are added.
		Rewrite:    func(*httputil.ProxyRequest) {},
		Transport:  s.transport,
		BufferPool: &buffers{},
		ErrorLog:   log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the agent or Serve went away; nobody reads an answer
			}
			http.Error(w, "ralph egress proxy: could not forward: "+err.Error(), http.StatusBadGateway)
		},
	}
}

// join copies bytes between a and b both ways. When one side has no more
// to send, the other is told so (its write half is closed) and may still
// answer; when both are done, or either fails, both are closed.
func join(a, b net.Conn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		pipe(a, b)
	}()
	pipe(b, a)
	<-done
	_ = a.Close()
	_ = b.Close()
}

// pipe copies src to dst, then closes dst's write half; a failure closes
// both, which ends the other direction too.
func pipe(dst, src net.Conn) {
	if _, err := io.Copy(dst, src); err != nil {
		_ = dst.Close()
		_ = src.Close()
		return
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() == nil {
			return
		}
	}
	_ = dst.Close()
	_ = src.Close()
}

// buffers lends the forwarder the buffers it copies bodies through, so
// that a request does not cost a fresh one.
type buffers struct{ pool sync.Pool }

// bufferSize is the size of a copy buffer: io.Copy's.
const bufferSize = 32 << 10

func (b *buffers) Get() []byte {
	if buf, ok := b.pool.Get().(*[]byte); ok {
		return *buf
	}
	return make([]byte, bufferSize)
}

func (b *buffers) Put(buf []byte) { b.pool.Put(&buf) }

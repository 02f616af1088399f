package egress

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTunnelThroughTheBridge(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "hello from %s%s", r.Host, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	w := newWorld(t)
	w.name("api.example.com", "203.0.113.7")
	w.route("203.0.113.7:443", hostOf(srv))
	r := startRig(t, w, "api.example.com")

	client := r.client(t, srv, true)
	for range 2 { // the second request reuses the tunnel
		resp, err := client.Get("https://api.example.com/v1/messages?key=secret")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if got, want := string(body), "hello from api.example.com/v1/messages"; got != want {
			t.Errorf("body = %q, want %q", got, want)
		}
	}
	want := []Decision{{Method: http.MethodConnect, Host: "api.example.com", Port: 443, Allowed: true}}
	if diff := cmp.Diff(want, r.decisions.all()); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

func TestForwardPlainHTTP(t *testing.T) {
	t.Parallel()
	type seen struct {
		host, uri string
		header    http.Header
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Host, r.RequestURI, r.Header.Clone()}
		w.Header().Set("X-Upstream", "yes")
		_, _ = io.WriteString(w, "forwarded")
	}))
	t.Cleanup(srv.Close)
	w := newWorld(t)
	w.name("api.example.com", "203.0.113.7")
	w.route("203.0.113.7:8080", hostOf(srv))
	r := startRig(t, w, "api.example.com:8080")

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://user:pw@API.example.com.:8080/v1/items?token=secret", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
	req.Header.Set("Proxy-Connection", "keep-alive")
	req.Header.Set("X-Agent", "kept")
	resp, err := r.client(t, srv, true).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "forwarded" || resp.Header.Get("X-Upstream") != "yes" {
		t.Errorf("response = %s %q (X-Upstream %q), want 200 \"forwarded\" from upstream", resp.Status, body, resp.Header.Get("X-Upstream"))
	}
	s := <-got
	if s.host != "API.example.com.:8080" || s.uri != "/v1/items?token=secret" {
		t.Errorf("upstream saw Host %q, URI %q; want the agent's", s.host, s.uri)
	}
	for _, h := range []string{"Proxy-Authorization", "Proxy-Connection", "X-Forwarded-For", "Forwarded"} {
		if v, ok := s.header[h]; ok {
			t.Errorf("upstream saw %s: %q; want it dropped", h, v)
		}
	}
	if s.header.Get("X-Agent") != "kept" {
		t.Errorf("upstream saw X-Agent %q, want the agent's header kept", s.header.Get("X-Agent"))
	}
	want := []Decision{{Method: http.MethodGet, Host: "api.example.com", Port: 8080, Allowed: true}}
	if diff := cmp.Diff(want, r.decisions.all()); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		allow   []string
		request string // what the agent sends, through the bridge
		status  int
		want    Decision
	}{
		{
			name: "a host not listed", allow: []string{"api.example.com"},
			request: "CONNECT other.example.org:443 HTTP/1.1\r\nHost: other.example.org:443\r\n\r\n",
			status:  http.StatusForbidden,
			want:    Decision{Method: "CONNECT", Host: "other.example.org", Port: 443, Reason: "other.example.org:443 is not in sandbox.allow-hosts", Denied: true},
		},
		{
			name: "a port not listed", allow: []string{"api.example.com:443"},
			request: "CONNECT api.example.com:22 HTTP/1.1\r\nHost: api.example.com:22\r\n\r\n",
			status:  http.StatusForbidden,
			want:    Decision{Method: "CONNECT", Host: "api.example.com", Port: 22, Reason: "api.example.com:22 is not in sandbox.allow-hosts", Denied: true},
		},
		{
			name: "the host's loopback", allow: nil,
			request: "CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n",
			status:  http.StatusForbidden,
			want:    Decision{Method: "CONNECT", Host: "127.0.0.1", Port: 22, Reason: "127.0.0.1 is the host's loopback; name it in sandbox.allow-hosts to allow it", Denied: true},
		},
		{
			name: "the host's v6 loopback", allow: []string{"*"},
			request: "CONNECT [::1]:22 HTTP/1.1\r\nHost: [::1]:22\r\n\r\n",
			status:  http.StatusForbidden,
			want:    Decision{Method: "CONNECT", Host: "::1", Port: 22, Reason: "::1 is the host's loopback; name it in sandbox.allow-hosts to allow it", Denied: true},
		},
		{
			name: "a name rebound to loopback", allow: []string{"*"},
			request: "CONNECT rebind.example.com:443 HTTP/1.1\r\nHost: rebind.example.com:443\r\n\r\n",
			status:  http.StatusForbidden,
			want: Decision{Method: "CONNECT", Host: "rebind.example.com", Port: 443,
				Reason: "rebind.example.com resolves to 127.0.0.1, the host's loopback; name rebind.example.com or 127.0.0.1 in sandbox.allow-hosts to allow it", Denied: true},
		},
		{
			name: "a name too long to be one", allow: []string{"*"},
			request: "CONNECT " + strings.Repeat("a", 70000) + ".example.com:443 HTTP/1.1\r\nHost: x:443\r\n\r\n",
			status:  http.StatusBadRequest,
			want:    Decision{Method: "CONNECT", Port: 443, Reason: "not a host name (letters, digits, '-' and '_' in labels of at most 63, 253 in all)"},
		},
		{
			name: "a name with a terminal's escape sequence", allow: []string{"*"},
			request: "CONNECT api\u009b2J.example.com:443 HTTP/1.1\r\nHost: x:443\r\n\r\n",
			status:  http.StatusBadRequest,
			want:    Decision{Method: "CONNECT", Port: 443, Reason: "not a host name (letters, digits, '-' and '_' in labels of at most 63, 253 in all)"},
		},
		{
			name: "no such host", allow: []string{"*"},
			request: "CONNECT gone.example.com:443 HTTP/1.1\r\nHost: gone.example.com:443\r\n\r\n",
			status:  http.StatusBadGateway,
			want:    Decision{Method: "CONNECT", Host: "gone.example.com", Port: 443, Reason: "no such host"},
		},
		{
			name: "unreachable", allow: []string{"api.example.com"},
			request: "CONNECT api.example.com:444 HTTP/1.1\r\nHost: api.example.com:444\r\n\r\n",
			status:  http.StatusBadGateway,
			want:    Decision{Method: "CONNECT", Host: "api.example.com", Port: 444, Allowed: true},
		},
		{
			name: "no port", allow: nil,
			request: "CONNECT api.example.com HTTP/1.1\r\nHost: api.example.com\r\n\r\n",
			status:  http.StatusBadRequest,
			want:    Decision{Method: "CONNECT", Host: "api.example.com", Reason: "CONNECT wants host:port, with a port from 1 to 65535"},
		},
		{
			name: "port 0", allow: nil,
			request: "CONNECT api.example.com:0 HTTP/1.1\r\nHost: api.example.com:0\r\n\r\n",
			status:  http.StatusBadRequest,
			want:    Decision{Method: "CONNECT", Host: "api.example.com", Reason: "CONNECT wants host:port, with a port from 1 to 65535"},
		},
		{
			name: "plain http to a host not listed", allow: []string{"api.example.com"},
			request: "POST http://user:pw@other.example.org/secret/path?token=secret HTTP/1.1\r\nHost: other.example.org\r\nAuthorization: Bearer secret\r\nContent-Length: 0\r\n\r\n",
			status:  http.StatusForbidden,
			want:    Decision{Method: "POST", Host: "other.example.org", Port: 80, Reason: "other.example.org:80 is not in sandbox.allow-hosts", Denied: true},
		},
		{
			name: "plain http to the loopback", allow: nil,
			request: "GET http://127.0.0.1:8080/secret HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
			status:  http.StatusForbidden,
			want:    Decision{Method: "GET", Host: "127.0.0.1", Port: 8080, Reason: "127.0.0.1 is the host's loopback; name it in sandbox.allow-hosts to allow it", Denied: true},
		},
		{
			name: "a scheme that is not forwarded", allow: nil,
			request: "GET ftp://api.example.com/file HTTP/1.1\r\nHost: api.example.com\r\n\r\n",
			status:  http.StatusBadRequest,
			want:    Decision{Method: "GET", Host: "api.example.com", Reason: "only http and https URLs can be forwarded"},
		},
		{
			name: "not a proxy request", allow: nil,
			request: "GET /secret?token=secret HTTP/1.1\r\nHost: api.example.com\r\n\r\n",
			status:  http.StatusBadRequest,
			want:    Decision{Method: "GET", Reason: "not a proxy request: ask for an absolute URL (GET http://host/path) or CONNECT host:port"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			w.name("api.example.com", "203.0.113.7")
			w.name("other.example.org", "203.0.113.8")
			w.name("rebind.example.com", "127.0.0.1")
			r := startRig(t, w, tt.allow...)
			c, err := net.Dial("tcp", r.bridge)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Close() }()
			if _, err := io.WriteString(c, tt.request); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Errorf("status = %s, want %d", resp.Status, tt.status)
			}
			if tt.want.Reason != "" && !strings.Contains(string(body), tt.want.Reason) {
				t.Errorf("body = %q, want it to say %q", body, tt.want.Reason)
			}
			got := r.decisions.all()
			if diff := cmp.Diff([]Decision{tt.want}, got); diff != "" {
				t.Errorf("decisions (-want +got):\n%s", diff)
			}
			if s := fmt.Sprint(got); strings.Contains(s, "secret") || strings.Contains(s, "user") {
				t.Errorf("a decision carries the request's path, query, headers or user: %s", s)
			}
			if looked := w.lookups(); slices.Contains(looked, "other.example.org") {
				t.Errorf("the proxy looked up a host it may not reach: %q", looked)
			}
		})
	}
}

func TestDecideIsToldOfEveryRequest(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	tls := httptest.NewTLSServer(srv.Config.Handler)
	t.Cleanup(tls.Close)
	w := newWorld(t)
	w.name("api.example.com", "203.0.113.7")
	w.name("www.example.com", "203.0.113.8")
	w.route("203.0.113.7:80", hostOf(srv))
	w.route("203.0.113.7:443", hostOf(tls))
	r := startRig(t, w, "api.example.com")
	client := r.client(t, tls, false) // a new connection, and CONNECT, for each

	urls := []string{"http://api.example.com/", "https://api.example.com/", "http://www.example.com/", "https://www.example.com/"}
	const rounds = 8
	var wg sync.WaitGroup
	for i := range rounds * len(urls) {
		wg.Go(func() {
			resp, err := client.Get(urls[i%len(urls)])
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		})
	}
	wg.Wait()
	count := map[Decision]int{}
	for _, d := range r.decisions.all() {
		count[d]++
	}
	want := map[Decision]int{
		{Method: "GET", Host: "api.example.com", Port: 80, Allowed: true}:                                                                  rounds,
		{Method: "CONNECT", Host: "api.example.com", Port: 443, Allowed: true}:                                                             rounds,
		{Method: "GET", Host: "www.example.com", Port: 80, Reason: "www.example.com:80 is not in sandbox.allow-hosts", Denied: true}:       rounds,
		{Method: "CONNECT", Host: "www.example.com", Port: 443, Reason: "www.example.com:443 is not in sandbox.allow-hosts", Denied: true}: rounds,
	}
	if diff := cmp.Diff(want, count); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

// pattern is n deterministic bytes, made as they are read: a block of a
// prime length, over and over, so that a byte out of place shows.
type pattern struct{ n, off int64 }

const patternBlock = 4093

func (p *pattern) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	var block [patternBlock]byte
	for i := range block {
		block[i] = byte(i * 131 >> 3)
	}
	b = b[:min(int64(len(b)), p.n-p.off)]
	for done := 0; done < len(b); {
		done += copy(b[done:], block[(p.off+int64(done))%patternBlock:])
	}
	p.off += int64(len(b))
	return len(b), nil
}

func TestLargeBodiesStream(t *testing.T) {
	t.Parallel()
	const size = 16 << 20
	release := make(chan struct{})
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost: // the upload's hash
			h := sha256.New()
			n, err := io.Copy(h, r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			_, _ = fmt.Fprintf(w, "%d %x", n, h.Sum(nil))
		default: // a first part, and the rest once the client has it
			_, _ = io.CopyN(w, &pattern{n: size}, 1<<20)
			http.NewResponseController(w).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
			p := &pattern{n: size, off: 1 << 20}
			_, _ = io.Copy(w, p)
		}
	})
	plain := httptest.NewServer(handler)
	t.Cleanup(plain.Close)
	tls := httptest.NewTLSServer(handler)
	t.Cleanup(tls.Close)
	w := newWorld(t)
	w.name("api.example.com", "203.0.113.7")
	w.route("203.0.113.7:80", hostOf(plain))
	w.route("203.0.113.7:443", hostOf(tls))
	r := startRig(t, w, "api.example.com")
	client := r.client(t, tls, true)
	h := sha256.New()
	_, _ = io.Copy(h, &pattern{n: size})
	wantUpload := fmt.Sprintf("%d %x", size, h.Sum(nil))

	for _, base := range []string{"http://api.example.com", "https://api.example.com"} {
		t.Run(base, func(t *testing.T) {
			resp, err := client.Post(base+"/upload", "application/octet-stream", &pattern{n: size})
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if string(body) != wantUpload {
				t.Errorf("upload: upstream read %q, want %q", body, wantUpload)
			}

			// A proxy that held the response back would never pass the
			// first part on: the rest waits for the client to have it.
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/download", nil)
			resp, err = client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			first := make([]byte, 1<<20)
			if _, err := io.ReadFull(resp.Body, first); err != nil {
				t.Fatalf("the first part did not arrive before the rest: %v", err)
			}
			select {
			case release <- struct{}{}:
			case <-ctx.Done():
				t.Fatal("the server never waited for the first part to arrive")
			}
			rest, err := io.Copy(io.Discard, resp.Body)
			if err != nil || rest != size-1<<20 {
				t.Errorf("download: %d bytes after the first part (%v), want %d", rest, err, size-1<<20)
			}
		})
	}
}

func TestWebsocketUpgradeIsForwarded(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" {
			http.Error(w, "upgrade to echo", http.StatusBadRequest)
			return
		}
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer func() { _ = c.Close() }()
		_, _ = io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		_, _ = io.Copy(c, brw)
	}))
	t.Cleanup(srv.Close)
	w := newWorld(t)
	w.name("ws.example.com", "203.0.113.7")
	w.route("203.0.113.7:80", hostOf(srv))
	r := startRig(t, w, "ws.example.com")

	c, err := net.Dial("tcp", r.bridge)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_, _ = io.WriteString(c, "GET http://ws.example.com/socket HTTP/1.1\r\nHost: ws.example.com\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // a 101 has none; the echoed bytes follow
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status = %s, want 101", resp.Status)
	}
	for _, msg := range []string{"ping", "pong and more"} {
		_, _ = io.WriteString(c, msg)
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(br, got); err != nil || string(got) != msg {
			t.Errorf("echo = %q (%v), want %q", got, err, msg)
		}
	}
}

// serveOnce accepts one connection on a new 127.0.0.1 listener, reads
// all the client sends until it closes its side, then answers with what
// it got and closes.
func serveOnce(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { _ = ln.Close(); <-done })
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer func() { _ = c.Close() }()
		got, _ := io.ReadAll(c)
		_, _ = fmt.Fprintf(c, "got %d: %s", len(got), got)
	}()
	return ln.Addr().String()
}

func TestTunnelCarriesEarlyBytesAndHalfClose(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.name("raw.example.com", "203.0.113.7")
	w.route("203.0.113.7:7000", serveOnce(t))
	r := startRig(t, w, "raw.example.com:7000")

	c, br, status := r.connect(t, "raw.example.com:7000", "hello") // sent before the 200
	if status != http.StatusOK {
		t.Fatalf("CONNECT: %d, want 200", status)
	}
	_, _ = io.WriteString(c, ", world")
	// The agent is done sending; the server reads to the end, and still
	// answers.
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(br)
	if err != nil || string(got) != "got 12: hello, world" {
		t.Errorf("answer = %q (%v), want %q", got, err, "got 12: hello, world")
	}
}

func TestDialTriesEachCheckedAddress(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "second")
	}))
	t.Cleanup(srv.Close)
	w := newWorld(t)
	w.name("api.example.com", "2001:db8::7", "203.0.113.7")
	w.route("203.0.113.7:80", hostOf(srv))
	r := startRig(t, w, "api.example.com")
	resp, err := r.client(t, srv, false).Get("http://api.example.com/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(body) != "second" {
		t.Errorf("body = %q, want the second address's", body)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if diff := cmp.Diff([]string{"[2001:db8::7]:80", "203.0.113.7:80"}, w.dialed); diff != "" {
		t.Errorf("dialled (-want +got):\n%s", diff)
	}
}

func TestDefaultsReachANamedLoopback(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "local")
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(hostOf(srv))
	policy, err := Parse([]string{"127.0.0.1:" + port})
	if err != nil {
		t.Fatal(err)
	}
	r := (&rig{decisions: &decisions{}}).start(t, &Proxy{Policy: policy})
	resp, err := r.client(t, srv, false).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(body) != "local" {
		t.Errorf("body = %q, want %q", body, "local")
	}
}

// holdOnce accepts one connection on a new 127.0.0.1 listener and reads
// it to the end, but closes it only when release is closed: a server that
// never lets go of its side. It returns the listener's address and a
// channel closed once it is gone.
func holdOnce(t *testing.T, release <-chan struct{}) (addr string, gone <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		_ = ln.Close()
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, c)
		<-release
		_ = c.Close()
	}()
	return ln.Addr().String(), done
}

// TestStopClosesEverything is not parallel: it counts goroutines.
func TestStopClosesEverything(t *testing.T) {
	streaming := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stream" {
			_, _ = io.WriteString(w, "start")
			http.NewResponseController(w).Flush()
			close(streaming)
			<-r.Context().Done() // until the proxy lets go
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	noLeaks(t)

	w := newWorld(t)
	release := make(chan struct{})
	held, heldGone := holdOnce(t, release)
	w.name("api.example.com", "203.0.113.7")
	w.route("203.0.113.7:80", hostOf(srv))
	w.route("203.0.113.7:443", held)
	r := startRig(t, w, "api.example.com")
	client := r.client(t, srv, true)

	// A response in the middle of its body.
	stream, err := client.Get("http://api.example.com/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stream.Body.Close() }()
	<-streaming
	// An idle keep-alive connection, on the agent's side and upstream.
	resp, err := client.Get("http://api.example.com/")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	// An open tunnel, to a server that would hold it open forever, and
	// whose agent has stopped sending.
	tunnel, tunnelReader, status := r.connect(t, "api.example.com:443", "")
	if status != http.StatusOK {
		t.Fatalf("CONNECT: %d, want 200", status)
	}
	_ = tunnel.(*net.TCPConn).CloseWrite()

	stopped := make(chan error, 1)
	go func() { stopped <- r.stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("stop: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve and Bridge did not return in 30s of being stopped")
	}
	_, _ = io.Copy(io.Discard, tunnelReader) // ends: the bridge closed it
	if _, err := io.Copy(io.Discard, stream.Body); err == nil {
		t.Error("the streaming response ended cleanly; want it cut off when the proxy stopped")
	}
	close(release)
	<-heldGone
}

func TestServeAndBridgeEndWhenTheirListenerCloses(t *testing.T) {
	t.Parallel()
	socket := filepath.Join(t.TempDir(), "egress.sock")
	pl, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	bl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served, bridged := make(chan error, 1), make(chan error, 1)
	go func() { served <- (&Proxy{}).Serve(t.Context(), pl) }()
	go func() { bridged <- Bridge(t.Context(), bl, socket) }()
	_ = pl.Close()
	_ = bl.Close()
	if err := <-served; err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
	if err := <-bridged; err != nil {
		t.Errorf("Bridge = %v, want nil", err)
	}
}

func TestBridgeClosesTheAgentsConnectionWhenTheProxyIsGone(t *testing.T) {
	t.Parallel()
	bl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	bridged := make(chan error, 1)
	go func() { bridged <- Bridge(ctx, bl, filepath.Join(t.TempDir(), "none.sock")) }()
	c, err := net.Dial("tcp", bl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Errorf("read %d bytes from a bridge with no proxy; want the connection closed", n)
	}
	cancel()
	if err := <-bridged; err != nil {
		t.Errorf("Bridge = %v, want nil", err)
	}
}

package egress

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// benchRig is a proxy and bridge in front of a plain and a TLS server,
// which api.example.com reaches on ports 80 and 443.
type benchRig struct {
	plain, tls *httptest.Server
	rig        *rig
}

func newBenchRig(b *testing.B, handler http.Handler) *benchRig {
	b.Helper()
	br := &benchRig{plain: httptest.NewServer(handler), tls: httptest.NewTLSServer(handler)}
	b.Cleanup(br.plain.Close)
	b.Cleanup(br.tls.Close)
	w := newWorld(b)
	w.name("api.example.com", "203.0.113.7")
	w.route("203.0.113.7:80", hostOf(br.plain))
	w.route("203.0.113.7:443", hostOf(br.tls))
	policy, err := Parse([]string{"api.example.com"})
	if err != nil {
		b.Fatal(err)
	}
	br.rig = (&rig{}).start(b, &Proxy{Policy: policy, Resolve: w.resolve, Dial: w.dial, Decide: func(Decision) {}})
	return br
}

// client is a client of srv, direct or through the bridge, reusing
// connections or not.
func (br *benchRig) client(b *testing.B, srv *httptest.Server, proxied, keepAlive bool) (*http.Client, string) {
	b.Helper()
	scheme := "http"
	if srv.TLS != nil {
		scheme = "https"
	}
	if proxied {
		return br.rig.client(b, srv, keepAlive), scheme + "://api.example.com"
	}
	c := srv.Client()
	tr := c.Transport.(*http.Transport).Clone()
	tr.DisableKeepAlives = !keepAlive
	tr.DisableCompression = true
	b.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}, srv.URL
}

func get(b *testing.B, c *http.Client, url string) int64 {
	b.Helper()
	resp, err := c.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %s, %v", url, resp.Status, err)
	}
	return n
}

// BenchmarkRequest is one small GET, direct and through the bridge and
// proxy: over a kept connection, over a new one each time, and over HTTPS
// with a new connection (a fresh CONNECT and TLS handshake) each time,
// which is what each new HTTPS connection of the agent costs.
func BenchmarkRequest(b *testing.B) {
	br := newBenchRig(b, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	for _, tc := range []struct {
		name      string
		tls       bool
		keepAlive bool
	}{
		{"http/keepalive", false, true},
		{"http/new-conn", false, false},
		{"https/keepalive", true, true},
		{"https/new-conn", true, false},
	} {
		for _, proxied := range []bool{false, true} {
			name := "direct/" + tc.name
			if proxied {
				name = "proxied/" + tc.name
			}
			b.Run(name, func(b *testing.B) {
				srv := br.plain
				if tc.tls {
					srv = br.tls
				}
				c, base := br.client(b, srv, proxied, tc.keepAlive)
				b.ReportAllocs()
				for b.Loop() {
					get(b, c, base+"/v1/ping")
				}
			})
		}
	}
	b.Run("direct/tcp-new-conn", func(b *testing.B) { benchTunnel(b, false) })
	b.Run("proxied/connect-new-conn", func(b *testing.B) { benchTunnel(b, true) })
}

// benchTunnel opens a TCP connection to an echo server, directly or with
// a CONNECT through the bridge, and sends one byte back and forth: the
// cost of a tunnel without TLS or HTTP on top.
func benchTunnel(b *testing.B, proxied bool) {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	b.Cleanup(func() { _ = ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	w := newWorld(b)
	w.name("echo.example.com", "203.0.113.9")
	w.route("203.0.113.9:7", ln.Addr().String())
	policy, _ := Parse([]string{"echo.example.com:7"})
	r := (&rig{}).start(b, &Proxy{Policy: policy, Resolve: w.resolve, Dial: w.dial, Decide: func(Decision) {}})
	one := make([]byte, 1)
	b.ReportAllocs()
	for b.Loop() {
		var c net.Conn
		if proxied {
			c, err = net.Dial("tcp", r.bridge)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.WriteString(c, "CONNECT echo.example.com:7 HTTP/1.1\r\nHost: echo.example.com:7\r\n\r\n"); err != nil {
				b.Fatal(err)
			}
			// The answer is exactly this long; reading no further
			// leaves the tunnel's bytes in the connection.
			const answer = "HTTP/1.1 200 Connection established\r\n\r\n"
			got := make([]byte, len(answer))
			if _, err := io.ReadFull(c, got); err != nil || string(got) != answer {
				b.Fatalf("CONNECT: %q, %v", got, err)
			}
		} else if c, err = net.Dial("tcp", ln.Addr().String()); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Write([]byte{'x'}); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, one); err != nil {
			b.Fatal(err)
		}
		_ = c.Close()
	}
}

// BenchmarkDownload is one 64 MiB response, direct and through the bridge
// and proxy, over plain HTTP (forwarded) and HTTPS (tunnelled).
func BenchmarkDownload(b *testing.B) {
	const size = 64 << 20
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	br := newBenchRig(b, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(size))
		for range size / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	for _, scheme := range []string{"http", "https"} {
		for _, proxied := range []bool{false, true} {
			name := "direct/" + scheme
			if proxied {
				name = "proxied/" + scheme
			}
			b.Run(name, func(b *testing.B) {
				srv := br.plain
				if scheme == "https" {
					srv = br.tls
				}
				c, base := br.client(b, srv, proxied, true)
				b.SetBytes(size)
				b.ReportAllocs()
				for b.Loop() {
					if n := get(b, c, base+"/blob"); n != size {
						b.Fatalf("read %d bytes, want %d", n, size)
					}
				}
			})
		}
	}
}

package cli

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-loop/ralph/internal/session"
)

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ralph test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestServeOffLoopbackWithTLSAndTheToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	f, _, errOut := testFactory(t, dir, "XDG_STATE_HOME="+state)
	certFile, keyFile, pool := selfSigned(t, dir)
	ctx, cancel := context.WithCancel(t.Context())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	var url string
	go func() {
		done <- session.ServeRuns(ctx, f.Host, session.ServeConfig{Addr: "0.0.0.0:0", TLSCert: certFile, TLSKey: keyFile, Registry: true,
			Ready: func(a string) { addr <- a }}, func(u string) { url = u })
	}()
	a := <-addr
	_, port, _ := net.SplitHostPort(a)
	if b, err := os.ReadFile(filepath.Join(state, "ralph", "serve-url")); err != nil || strings.Contains(string(b), "token") {
		t.Errorf("serve-url (the page runs name in notifications): %q, %v; want it without the token", b, err)
	}
	base := "https://127.0.0.1:" + port + "/"
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer client.CloseIdleConnections()

	tok, err := os.ReadFile(filepath.Join(state, "ralph", "serve-token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tok))
	if fi, _ := os.Stat(filepath.Join(state, "ralph", "serve-token")); fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	if !strings.HasPrefix(url, "https://") || !strings.HasSuffix(url, "?token="+token) {
		t.Errorf("announced %q, want the https address with the token", url)
	}
	for _, c := range []struct {
		auth string
		want int
	}{{"", http.StatusUnauthorized}, {"Bearer nope", http.StatusUnauthorized}, {"Bearer " + token, http.StatusOK}} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"api/v1/runs", http.NoBody)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("Authorization %q: %d, want %d", c.auth, resp.StatusCode, c.want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(state, "ralph", "serve-url")); err == nil {
		t.Error("serve-url left behind")
	}
	// The second start reuses the token and prints it no more.
	ctx2, cancel2 := context.WithCancel(t.Context())
	go func() {
		done <- session.ServeRuns(ctx2, f.Host, session.ServeConfig{Addr: "0.0.0.0:0", Ready: func(string) { cancel2() }}, func(u string) { url = u })
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if strings.Contains(url, token) || errOut.Len() != 0 {
		t.Errorf("the second start announced %q (stderr %q): the token is printed once", url, errOut)
	}
}

func TestRunServeTakesAnAddressOrNone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		args        []string
		serve, plan string
	}{
		{[]string{"--serve"}, DefaultServeAddr, ""},
		{[]string{"--serve", "prd.json"}, DefaultServeAddr, "prd.json"},
		{[]string{"--serve", "127.0.0.1:9000"}, "127.0.0.1:9000", ""},
		{[]string{"--serve", "0.0.0.0:9000", "prd.json"}, "0.0.0.0:9000", "prd.json"},
		{[]string{"--serve=:9000", "prd.json"}, ":9000", "prd.json"},
		{[]string{"prd.json"}, "", "prd.json"},
	} {
		f, _, _ := testFactory(t, dir)
		var got *runOptions
		cmd := newCmdRun(f, func(o *runOptions) error { got = o; return nil })
		cmd.SetArgs(c.args)
		cmd.SetOut(f.IO.Out)
		cmd.SetErr(f.IO.ErrOut)
		if err := cmd.Execute(); err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		if got.Serve != c.serve || got.Plan != c.plan {
			t.Errorf("%q: serve %q, plan %q; want %q, %q", c.args, got.Serve, got.Plan, c.serve, c.plan)
		}
	}
}

// TestServeReadOnlyAddressHasNoToken: a read-only server on loopback
// takes no control, so the address it prints carries no token.
func TestServeReadOnlyAddressHasNoToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f, _, _ := testFactory(t, dir, "XDG_STATE_HOME="+filepath.Join(dir, "state"))
	for _, readOnly := range []bool{false, true} {
		ctx, cancel := context.WithCancel(t.Context())
		var url string
		err := session.ServeRuns(ctx, f.Host, session.ServeConfig{Addr: "127.0.0.1:0", ReadOnly: readOnly, Ready: func(string) { cancel() }},
			func(u string) { url = u })
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(url, "token"); got == readOnly {
			t.Errorf("read-only %v: announced %q", readOnly, url)
		}
	}
}

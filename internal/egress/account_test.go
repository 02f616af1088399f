package egress

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A gate run's own listener: what the policy denied there is its account,
// each host once; what was denied on the run's other listener (the
// agent's, at the same time) is not, nor is a name that does not resolve
// (no key would allow it); Decide is still told of everything.
func TestServeAccountKeepsItsListenersDenials(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	w := newWorld(t)
	w.name("api.example.com", "203.0.113.7")
	w.route("203.0.113.7:80", hostOf(srv))
	policy, err := Parse([]string{"api.example.com", "gone.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	told := &decisions{}
	p := &Proxy{Policy: policy, Resolve: w.resolve, Dial: w.dial, Decide: told.add}
	ctx, cancel := context.WithCancel(t.Context())
	shared, own := listenUnix(t), listenUnix(t)
	var a Account
	served := make(chan error, 2)
	go func() { served <- p.Serve(ctx, shared) }()
	go func() { served <- p.ServeAccount(ctx, own, &a) }()
	t.Cleanup(func() {
		cancel()
		for range 2 {
			if err := <-served; err != nil {
				t.Error(err)
			}
		}
	})

	get := func(ln net.Listener, target string) {
		tr := &http.Transport{
			Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "proxy"}),
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", ln.Addr().String())
			},
		}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Get(target)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	get(shared, "http://agent.example.com/")
	get(own, "http://api.example.com/")
	get(own, "http://gate.example.com/")
	get(own, "http://gate.example.com/again")
	get(own, "http://gone.example.com/")

	want := []Decision{{Method: "GET", Host: "gate.example.com", Port: 80, Reason: "gate.example.com:80 is not in sandbox.allow-hosts", Denied: true}}
	if diff := cmp.Diff(want, a.Denied()); diff != "" {
		t.Errorf("the gate's account (-want +got):\n%s", diff)
	}
	if got := len(told.all()); got != 5 {
		t.Errorf("Decide was told of %d requests, want 5: %v", got, told.all())
	}
	if got := want[0].Where(); got != "gate.example.com:80" {
		t.Errorf("Where() = %q", got)
	}
}

func listenUnix(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "p.sock"))
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

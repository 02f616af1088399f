package egress

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// inNetns marks the test binary re-run in a network namespace of its own.
const inNetns = "RALPH_EGRESS_TEST_NETNS"

// The proxy refuses the host's own public address (issue 37): a service
// listening on all interfaces is reachable there, as on loopback. In a
// network namespace the test makes, 198.51.100.7 (a public-looking
// address) is on one end of a veth pair; a server listens on all
// interfaces; through the proxy, with the system's resolver, dialler and
// interface list, the agent reaches it only when allow-hosts names it.
func TestHostOwnAddressRefused(t *testing.T) {
	if os.Getenv(inNetns) == "" {
		if os.Geteuid() != 0 {
			t.Skip("making a network namespace needs root")
		}
		if _, err := exec.LookPath("ip"); err != nil {
			t.Skip("no ip command to make the veth pair")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestHostOwnAddressRefused$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), inNetns+"=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("in a network namespace of its own: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "--- PASS: TestHostOwnAddressRefused") {
			t.Fatalf("the test did not run in the namespace:\n%s", out)
		}
		return
	}
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", "ralph0", "type", "veth", "peer", "name", "ralph1"},
		{"addr", "add", "198.51.100.7/24", "dev", "ralph0"},
		{"link", "set", "ralph0", "up"},
		{"link", "set", "ralph1", "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "the host's service") })}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	target := fmt.Sprintf("http://198.51.100.7:%d/", ln.Addr().(*net.TCPAddr).Port)

	get := func(allow ...string) (int, string) {
		policy, err := Parse(allow)
		if err != nil {
			t.Fatal(err)
		}
		r := (&rig{decisions: &decisions{}}).start(t, &Proxy{Policy: policy})
		resp, err := r.client(t, nil, false).Get(target)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get(); code != http.StatusForbidden || !strings.Contains(body, "one of the host's own addresses") {
		t.Errorf("the host's own address, not named: %d %q, want 403 naming it", code, body)
	}
	if code, body := get("198.51.100.7"); code != http.StatusOK || body != "the host's service" {
		t.Errorf("the host's own address, named: %d %q, want 200", code, body)
	}
}

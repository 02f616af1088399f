package session

import (
	"net"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/egress"
	"github.com/ralph-loop/ralph/internal/sandbox"
)

func TestRefusalNamesWhereItWent(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		d    egress.Decision
		want string
	}{
		{egress.Decision{Host: "api.example.com", Port: 443, Reason: "api.example.com:443 is not in sandbox.allow-hosts"},
			"api.example.com:443 is not in sandbox.allow-hosts"},
		{egress.Decision{Host: "db.example.com", Port: 5432, Reason: "db.example.com resolves to 10.0.0.1, a private address"},
			"db.example.com resolves to 10.0.0.1, a private address"},
		// A reason that holds the host's name but not as its subject.
		{egress.Decision{Host: "host", Port: 443, Reason: "no such host"}, "host:443: no such host"},
		{egress.Decision{Host: "o", Port: 80, Reason: "only http and https URLs can be forwarded"},
			"o:80: only http and https URLs can be forwarded"},
		{egress.Decision{Reason: "not a proxy request"}, "not a proxy request"},
	} {
		where := net.JoinHostPort(tt.d.Host, strconv.Itoa(tt.d.Port))
		if got := refusal(where, tt.d); got != tt.want {
			t.Errorf("refusal(%+v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// A refusal is reported with the log's lock let go: the report may come
// back to the log (here, the warning ends the watch) without a deadlock.
func TestNetworkLogReportsOutsideItsLock(t *testing.T) {
	t.Parallel()
	n := &networkLog{}
	var end func() []string
	var got []string
	end = n.Watch(func(msg string) { got = append(got, msg); _ = end() })
	n.decide(egress.Decision{Host: "api.example.com", Port: 443, Reason: "api.example.com:443 is not in sandbox.allow-hosts"})
	want := "the sandbox's proxy refused a connection: api.example.com:443 is not in sandbox.allow-hosts"
	if len(got) != 1 || got[0] != want {
		t.Errorf("reported %q, want [%q]", got, want)
	}
}

// config names the sandbox's modes and networks without importing the
// sandbox package: the values must be the ones it knows, or a mode
// config accepts would reach the sandbox as one it does not.
func TestConfigSpeaksTheSandboxsModes(t *testing.T) {
	t.Parallel()
	if diff := cmp.Diff([]string{sandbox.ModeAuto, sandbox.KindBwrap, sandbox.KindSandboxExec, sandbox.KindNone},
		config.SandboxModes()); diff != "" {
		t.Errorf("sandbox.mode values (-sandbox +config):\n%s", diff)
	}
	want := []string{sandbox.NetworkProxy, sandbox.NetworkOpen, sandbox.NetworkOff}
	if diff := cmp.Diff(want, config.NetworkModes(), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("sandbox.network values (-sandbox +config):\n%s", diff)
	}
}

package session

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/egress"
	"github.com/ralph-loop/ralph/internal/sandbox"
)

// egressRun is ralph's proxy for one run's sandbox (sandbox.network =
// "proxy"): the children's only way out, serving on a unix socket outside
// anything they can write (bwrap binds it in) and, for sandbox-exec, on
// the host's loopback.
type egressRun struct {
	box     sandbox.Egress
	network *networkLog
	stop    func()
	// gate opens a gate run's own listener (sandbox.GateEgress).
	gate sandbox.GateEgress
}

// startEgress starts the proxy for a run whose agents are agents, with
// cfg's allow-hosts: an empty list is any public host; a list gets each
// agent's own API added.
func startEgress(ctx context.Context, cfg config.Config, kind string, agents []string) (*egressRun, error) {
	allow := slices.Clone(cfg.Sandbox.AllowHosts)
	if len(allow) > 0 {
		for _, name := range agents {
			if spec, ok := agent.Lookup(name); ok {
				allow = append(allow, spec.Hosts...)
			}
		}
	}
	policy, err := egress.Parse(allow)
	if err != nil {
		return nil, err
	}
	box := sandbox.Egress{NoProxy: noProxy(policy)}
	ln, dir, err := egressListener(kind, &box)
	if err != nil {
		return nil, fmt.Errorf("the sandbox's proxy: %w", err)
	}

	log := &networkLog{}
	p := &egress.Proxy{Policy: policy, Decide: log.decide}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan struct{})
	go func() {
		// An error of the listener's ends the proxy; the children then
		// find their requests refused, which they report.
		_ = p.Serve(pctx, ln)
		close(served)
	}()
	return &egressRun{box: box, network: log, stop: func() {
		cancel()
		<-served
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}, gate: gateEgress(pctx, p, kind, box)}, nil
}

// gateEgress opens, for each gate run, a listener of the proxy p of its
// own, like the run's (box), so that what the proxy denies there is that
// gate run's (egress.Account).
func gateEgress(ctx context.Context, p *egress.Proxy, kind string, box sandbox.Egress) sandbox.GateEgress {
	return func() (sandbox.Egress, func() []sandbox.Refusal, func(), error) {
		own := box
		ln, dir, err := egressListener(kind, &own)
		if err != nil {
			return sandbox.Egress{}, nil, nil, fmt.Errorf("the sandbox's proxy: %w", err)
		}
		var a egress.Account
		gctx, cancel := context.WithCancel(ctx)
		served := make(chan struct{})
		go func() { _ = p.ServeAccount(gctx, ln, &a); close(served) }()
		denied := func() []sandbox.Refusal {
			var out []sandbox.Refusal
			for _, d := range a.Denied() {
				out = append(out, sandbox.Refusal{Host: d.Where(), Key: "sandbox.allow-hosts", Reason: refusal(d.Where(), d)})
			}
			return out
		}
		return own, denied, func() {
			cancel()
			<-served
			if dir != "" {
				_ = os.RemoveAll(dir)
			}
		}, nil
	}
}

// egressListener is where the proxy serves a sandbox of kind, set in box:
// bubblewrap's children reach a unix socket bound in, through ralph's
// bridge (box.Socket, box.Bridge), in a directory of its own (dir, which
// the caller removes); sandbox-exec's share the host's loopback, and the
// profile lets them reach this address and nothing else (box.Addr).
func egressListener(kind string, box *sandbox.Egress) (ln net.Listener, dir string, err error) {
	if kind == sandbox.KindSandboxExec {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, "", err
		}
		box.Addr = ln.Addr().String()
		return ln, "", nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, "", fmt.Errorf("ralph's own executable: %w", err)
	}
	// Not in the project, nor anywhere a child may write: a child that
	// could put a socket of its own there would be the proxy.
	dir, err = os.MkdirTemp(socketParent(), "ralph-egress-")
	if err != nil {
		return nil, "", err
	}
	if ln, err = net.Listen("unix", filepath.Join(dir, "proxy.sock")); err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", err
	}
	box.Socket, box.Bridge = ln.Addr().String(), exe
	return ln, dir, nil
}

// socketParent is where the proxy's socket directory goes: the
// temporary directory, or /tmp when that would make a path longer than a
// unix socket's (108 bytes on Linux, 104 on macOS).
func socketParent() string {
	if d := os.TempDir(); len(d) < 60 {
		return d
	}
	return "/tmp"
}

// noProxy are the hosts a child reaches on its own loopback rather than
// through the proxy (its own servers, for its tests): the loopback names,
// but those the policy names, which the user meant the host's.
func noProxy(policy egress.Policy) []string {
	var out []string
	for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
		if !policy.Named(h) {
			out = append(out, h)
		}
	}
	return out
}

// networkLog is the loop's account of the proxy's decisions (loop.Network):
// every iteration being watched gets each decision (with --parallel,
// those of all the iterations running: the proxy cannot tell whose a
// connection is), and each refusal is reported as it happens.
type networkLog struct {
	mu       sync.Mutex
	watchers map[*hostAccount]func(string)
	// unwatched reports a refusal while no iteration's agent runs (a
	// gate's, a reviewer's); nil drops it.
	unwatched func(string)
}

// reportUnwatched sets where a refusal goes while no iteration's agent
// runs.
func (n *networkLog) reportUnwatched(report func(string)) {
	n.mu.Lock()
	n.unwatched = report
	n.mu.Unlock()
}

// maxHosts bounds an iteration's account: past it, hosts are counted.
const maxHosts = 500

// hostAccount is one iteration's hosts.
type hostAccount struct {
	hosts map[string]*hostLine
	more  int
}

type hostLine struct {
	allowed bool
	reason  string
	count   int
}

// Watch implements loop.Network.
func (n *networkLog) Watch(refused func(string)) func() []string {
	a := &hostAccount{hosts: map[string]*hostLine{}}
	n.mu.Lock()
	if n.watchers == nil {
		n.watchers = map[*hostAccount]func(string){}
	}
	n.watchers[a] = refused
	n.mu.Unlock()
	return func() []string {
		n.mu.Lock()
		delete(n.watchers, a)
		n.mu.Unlock()
		return a.lines()
	}
}

// decide takes one of the proxy's decisions, from any goroutine.
func (n *networkLog) decide(d egress.Decision) {
	where := net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
	msg := ""
	if !d.Allowed {
		msg = "the sandbox's proxy refused a connection: " + refusal(where, d)
	}
	// The reports go out once the lock is let go: they reach the
	// renderer, which no other connection's decision need wait for.
	var report []func(string)
	n.mu.Lock()
	if msg != "" && len(n.watchers) == 0 && n.unwatched != nil {
		report = append(report, n.unwatched)
	}
	for a, refused := range n.watchers {
		a.add(where, d)
		if msg != "" {
			report = append(report, refused)
		}
	}
	n.mu.Unlock()
	for _, r := range report {
		r(msg)
	}
}

// refusal says why d was refused, naming where it went: the proxy's
// reasons that name the host start with it.
func refusal(where string, d egress.Decision) string {
	if d.Host == "" || strings.HasPrefix(d.Reason, d.Host+" ") || strings.HasPrefix(d.Reason, d.Host+":") {
		return d.Reason
	}
	return where + ": " + d.Reason
}

func (a *hostAccount) add(where string, d egress.Decision) {
	key := where
	if !d.Allowed {
		key += " refused"
	}
	l, ok := a.hosts[key]
	if !ok {
		if len(a.hosts) >= maxHosts {
			a.more++
			return
		}
		l = &hostLine{allowed: d.Allowed, reason: refusal(where, d)}
		a.hosts[key] = l
	}
	l.count++
}

// lines are the account as the transcript gets it, one line per host,
// sorted.
func (a *hostAccount) lines() []string {
	var out []string
	for key, l := range a.hosts {
		where, _, _ := strings.Cut(key, " ")
		line := "ralph: network: " + where + " allowed"
		if !l.allowed {
			line = "ralph: network: refused: " + l.reason
		}
		if l.count > 1 {
			line += fmt.Sprintf(" (%d times)", l.count)
		}
		out = append(out, line)
	}
	sort.Strings(out)
	if a.more > 0 {
		out = append(out, fmt.Sprintf("ralph: network: and %d more requests to other hosts", a.more))
	}
	return out
}

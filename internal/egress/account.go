package egress

import (
	"context"
	"net"
	"slices"
	"strconv"
	"sync"
)

// maxDenied bounds an Account: a gate that asked for a thousand hosts is
// told by the first few.
const maxDenied = 10

// Account is what the proxy denied on one listener of its own: a quality
// gate run's, so that a refusal is known to be that run's and no other's
// (an agent's, another worktree's gate), whatever goes through the proxy
// at the same time.
type Account struct {
	mu     sync.Mutex
	denied []Decision
	more   int
}

// Denied are the hosts the policy refused on the account's listener,
// each once (host and port), in the order first asked.
func (a *Account) Denied() []Decision {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.denied)
}

// More is how many further hosts were denied past those Denied lists.
func (a *Account) More() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.more
}

func (a *Account) add(d Decision) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if slices.ContainsFunc(a.denied, func(x Decision) bool { return x.Host == d.Host && x.Port == d.Port }) {
		return
	}
	if len(a.denied) >= maxDenied {
		a.more++
		return
	}
	a.denied = append(a.denied, d)
}

// ServeAccount serves ln as Serve does, with p's policy and p.Decide told
// of every decision, and a told of what the policy denied there.
func (p *Proxy) ServeAccount(ctx context.Context, ln net.Listener, a *Account) error {
	q := *p
	q.Decide = func(d Decision) {
		if d.Denied {
			a.add(d)
		}
		if p.Decide != nil {
			p.Decide(d)
		}
	}
	return q.Serve(ctx, ln)
}

// Where is d's host and port as one address ("host:port", "[::1]:80").
func (d Decision) Where() string {
	return net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
}

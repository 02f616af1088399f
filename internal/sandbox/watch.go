package sandbox

import (
	"strings"

	"github.com/ralph-loop/ralph/internal/proc"
)

// Refusal is something the sandbox refused a child, as ralph saw it
// itself (never as the child's output tells it): a host its proxy
// denied. A quality gate that fails after one failed because of the
// sandbox, perhaps, but not because of the work it judged.
type Refusal struct {
	// Host is the "host:port" the proxy denied.
	Host string
	// Key is the configuration key that would allow it
	// (sandbox.allow-hosts).
	Key string
	// Reason is the proxy's own words, naming Host.
	Reason string
}

// String says what was refused and the key that would allow it.
func (r Refusal) String() string {
	if strings.Contains(r.Reason, r.Key) {
		return r.Reason
	}
	return r.Reason + " (" + r.Key + ")"
}

// GateEgress opens a listener of the proxy's own for one gate run, so
// that what it denies there is known to be that run's (with --parallel,
// the agents and other worktrees' gates go through the same proxy at the
// same time): the Egress the run's box uses, what was denied there so
// far, and stop, which ends the listener.
type GateEgress func() (e Egress, denied func() []Refusal, stop func(), err error)

// WithGateEgress returns the box with each gate run (Watch) going out
// through a listener of its own, opened by open.
func (b *Box) WithGateEgress(open GateEgress) *Box {
	c := *b
	c.gateEgress = open
	return &c
}

// Watch returns the box one gate run works in, and what that run was
// refused, to be asked once the run has ended (it then lets go of what
// Watch opened; call it exactly once). Without a proxy of the gate's own
// it is the box itself, refused nothing.
func (b *Box) Watch() (proc.Wrapper, func() []Refusal, error) {
	if b.gateEgress == nil || b.policy.Network != NetworkProxy {
		return b, func() []Refusal { return nil }, nil
	}
	e, denied, stop, err := b.gateEgress()
	if err != nil {
		return nil, nil, err
	}
	c := b.WithEgress(e)
	c.gateEgress = nil
	return c, func() []Refusal {
		out := denied()
		stop()
		return out
	}, nil
}

package egress

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

// Bridge carries each connection accepted on ln (127.0.0.1:PORT in the
// sandbox's network namespace) over to the proxy's unix socket, which is
// mounted into the sandbox, copying bytes both ways. It returns when ctx
// is done or ln is closed, having closed ln and every connection. Either
// ending returns nil.
func Bridge(ctx context.Context, ln net.Listener, socket string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	var conns sync.WaitGroup
	defer conns.Wait()
	defer cancel() // before the wait: every connection closes on it
	var dialer net.Dialer
	var backoff time.Duration
	for {
		agent, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			// Out of file descriptors, say: wait for some to be freed
			// rather than spin or give up the sandbox's only way out.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			if !sleep(ctx, backoff) {
				return nil
			}
			continue
		}
		backoff = 0
		conns.Go(func() {
			defer func() { _ = agent.Close() }()
			proxy, err := dialer.DialContext(ctx, "unix", socket)
			if err != nil {
				return // the agent sees its connection closed
			}
			stop := context.AfterFunc(ctx, func() { _ = agent.Close(); _ = proxy.Close() })
			defer stop()
			join(agent, proxy)
		})
	}
}

// sleep waits for d, or until ctx is done (then it returns false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

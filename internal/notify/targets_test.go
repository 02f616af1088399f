package notify

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestCommandFailures: a command that fails or outlives the delivery's
// timeout is an error that says so, with the end of what it printed.
func TestCommandFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, cmd string
		timeout   time.Duration
		want      []string
	}{
		{name: "passes", cmd: `test "$RALPH_EVENT" = started`, timeout: time.Minute},
		{name: "fails", cmd: "echo oops >&2; exit 3", timeout: time.Minute, want: []string{"exited 3", "oops"}},
		{name: "times out", cmd: "echo waiting; sleep 60", timeout: 100 * time.Millisecond, want: []string{"timed out", "waiting"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), tt.timeout)
			defer cancel()
			err := command{cmd: tt.cmd, dir: t.TempDir(), env: os.Environ()}.send(ctx, Event{Event: "started"})
			if len(tt.want) == 0 {
				if err != nil {
					t.Errorf("send = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("send = nil, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("send = %q, want it to say %q", err, w)
				}
			}
		})
	}
}

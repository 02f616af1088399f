package cli

import (
	"os"

	"github.com/ralph-loop/ralph/internal/session"
)

// Factory is what commands share: the host every run is assembled on
// (streams, environment, global flags, approvals) and which ralph this is.
type Factory struct {
	*session.Host
	Build BuildInfo // which ralph this is (ralph version)
}

// IO is where a command reads and writes; tests use buffers.
type IO = session.IO

func defaultFactory() *Factory {
	return &Factory{Host: session.NewHost(os.Stdin, os.Stdout, os.Stderr)}
}

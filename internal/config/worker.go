package config

import (
	"strings"
	"time"
)

// Worker is the [worker] section: `ralph run --worker`, one of many
// workers on one plan that coordinate through a shared git remote.
type Worker struct {
	// Remote is the git remote the workers share.
	Remote string `toml:"remote"`
	// Lease is how long a claim holds without a heartbeat; a claim whose
	// lease ran out may be taken over by another worker.
	Lease Duration `toml:"lease"`
	// ID names the worker in claims and events; empty: host name and pid.
	ID string `toml:"id"`
}

// DefaultLease is a claim's lease when none is configured: long enough for
// a heartbeat (every third of it) to get through a slow remote, short
// enough that a killed worker's task is taken over soon.
const DefaultLease = 2 * time.Minute

// workerFields are the keys of the [worker] section.
func workerFields() []field {
	return []field{
		{key: "worker.remote", ptr: func(c *Config) any { return &c.Worker.Remote },
			doc: "[worker] the git remote that --worker claims tasks on and lands results to",
			check: func(c *Config) string {
				if strings.TrimSpace(c.Worker.Remote) == "" {
					return "want a remote name, such as origin"
				}
				return ""
			},
			flag: runFlag("remote", "", "the git remote `NAME` workers claim tasks on and land results to (with --worker)")},
		{key: "worker.lease", ptr: func(c *Config) any { return &c.Worker.Lease },
			doc: "[worker] how long a claim holds without a heartbeat before another worker may take the task over",
			check: func(c *Config) string {
				if c.Worker.Lease.D() < time.Second {
					return "want at least 1s"
				}
				return ""
			},
			flag: runFlag("lease", "", "how long a worker's claim holds without a heartbeat (with --worker)")},
		{key: "worker.id", ptr: func(c *Config) any { return &c.Worker.ID },
			doc:  "[worker] the worker's name in claims and events; empty: host name and pid",
			flag: runFlag("worker-id", "", "the worker's `NAME` in claims and events (default: host name and pid)")},
	}
}

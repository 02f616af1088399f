package serve

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
)

// maxSockPath is what a unix socket's path may hold (sun_path: 108 bytes
// on Linux, 104 on macOS, with its terminating NUL).
const maxSockPath = 103

// sockPath returns a path for the socket at path that fits in sun_path:
// path itself, or on Linux, for a deep project, the same file through
// /proc/self/fd of its directory opened here. done releases what it
// opened.
func sockPath(path string) (short string, done func()) {
	if len(path) <= maxSockPath || runtime.GOOS != "linux" {
		return path, func() {}
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return path, func() {}
	}
	return "/proc/self/fd/" + strconv.Itoa(int(d.Fd())) + "/" + filepath.Base(path), func() { _ = d.Close() }
}

//go:build !linux

package sandbox

import (
	"fmt"
	"io"
	"net"
)

// LayersMain is LayersCommand, which only Linux's bubblewrap sandbox
// uses: elsewhere it fails.
func LayersMain(_ []string, errOut io.Writer) int {
	fmt.Fprintln(errOut, "ralph "+LayersCommand+": Linux only")
	return 1
}

// received is what no other platform's LayersCommand sends.
func received(*net.UnixListener) (int, bool) { return 0, false }

func closeFD(int) {}

// alive keeps every directory elsewhere: no gate run makes one there.
func alive(int) bool { return true }

//go:build !linux

package sandbox

import (
	"fmt"
	"io"
)

// LayersMain is LayersCommand, which only Linux's bubblewrap sandbox
// uses: elsewhere it fails.
func LayersMain(_ []string, errOut io.Writer) int {
	fmt.Fprintln(errOut, "ralph "+LayersCommand+": Linux only")
	return 1
}

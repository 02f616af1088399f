package session

import (
	"os"
	"testing"

	"github.com/ralph-loop/ralph/internal/ui"
)

// /dev/null is a character device but no terminal: `ralph run > /dev/null`
// must get plain lines, not the TUI.
func TestDevNullIsNoTerminal(t *testing.T) {
	t.Parallel()
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	if fi, err := devNull.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Skipf("%s is not a character device here (%v)", os.DevNull, err)
	}

	f := &Host{IO: newIO(os.Stdin, devNull, os.Stderr), Environ: func() []string { return []string{"TERM=xterm-256color"} }}
	if f.IO.TTY {
		t.Fatalf("%s as stdout counts as a terminal", os.DevNull)
	}
	r := screenRenderer(f, false, false, runView{dir: t.TempDir()})
	defer r.Close(nil)
	if _, ok := r.(*ui.Plain); !ok {
		t.Errorf("renderer with stdout on %s is %T, want *ui.Plain", os.DevNull, r)
	}
}

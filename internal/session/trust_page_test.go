package session

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the side ralph writes to (a terminal)
// and the side that reads what it shows.
func openPTY(t *testing.T) (tty, pty *os.File) {
	t.Helper()
	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skip("no pseudo-terminal: ", err)
	}
	n, err := unix.IoctlGetInt(int(pty.Fd()), unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(int(pty.Fd()), unix.TIOCSPTLCK, 0)
	}
	if err != nil {
		pty.Close()
		t.Skip("no pseudo-terminal: ", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		pty.Close()
		t.Skip("no pseudo-terminal: ", err)
	}
	t.Cleanup(func() { tty.Close(); pty.Close() })
	return tty, pty
}

// On a terminal the diff of an unapproved file goes through the pager,
// whole (issue 37, attack 4: it was cut at 200 lines), every escape in it
// visible; the error then says it was shown.
func TestUntrustedDiffIsPagedOnATerminal(t *testing.T) {
	t.Parallel()
	tty, pty := openPTY(t)
	dir := t.TempDir()
	cfg := dir + "/ralph.toml"
	var b strings.Builder
	b.WriteString("# ok\x1b[1A\x1b[2K\x1b[8m\n[notify]\ncommand = \"touch pwned\"\n")
	for i := range 300 {
		fmt.Fprintf(&b, "# filler %d\n", i)
	}
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/usr/bin:/bin", "PAGER=cat", "XDG_STATE_HOME=" + dir + "/state"}
	f := &Host{IO: &IO{In: strings.NewReader(""), Out: io.Discard, ErrOut: tty}, Environ: func() []string { return env }}
	err := f.approve(cfg, []byte(b.String()))
	u, ok := IsUntrusted(err)
	if !ok {
		t.Fatalf("approve: %v", err)
	}
	read := make(chan []byte)
	go func() {
		shown, _ := io.ReadAll(pty) // EIO once the terminal's side is closed
		read <- shown
	}()
	f.ShowUntrusted(t.Context(), u)
	tty.Close()
	shown := <-read
	for _, want := range []string{`+# ok\x1b[1A\x1b[2K\x1b[8m`, "+[notify]", "+# filler 299"} {
		if !bytes.Contains(shown, []byte(want)) {
			t.Errorf("the pager did not show %q; it showed:\n%s", want, shown)
		}
	}
	if bytes.Contains(shown, []byte("\x1b")) {
		t.Error("the pager was given an escape")
	}
	if msg := u.Error(); !strings.Contains(msg, "the diff is shown above") || strings.Contains(msg, "filler") {
		t.Errorf("the error after paging: %s", msg)
	}
}

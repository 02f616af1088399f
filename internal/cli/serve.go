package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ralph-loop/ralph/internal/session"
)

// DefaultServeAddr is where ralph serve listens unless told otherwise:
// this machine only.
const DefaultServeAddr = "127.0.0.1:8484"

const serveLong = `Serve a page that shows every run it watches, live, and steers them:
the given project directories (default: the project here, once it has
run), plus every ralph run started by this user (they register in
$XDG_STATE_HOME/ralph/runs/ while they run).

It listens on 127.0.0.1:8484 unless --addr says otherwise. An address
that is not loopback needs a token: generated on first use, printed once,
kept in $XDG_STATE_HOME/ralph/serve-token (mode 0600); every request must
carry it. Control (pause, resume, skip, stop, answer) is POST only, from
the page's own origin; --read-only refuses it. --tls-cert and --tls-key
serve HTTPS.`

type serveOptions struct {
	f        *Factory
	Dirs     []string
	Addr     string
	ReadOnly bool
	TLSCert  string
	TLSKey   string
	// ready, when set, is told the address the server listens on (tests).
	ready func(addr string)
}

func newCmdServe(f *Factory, runF func(*serveOptions) error) *cobra.Command {
	opts := &serveOptions{f: f}
	cmd := &cobra.Command{
		Use:   "serve [DIR...]",
		Short: "Watch and steer runs from a browser",
		Long:  serveLong,
		RunE: func(cmd *cobra.Command, a []string) error {
			opts.Dirs = a
			if (opts.TLSCert == "") != (opts.TLSKey == "") {
				return usageError(errors.New("--tls-cert and --tls-key go together"))
			}
			if runF != nil {
				return runF(opts)
			}
			return runServe(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Addr, "addr", DefaultServeAddr, "listen on `ADDR` (host:port); not loopback needs the token")
	fl.BoolVar(&opts.ReadOnly, "read-only", false, "show runs, refuse control")
	fl.StringVar(&opts.TLSCert, "tls-cert", "", "serve HTTPS with this certificate `FILE`")
	fl.StringVar(&opts.TLSKey, "tls-key", "", "the certificate's key `FILE`")
	return cmd
}

func runServe(ctx context.Context, opts *serveOptions) error {
	note := "ralph serve: stopping; the runs it shows go on"
	opts.f.SetStopNote(note)
	dirs := opts.Dirs
	if len(dirs) == 0 {
		if d, err := opts.f.ProjectDir(); err == nil && exists(filepath.Join(d, ".ralph")) {
			dirs = []string{d}
		}
	}
	return session.ServeRuns(ctx, opts.f.Host, session.ServeConfig{Addr: opts.Addr, Dirs: dirs, ReadOnly: opts.ReadOnly,
		TLSCert: opts.TLSCert, TLSKey: opts.TLSKey, Registry: true, Ready: opts.ready}, func(url string) {
		fmt.Fprintf(opts.f.IO.ErrOut, "ralph serve: %s\n", url)
	})
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

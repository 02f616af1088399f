package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/serve"
)

// ServeConfig is one server: ralph serve's, or ralph run --serve's.
type ServeConfig struct {
	Addr            string
	Dirs            []string
	ReadOnly        bool
	TLSCert, TLSKey string
	Registry        bool
	Ready           func(addr string)
}

// ServeRuns serves the page until ctx is done; announce is told the
// address to open (with the token the first time it is made).
func ServeRuns(ctx context.Context, f *Host, c ServeConfig, announce func(url string)) error {
	srv, ln, url, err := startServer(ctx, f, c)
	if err != nil {
		return err
	}
	announce(url)
	if c.Registry {
		// Runs name this page in their questions' notifications.
		if d := serve.StateDir(f.Environ()); d != "" && os.MkdirAll(d, 0o700) == nil {
			p := filepath.Join(d, "serve-url")
			if os.WriteFile(p, []byte(plainURL(url)+"\n"), 0o600) == nil {
				defer os.Remove(p)
			}
		}
	}
	if c.Ready != nil {
		c.Ready(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- serveOn(srv, ln, c) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		_ = srv.Close()
		return nil
	case err := <-errc:
		return err
	}
}

// startServer listens and builds the server; it serves nothing yet.
func startServer(ctx context.Context, f *Host, c ServeConfig) (*http.Server, net.Listener, string, error) {
	stateDir := serve.StateDir(f.Environ())
	opts := serve.Options{Dirs: c.Dirs, ReadOnly: c.ReadOnly}
	if c.Registry {
		opts.StateDir = stateDir
	}
	scheme := "http"
	if c.TLSCert != "" {
		scheme = "https"
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return nil, nil, "", fmt.Errorf("serve: %w", err)
	}
	url := scheme + "://" + ln.Addr().String() + "/"
	switch {
	case serve.IsLoopback(c.Addr) && c.ReadOnly:
		// Reading is open to this machine, and there is no control to
		// guard: the address needs no token.
	case serve.IsLoopback(c.Addr):
		// Reading is open to this machine, control is not: an agent on
		// it reaches loopback too. The token is this server's alone, and
		// the address printed carries it to the page.
		var raw [24]byte
		_, _ = rand.Read(raw[:])
		opts.ControlToken = hex.EncodeToString(raw[:])
		url += "?token=" + opts.ControlToken
	default:
		tok, made, err := serveToken(stateDir)
		if err != nil {
			_ = ln.Close()
			return nil, nil, "", err
		}
		opts.Token = tok
		if made {
			url += "?token=" + tok
		} else {
			url += " (token in " + filepath.Join(stateDir, "serve-token") + ": open " + url + "?token=TOKEN)"
		}
	}
	s := serve.New(opts)
	s.Start(ctx)
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	return srv, ln, url, nil
}

func serveOn(srv *http.Server, ln net.Listener, c ServeConfig) error {
	var err error
	if c.TLSCert != "" {
		err = srv.ServeTLS(ln, c.TLSCert, c.TLSKey)
	} else {
		err = srv.Serve(ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// serveToken returns the server's token, and whether it was made now
// (then, and only then, is it printed). It is kept in a 0600 file of the
// user's state directory.
func serveToken(stateDir string) (tok string, made bool, err error) {
	if stateDir == "" {
		return "", false, errors.New("serve: a non-loopback address needs a token, and there is no state directory to keep it in (set XDG_STATE_HOME or HOME)")
	}
	path := filepath.Join(stateDir, "serve-token")
	b, err := os.ReadFile(path)
	if err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		return strings.TrimSpace(string(b)), false, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", false, fmt.Errorf("serve: token: %w", err)
	}
	var raw [24]byte
	_, _ = rand.Read(raw[:])
	tok = hex.EncodeToString(raw[:])
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return "", false, fmt.Errorf("serve: token: %w", err)
	}
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", false, fmt.Errorf("serve: token: %w", err)
	}
	return tok, true, nil
}

// openChannel serves the run's control channel (.ralph/run.sock),
// registers the run in the user's registry, and with --serve starts the
// page. What cannot be set up is logged: the run goes on without it.
// The returned func undoes it all once the renderers are closed.
func openChannel(ctx context.Context, opts *Options, dir, runID string, steer *loop.Steering, stop func(),
	logger *slog.Logger) (*serve.Channel, func() string, func()) {
	stateDir := serve.StateDir(opts.f.Environ())
	pageURL := func() string { return servedURL(stateDir) }
	var ch *serve.Channel
	ctl := serve.Steer{Steering: steer, Stop: stop, Current: func() string {
		if ch == nil {
			return ""
		}
		return ch.Current()
	}}
	ch, err := serve.Listen(dir, serve.Info{RunID: runID, Dir: dir, PID: os.Getpid(), StartedAt: time.Now()}, ctl)
	if err != nil {
		logger.Warn("no control channel", "err", err)
		return nil, pageURL, func() {}
	}
	reg := stateDir
	if rel, err := filepath.Rel(dir, reg); err == nil && filepath.IsLocal(rel) {
		// A HOME inside the project (a test's, a container's): the
		// registry would be part of the project's tree.
		reg = ""
	}
	unregister, err := serve.Register(reg, serve.Entry{RunID: runID, Dir: dir,
		PID: os.Getpid(), StartedAt: time.Now(), Socket: ch.Path()})
	if err != nil {
		logger.Info("run not registered for ralph serve", "err", err)
	}
	undo := func() {
		unregister()
		ch.Close(nil)
	}
	if opts.Serve == "" {
		return ch, pageURL, undo
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := ServeConfig{Addr: opts.Serve, Dirs: []string{dir}}
	srv, ln, url, err := startServer(sctx, opts.f, c)
	if err != nil {
		cancel()
		fmt.Fprintln(opts.f.IO.ErrOut, "ralph: warning: --serve:", err)
		return ch, pageURL, undo
	}
	fmt.Fprintf(opts.f.IO.ErrOut, "ralph: the run is on %s\n", url)
	go func() { _ = serveOn(srv, ln, c) }()
	page := plainURL(url)
	return ch, func() string { return page }, func() {
		undo()
		cancel()
		_ = srv.Close()
	}
}

// plainURL is an address as announced, without its token or note: what a
// notification may name.
func plainURL(announced string) string {
	u, _, _ := strings.Cut(announced, "?")
	u, _, _ = strings.Cut(u, " ")
	return u
}

// servedURL is the page a ralph serve of this user serves, "" when none.
func servedURL(stateDir string) string {
	if stateDir == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(stateDir, "serve-url"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

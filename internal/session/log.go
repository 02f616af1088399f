package session

import (
	"log/slog"
	"os"
	"path/filepath"

	"github.com/ralph-loop/ralph/internal/projectfs"
)

// openLog opens .ralph/ralph.log for appending: ralph's own log, never the
// terminal (the TUI owns that). --debug adds the agent's events. It is
// opened beneath the project, so a ralph.log linked out (to ~/.bashrc) is
// refused rather than appended to.
func openLog(ralphDir string, debug bool) (*slog.Logger, func(), error) {
	f, err := projectfs.New(filepath.Dir(ralphDir)).OpenFile(filepath.Join(ralphDir, "ralph.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	level := slog.LevelInfo
	if debug {
		level = slog.LevelDebug
	}
	l := slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: level}))
	return l, func() { _ = f.Close() }, nil
}

package serve

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Entry is one live `ralph run` in the user's registry: one file
// $XDG_STATE_HOME/ralph/runs/<run_id>.json, written when the run starts
// and removed when it ends. An entry whose pid is gone is stale (the run
// was killed) and is removed by the next look.
type Entry struct {
	RunID     string    `json:"run_id"`
	Dir       string    `json:"dir"`
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"started_at"`
	Socket    string    `json:"socket"`
}

// StateDir is the user's ralph state directory: $XDG_STATE_HOME/ralph,
// or ~/.local/state/ralph; "" when neither can be told.
func StateDir(environ []string) string {
	get := func(name string) string {
		for i := len(environ) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(environ[i], name+"="); ok {
				return v
			}
		}
		return ""
	}
	if d := get("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "ralph")
	}
	if h := get("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "ralph")
	}
	return ""
}

// Register writes e into the registry of stateDir and returns what
// removes it.
func Register(stateDir string, e Entry) (unregister func(), err error) {
	if stateDir == "" {
		return func() {}, errors.New("no state directory (neither XDG_STATE_HOME nor HOME)")
	}
	dir := filepath.Join(stateDir, "runs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return func() {}, err
	}
	b, err := json.Marshal(e)
	if err != nil {
		return func() {}, err
	}
	path := filepath.Join(dir, e.RunID+".json")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return func() {}, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return func() {}, err
	}
	return func() { _ = os.Remove(path) }, nil
}

// Registered returns the live runs of the registry, oldest first, and
// removes the stale entries it finds.
func Registered(stateDir string) []Entry {
	if stateDir == "" {
		return nil
	}
	dir := filepath.Join(stateDir, "runs")
	names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var out []Entry
	for _, p := range names {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var e Entry
		if json.Unmarshal(b, &e) != nil || !alive(e.PID) {
			_ = os.Remove(p)
			continue
		}
		out = append(out, e)
	}
	return out
}

// alive reports whether a process with pid exists.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

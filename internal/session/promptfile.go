package session

import (
	"path/filepath"

	"github.com/ralph-loop/ralph/internal/projectfs"
)

// readPromptFile reads a prompt file the configuration names (prompt,
// review.prompt), relative to the project dir unless absolute. One in the
// project, which the agent can write, is read beneath it: a link out
// (to the user's SSH key, say) is refused and nothing of it reaches a
// prompt.
func readPromptFile(dir, name string) ([]byte, error) {
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	return projectfs.ReadNamed(dir, path)
}

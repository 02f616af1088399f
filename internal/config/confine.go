package config

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/pelletier/go-toml/v2"

	"github.com/ralph-loop/ralph/internal/projectfs"
)

// confined checks that the files a project file names for ralph to read
// stay in the project dir: a prompt = "/home/me/.ssh/id_ed25519", or a
// prompt file that is a symlink out of the project, would put what it
// leads to into the agent's prompt. data was applied without error.
func confined(name string, data []byte, dir string) errorList {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	entries, err := indexKeys(data)
	if err != nil {
		return nil
	}
	var file Config
	if err := toml.Unmarshal(data, &file); err != nil {
		return nil
	}
	var errs errorList
	for _, en := range entries {
		key := dotted(en.path)
		var value string
		switch key {
		case "prompt":
			value = file.Prompt
		case "review.prompt":
			value = file.Review.Prompt
		default:
			continue
		}
		if why := outside(value, dir); why != "" {
			errs.add(&Error{File: name, Line: en.line, Key: key,
				Msg: fmt.Sprintf("%s: %q %s: ralph reads it into the agents' prompts; keep it in the project", key, value, why)})
		}
	}
	return errs
}

// outside says how path (relative to dir, or absolute) leaves dir; ""
// when it does not. A path that does not exist yet is judged by its
// name alone (reading it fails anyway).
func outside(path, dir string) string {
	if path == "" {
		return ""
	}
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(dir, abs)
	}
	if !projectfs.New(dir).Contains(abs) {
		return "is outside the project " + dir
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return ""
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return ""
	}
	if !projectfs.New(realDir).Contains(real) {
		return "leads out of the project (to " + real + ")"
	}
	return ""
}

package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// Setting is one key of the merged config and where its value came from,
// as `ralph config` shows it.
type Setting struct {
	Key string `json:"key"`
	// Value is the value as TOML; a secret's is where it is set instead:
	// <set by RALPH_...> or <set in FILE>.
	Value string `json:"value"`
	// Source is "default", FILE:LINE, or the RALPH_ variable.
	Source string `json:"source"`
	// Default: the value is the default one.
	Default bool `json:"default"`
	Secret  bool `json:"secret,omitempty"`
	// Untrusted: the value comes from a project file the user has not
	// approved, which a run does not obey as it is.
	Untrusted bool `json:"untrusted,omitempty"`
}

// Explain loads the config as Load does, the project file approved or not
// (untrusted says it is not), and returns every key with its value and
// where it came from: the top-level keys in documentation order, then
// the [agents.NAME] fields that a file sets.
func Explain(opts LoadOptions, untrusted bool) ([]Setting, error) {
	opts.Approve = nil
	c, err := Load(opts)
	if err != nil {
		return nil, err
	}
	type origin struct {
		source    string
		untrusted bool
		file      string
	}
	from := map[string]origin{}
	var agentKeys []string
	for _, file := range []string{opts.UserFile, opts.ProjectFile} {
		if file == "" {
			continue
		}
		data, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		entries, _ := indexKeys(bytes.TrimPrefix(data, []byte("\uFEFF")))
		for _, en := range entries {
			key := dotted(en.path)
			if en.path[0] == "agents" && len(en.path) == 3 && !slices.Contains(agentKeys, key) {
				agentKeys = append(agentKeys, key)
			}
			from[key] = origin{source: file + ":" + strconv.Itoa(en.line),
				untrusted: untrusted && file == opts.ProjectFile, file: file}
		}
	}
	for _, f := range fields() {
		if name := envName(f.key); getenv(opts.Environ, name) != "" {
			from[f.key] = origin{source: name}
		}
	}
	d := Defaults()
	var out []Setting
	for _, f := range fields() {
		s := Setting{Key: f.key, Value: formatValue(f.ptr(&c)), Source: "default", Secret: f.secret}
		s.Default = s.Value == formatValue(f.ptr(&d))
		if o, ok := from[f.key]; ok {
			s.Source, s.Untrusted = o.source, o.untrusted
			if f.secret && !s.Default {
				s.Value = secretAt(o.source, o.file)
			}
		}
		out = append(out, s)
	}
	slices.Sort(agentKeys)
	for _, key := range agentKeys {
		path := strings.Split(key, ".")
		o := from[key]
		s := Setting{Key: key, Value: agentValue(c.Agents[path[1]], path[2]), Source: o.source, Untrusted: o.untrusted}
		if path[2] == "env" {
			// An agent's environment holds its API keys as often as not.
			s.Value, s.Secret = secretAt(o.source, o.file), true
		}
		out = append(out, s)
	}
	return out, nil
}

// secretAt is what a secret's value shows: where it is set.
func secretAt(source, file string) string {
	if file == "" {
		return "<set by " + source + ">"
	}
	return "<set in " + file + ">"
}

// agentValue is one field of an [agents.NAME] table as TOML.
func agentValue(a AgentConfig, field string) string {
	switch field {
	case "command":
		return strconv.Quote(a.Command)
	case "output":
		return strconv.Quote(a.Output)
	case "args":
		return formatValue(&a.Args)
	case "extra-args":
		return formatValue(&a.ExtraArgs)
	case "error-patterns":
		var parts []string
		for _, kind := range sortedKeys(a.ErrorPatterns) {
			p := a.ErrorPatterns[kind]
			parts = append(parts, kind+" = "+formatValue(&p))
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	}
	return ""
}

// SecretError is a credential written in a config file, which a project
// commits: each key is named with the variable to set instead.
type SecretError struct {
	File string
	Keys []string
	Line []int
}

func (e *SecretError) Error() string {
	parts := make([]string, len(e.Keys))
	for i, k := range e.Keys {
		parts[i] = fmt.Sprintf("%s:%d: %s holds a secret: set it in the environment (%s) instead, and remove it from the file",
			e.File, e.Line[i], k, envName(k))
	}
	return strings.Join(parts, "\n")
}

// CheckSecrets returns a SecretError when the config file data sets a
// key whose value is a credential (a webhook URL, a token); nil otherwise.
func CheckSecrets(name string, data []byte) error {
	entries, _ := indexKeys(bytes.TrimPrefix(data, []byte("\uFEFF")))
	e := &SecretError{File: name}
	for _, en := range entries {
		empty := en.kind == unstable.String && en.str == ""
		if f, ok := lookupField(dotted(en.path)); ok && f.secret && !empty && en.kind != unstable.Table {
			e.Keys, e.Line = append(e.Keys, f.key), append(e.Line, en.line)
		}
	}
	if len(e.Keys) == 0 {
		return nil
	}
	return e
}

// EnvName is the environment variable that sets key: max-iterations is
// RALPH_MAX_ITERATIONS.
func EnvName(key string) string { return envName(key) }

// CheckProjectSecrets is CheckSecrets for the project's configuration
// file (file, or dir's ralph.toml when file is ""), named as the project
// names it: a run commits the project's files, that one with them. A
// file outside the project, or gone, is not committed and passes.
func CheckProjectSecrets(dir, file string) error {
	abs, err := filepath.Abs(cmp.Or(file, filepath.Join(dir, "ralph.toml")))
	if err != nil {
		return nil //nolint:nilerr // no path: nothing in the project to commit
	}
	rel, err := filepath.Rel(dir, abs)
	if err != nil || !filepath.IsLocal(rel) {
		return nil //nolint:nilerr // not in the project: not committed with it
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil //nolint:nilerr // Load read it: gone since, nothing to commit
	}
	return CheckSecrets(rel, data)
}

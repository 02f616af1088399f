package config

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// LoadOptions says where Load finds settings.
type LoadOptions struct {
	// UserFile is the user's config file (see UserFile); empty for none.
	// A missing user file is not an error.
	UserFile string
	// ProjectFile is the project's ralph.toml, or the file given with
	// --config; empty for none. A missing project file is not an error
	// unless ProjectFileRequired is set.
	ProjectFile string
	// ProjectFileRequired makes a missing ProjectFile an error: set it when
	// the user named the file (--config FILE).
	ProjectFileRequired bool
	// Environ is the environment, as os.Environ returns it. Later entries
	// win over earlier ones.
	Environ []string
	// Approve, when set, is asked about the project file's content
	// before any of it is applied; its error stops Load and is returned
	// as it is. The agent ralph runs can write the project file: ralph
	// obeys it only at content the user approved (package trust).
	Approve func(path string, data []byte) error
	// ProjectDir, when set, is the project: the files the project file
	// names for ralph to read for itself (prompt, review.prompt) must be
	// in it, symlinks followed.
	ProjectDir string
}

// Load layers the settings: Defaults, then the user file, then the project
// file, then RALPH_* variables of the environment. Each layer overrides only
// the keys it sets; [agents.NAME] tables merge per agent and per field, and
// their env tables per variable. Agents are set in files only.
//
// Every value is checked where it is read, so errors name the file and line
// (or the variable) to fix; all problems found are returned together. Flags
// are applied by the caller afterwards with Config.Set.
func Load(opts LoadOptions) (Config, error) {
	c := Defaults()
	var errs errorList
	for _, file := range []struct {
		path     string
		required bool
	}{
		{opts.UserFile, false},
		{opts.ProjectFile, opts.ProjectFileRequired},
	} {
		if file.path == "" {
			continue
		}
		data, err := os.ReadFile(file.path)
		if errors.Is(err, fs.ErrNotExist) && !file.required {
			continue
		}
		if err != nil {
			return Config{}, err
		}
		if file.path == opts.ProjectFile && opts.Approve != nil {
			if err := opts.Approve(file.path, data); err != nil {
				return Config{}, err
			}
		}
		fileErrs := c.applyFile(file.path, data)
		if len(fileErrs) == 0 && file.path == opts.ProjectFile && opts.ProjectDir != "" {
			fileErrs = confined(file.path, data, opts.ProjectDir)
		}
		errs = append(errs, fileErrs...)
	}
	errs = append(errs, c.applyEnv(opts.Environ)...)
	if err := errs.err(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// CheckFile parses and checks one config file as Load would read it, and
// applies it to nothing: its problems name the file and line.
func CheckFile(name string, data []byte) error {
	c := Defaults()
	return c.applyFile(name, data).err()
}

// UserFile returns the user's config file: $XDG_CONFIG_HOME/ralph/config.toml,
// or ~/.config/ralph/config.toml; empty when the environment names no home.
// A relative XDG_CONFIG_HOME is ignored, as the XDG spec asks.
func UserFile(environ []string) string {
	if dir := getenv(environ, "XDG_CONFIG_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "ralph", "config.toml")
	}
	if home := getenv(environ, "HOME"); home != "" {
		return filepath.Join(home, ".config", "ralph", "config.toml")
	}
	return ""
}

// getenv returns the last value of name in environ.
func getenv(environ []string, name string) string {
	for i := len(environ) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(environ[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// applyEnv sets every top-level key whose RALPH_ variable is set and not
// empty (an empty variable counts as unset, as shells make it easy to
// leave one behind).
func (c *Config) applyEnv(environ []string) errorList {
	var errs errorList
	for _, f := range fields() {
		name := envName(f.key)
		v := getenv(environ, name)
		if v == "" {
			continue
		}
		if problem := setField(c, f, v); problem != "" {
			errs.add(&Error{Var: name, Key: f.key, Msg: problem})
		}
	}
	return errs
}

// applyFile decodes one TOML file onto c, key by key. On any problem c is
// left unchanged and the problems are returned.
//
// The document is read twice: go-toml decodes it (syntax errors, and
// unknown keys with DisallowUnknownFields, both with positions), and an
// index of every key it sets (tomlindex.go) gives what the decoder cannot:
// which keys are present, so that absent ones do not reset lower layers,
// the line of each, and the TOML type of each value, for exact type errors.
func (c *Config) applyFile(name string, data []byte) errorList {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	entries, indexErr := indexKeys(data)

	var file Config
	decodeErr := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields().EnableUnmarshalerInterface().Decode(&file)

	var errs errorList
	if indexErr == nil {
		errs = checkTypes(name, entries)
	}
	var strict *toml.StrictMissingError
	var decode *toml.DecodeError
	switch {
	case errors.As(decodeErr, &strict):
		for _, e := range strict.Errors {
			line, _ := e.Position()
			key := e.Key()
			valid := keyNames()
			if len(key) == 3 && key[0] == "agents" {
				valid = agentFieldNames()
			}
			if len(key) == 3 && key[0] == "prices" {
				valid = priceFieldNames()
			}
			errs.add(&Error{File: name, Line: line, Key: dotted(key), Msg: unknownKey(dotted(key), valid)})
		}
	case errors.As(decodeErr, &decode) && len(errs) == 0:
		// A syntax error, or a problem the type check does not know of
		// (a key defined twice, a table redefined).
		line, _ := decode.Position()
		errs.add(&Error{File: name, Line: line, Key: dotted(decode.Key()), Msg: strings.TrimPrefix(decode.Error(), "toml: ")})
	case decodeErr != nil && len(errs) == 0:
		errs.add(&Error{File: name, Msg: strings.TrimPrefix(decodeErr.Error(), "toml: ")})
	case indexErr != nil && len(errs) == 0:
		// Not expected: the decoder and the index use the same parser.
		errs.add(&Error{File: name, Msg: strings.TrimPrefix(indexErr.Error(), "toml: ")})
	}
	if len(errs) > 0 {
		return errs
	}

	// Values of the right type can still be out of range.
	for _, en := range entries {
		if len(en.path) == 1 || len(en.path) == 2 && slices.Contains(sections(), en.path[0]) {
			if f, ok := lookupField(dotted(en.path)); ok && f.check != nil {
				if problem := f.check(&file); problem != "" {
					errs.add(&Error{File: name, Line: en.line, Key: f.key, Msg: f.key + ": " + problem})
				}
			}
		}
		if len(en.path) == 3 && en.path[0] == "prices" {
			if problem := checkPrice(file.Prices[en.path[1]].only(en.path[2])); problem != "" {
				key := dotted(en.path[:2])
				errs.add(&Error{File: name, Line: en.line, Key: key, Msg: key + ": " + problem})
			}
		}
		if len(en.path) == 3 && en.path[0] == "agents" && en.path[2] == "output" {
			if problem := oneOfOrEmpty(file.Agents[en.path[1]].Output, OutputNames()); problem != "" {
				key := dotted(en.path)
				errs.add(&Error{File: name, Line: en.line, Key: key, Msg: key + ": " + problem})
			}
		}
		if len(en.path) == 4 && en.path[0] == "agents" && en.path[2] == "error-patterns" {
			for _, p := range file.Agents[en.path[1]].ErrorPatterns[en.path[3]] {
				if problem := checkErrorPattern(en.path[3], p); problem != "" {
					key := dotted(en.path)
					errs.add(&Error{File: name, Line: en.line, Key: key, Msg: key + ": " + problem})
					break
				}
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}

	present := map[string]bool{}
	for _, en := range entries {
		present[pathKey(en.path)] = true
	}
	for _, f := range fields() {
		if present[pathKey(strings.Split(f.key, "."))] {
			copyValue(f.ptr(c), f.ptr(&file))
		}
	}
	c.mergeAgents(file.Agents, func(agent, field string) bool {
		return present[pathKey([]string{"agents", agent, field})]
	})
	c.mergePrices(file.Prices)
	return nil
}

// mergePrices merges the prices of one file onto c, per model and per
// key: a project file can change one price of a model the user's file
// prices.
func (c *Config) mergePrices(prices map[string]Price) {
	if len(prices) == 0 {
		return
	}
	merged := make(map[string]Price, len(c.Prices)+len(prices))
	maps.Copy(merged, c.Prices)
	for model, in := range prices {
		p := merged[model]
		for _, f := range []struct{ dst, src **float64 }{
			{&p.Input, &in.Input}, {&p.Output, &in.Output}, {&p.CacheRead, &in.CacheRead}, {&p.CacheWrite, &in.CacheWrite},
		} {
			if *f.src != nil {
				*f.dst = *f.src
			}
		}
		merged[model] = p
	}
	c.Prices = merged
}

// mergeAgents merges the agents of one file onto c: per agent, the fields
// the file sets, the env table per variable and the error-patterns table
// per kind.
func (c *Config) mergeAgents(agents map[string]AgentConfig, set func(agent, field string) bool) {
	if len(agents) == 0 {
		return
	}
	merged := make(map[string]AgentConfig, len(c.Agents)+len(agents))
	maps.Copy(merged, c.Agents)
	for name, in := range agents {
		a := merged[name]
		if set(name, "command") {
			a.Command = in.Command
		}
		if set(name, "args") {
			a.Args = in.Args
		}
		if set(name, "extra-args") {
			a.ExtraArgs = in.ExtraArgs
		}
		if set(name, "output") {
			a.Output = in.Output
		}
		if len(in.ErrorPatterns) > 0 {
			patterns := make(map[string][]string, len(a.ErrorPatterns)+len(in.ErrorPatterns))
			maps.Copy(patterns, a.ErrorPatterns)
			maps.Copy(patterns, in.ErrorPatterns)
			a.ErrorPatterns = patterns
		}
		if len(in.Env) > 0 {
			env := make(map[string]string, len(a.Env)+len(in.Env))
			maps.Copy(env, a.Env)
			maps.Copy(env, in.Env)
			a.Env = env
		}
		merged[name] = a
	}
	c.Agents = merged
}

// agentFieldNames are the keys of an [agents.NAME] table.
func agentFieldNames() []string {
	return []string{"command", "args", "extra-args", "env", "output", "error-patterns"}
}

// dotted writes a key path as TOML would, quoting parts that need it.
func dotted(path []string) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = p
		if p == "" || strings.ContainsFunc(p, func(r rune) bool {
			return !(r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		}) {
			parts[i] = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(p) + `"`
		}
	}
	return strings.Join(parts, ".")
}

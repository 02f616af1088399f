package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// tool is one tool a request offers, whatever the API's shape.
type tool struct {
	Name string
	// Kind is "function", or the Responses API's "local_shell" and
	// "custom" (freeform input).
	Kind string
	// Schema is the JSON schema of the arguments (function tools).
	Schema map[string]any
}

// shellNames are the shell tools of the CLIs, best first: Claude Code's
// Bash, Codex's shell and exec_command, Gemini's and Qwen's
// run_shell_command, droid's Execute, OpenCode's and Copilot's bash.
var shellNames = []string{
	"Bash", "bash", "shell", "exec_command", "shell_command", "local_shell",
	"run_shell_command", "Execute", "execute_command", "run_command", "run_terminal_cmd",
}

// shellTool picks the tool of the request that runs a shell command: a
// known name first, then a name that says shell, bash or command.
func shellTool(tools []tool) (tool, bool) {
	for _, n := range shellNames {
		for _, t := range tools {
			if t.Name == n {
				return t, true
			}
		}
	}
	for _, t := range tools {
		n := strings.ToLower(t.Name)
		if strings.Contains(n, "shell") || strings.Contains(n, "bash") || strings.Contains(n, "command") {
			return t, true
		}
	}
	return tool{}, false
}

// chooseCall makes a scripted tool call concrete for the request's tools.
func chooseCall(tools []tool, t Turn) (toolCall, error) {
	if t.Tool != "" {
		tc := toolCall{Name: t.Tool, Kind: "function", Args: t.Args}
		if i := slices.IndexFunc(tools, func(x tool) bool { return x.Name == t.Tool }); i >= 0 {
			tc.Kind = tools[i].Kind
		}
		if tc.Args == nil {
			tc.Args = map[string]any{}
		}
		return tc, nil
	}
	sh, ok := shellTool(tools)
	if !ok {
		names := make([]string, 0, len(tools))
		for _, x := range tools {
			names = append(names, x.Name)
		}
		return toolCall{}, fmt.Errorf("%w (tools: %s)", errNoShell, strings.Join(names, ", "))
	}
	tc := toolCall{Name: sh.Name, Kind: sh.Kind}
	switch sh.Kind {
	case "local_shell":
		tc.Args = map[string]any{"type": "exec", "command": []string{"bash", "-lc", t.Command}, "timeout_ms": 120000}
	case "custom":
		tc.Input = t.Command
	default:
		tc.Args = shellArgs(sh.Schema, t.Command)
	}
	return tc, nil
}

// shellDescription describes a scripted command where the tool asks for
// a description: a short capitalised sentence, which droid's summary
// pattern (^[A-Z]\S*(?:\s+\S+){2,7}$) accepts.
const shellDescription = "Run the scripted shell command"

// commandKeys name the argument that holds the command, best first.
var commandKeys = []string{"command", "cmd", "commands", "script", "shell_command"}

// shellArgs fills a shell tool's arguments from its schema: the command
// in the property that takes it (a string, or an argv array run through
// bash -lc), every other required property with a harmless value, and a
// description where the tool has one.
func shellArgs(schema map[string]any, cmd string) map[string]any {
	props, _ := schema["properties"].(map[string]any)
	args := map[string]any{}
	key := ""
	for _, k := range commandKeys {
		if _, ok := props[k]; ok {
			key = k
			break
		}
	}
	if key == "" {
		for _, k := range required(schema) {
			if p, _ := props[k].(map[string]any); typeOf(p) == "string" {
				key = k
				break
			}
		}
	}
	if key == "" {
		key = "command"
	}
	if p, _ := props[key].(map[string]any); typeOf(p) == "array" {
		args[key] = []string{"bash", "-lc", cmd}
	} else {
		args[key] = cmd
	}
	for _, k := range []string{"description", "summary"} {
		if p, ok := props[k].(map[string]any); ok && typeOf(p) == "string" || slices.Contains(required(schema), k) {
			args[k] = shellDescription
		}
	}
	for _, k := range required(schema) {
		if _, done := args[k]; done {
			continue
		}
		p, _ := props[k].(map[string]any)
		args[k] = fakeValue(k, p)
	}
	return args
}

// fakeValue is a harmless value for a required property the scripted
// call did not name: its default, its first enum value, or the zero value
// of its type (1 for numbers, a text naming the property for strings).
func fakeValue(name string, p map[string]any) any {
	if d, ok := p["default"]; ok {
		return d
	}
	if e, ok := p["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	switch typeOf(p) {
	case "boolean":
		return false
	case "integer", "number":
		if m, ok := p["minimum"]; ok {
			return m
		}
		if strings.Contains(strings.ToLower(name), "timeout") || strings.Contains(strings.ToLower(name), "wait") {
			return 60
		}
		// 1, not 0: scores and counts are often 1-based ("complexity
		// score from 1-100" in Gemini CLI's router).
		return 1
	case "array":
		return []any{}
	case "object":
		return fakeObject(p)
	}
	return "fake " + name
}

// fakeJSON is a JSON value that fits schema, for the side calls that ask
// for structured output (Gemini CLI's next-speaker check, model router,
// Claude Code's classifiers).
func fakeJSON(schema map[string]any) []byte {
	var v any
	switch typeOf(schema) {
	case "object", "":
		// No schema at all (a bare "JSON, please") gets an object too.
		v = fakeObject(schema)
	default:
		v = fakeValue("value", schema)
	}
	b, _ := json.Marshal(v)
	return b
}

func fakeObject(schema map[string]any) map[string]any {
	props, _ := schema["properties"].(map[string]any)
	obj := map[string]any{}
	for k, p := range props {
		pm, _ := p.(map[string]any)
		switch k {
		case "next_speaker":
			// Gemini CLI asks whether the model wants to go on: it must
			// not, or the turn never ends.
			obj[k] = "user"
		default:
			obj[k] = fakeValue(k, pm)
		}
	}
	return obj
}

// required lists a schema's required properties.
func required(schema map[string]any) []string {
	var out []string
	rs, _ := schema["required"].([]any)
	for _, r := range rs {
		if s, ok := r.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// typeOf returns a schema's type in lower case: Gemini's schemas say
// "STRING", JSON schemas "string"; a list of types gives its first
// non-null one.
func typeOf(p map[string]any) string {
	switch t := p["type"].(type) {
	case string:
		return strings.ToLower(t)
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok && s != "null" {
				return strings.ToLower(s)
			}
		}
	}
	if _, ok := p["properties"]; ok {
		return "object"
	}
	return ""
}

// jsonEncode writes v as JSON without escaping <, > and &: markers such as
// <promise>TASK_DONE</promise> stay readable on the wire.
func jsonEncode(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// mustJSON encodes v (arguments the server built itself).
func mustJSON(v any) string {
	var b strings.Builder
	_ = jsonEncode(&b, v)
	return strings.TrimSuffix(b.String(), "\n")
}

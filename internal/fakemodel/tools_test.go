package fakemodel

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The shell tools' argument schemas as the CLIs sent them (descriptions
// dropped), recorded against this server.
var shellSchemas = map[string]struct {
	tool   string
	schema string
}{
	"claude":      {"Bash", `{"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"number"},"run_in_background":{"type":"boolean"},"description":{"type":"string"}},"required":["command"],"additionalProperties":false}`},
	"codex":       {"exec_command", `{"type":"object","properties":{"cmd":{"type":"string"},"justification":{"type":"string"},"login":{"type":"boolean"},"sandbox_permissions":{"type":"string","enum":["use_default","require_escalated"]},"workdir":{"type":"string"},"yield_time_ms":{"type":"number"}},"required":["cmd"],"additionalProperties":false}`},
	"codex-shell": {"shell", `{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}},"workdir":{"type":"string"},"timeout_ms":{"type":"number"}},"required":["command"]}`},
	"gemini":      {"run_shell_command", `{"type":"OBJECT","properties":{"command":{"type":"STRING"},"description":{"type":"STRING"},"dir_path":{"type":"STRING"},"is_background":{"type":"BOOLEAN"}},"required":["command"]}`},
	"opencode":    {"bash", `{"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"integer","exclusiveMinimum":0},"workdir":{"type":"string"},"description":{"type":"string"}},"required":["command","description"]}`},
	"qwen":        {"run_shell_command", `{"type":"object","properties":{"command":{"type":"string"},"is_background":{"type":"boolean"},"timeout":{"type":"integer","minimum":1},"directory":{"type":"string"}},"required":["command","is_background"]}`},
	"droid":       {"Execute", `{"type":"object","properties":{"summary":{"type":"string","pattern":"^[A-Z]\\S*(?:\\s+\\S+){2,7}$"},"command":{"type":"string"},"timeout":{"type":"number"},"fireAndForget":{"type":"boolean"}},"required":["summary","command"]}`},
	"copilot":     {"bash", `{"type":"object","properties":{"command":{"type":"string"},"description":{"type":"string"},"shellId":{"type":"string"},"mode":{"type":"string","enum":["sync","async"]},"initial_wait":{"type":"number"}},"required":["command","description","mode"]}`},
}

func schema(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestShellArgs(t *testing.T) {
	t.Parallel()
	const cmd = "touch done.txt"
	tests := map[string]map[string]any{
		"claude":      {"command": cmd, "description": shellDescription},
		"codex":       {"cmd": cmd},
		"codex-shell": {"command": []string{"bash", "-lc", cmd}},
		"gemini":      {"command": cmd, "description": shellDescription},
		"opencode":    {"command": cmd, "description": shellDescription},
		"qwen":        {"command": cmd, "is_background": false},
		"droid":       {"command": cmd, "summary": shellDescription},
		"copilot":     {"command": cmd, "description": shellDescription, "mode": "sync"},
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := shellArgs(schema(t, shellSchemas[name].schema), cmd)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("shellArgs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShellToolPicksTheShell(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		tools []string
		want  string
	}{
		{"claude", []string{"Task", "Read", "Bash", "Edit"}, "Bash"},
		{"codex", []string{"exec_command", "write_stdin", "view_image"}, "exec_command"},
		{"gemini", []string{"read_file", "run_shell_command", "glob"}, "run_shell_command"},
		{"droid", []string{"Read", "LS", "Execute", "Edit"}, "Execute"},
		{"known name wins over order", []string{"my_command_runner", "bash"}, "bash"},
		{"a name that says shell", []string{"read", "invoke_shell_v2"}, "invoke_shell_v2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var tools []tool
			for _, n := range tt.tools {
				tools = append(tools, tool{Name: n, Kind: "function"})
			}
			got, ok := shellTool(tools)
			if !ok || got.Name != tt.want {
				t.Errorf("shellTool(%v) = %q, %v; want %q", tt.tools, got.Name, ok, tt.want)
			}
		})
	}
	if _, ok := shellTool([]tool{{Name: "Read"}, {Name: "Edit"}}); ok {
		t.Error("shellTool found a shell among Read and Edit")
	}
}

func TestChooseCall(t *testing.T) {
	t.Parallel()
	tools := []tool{{Name: "Read", Kind: "function"}, {Name: "local_shell", Kind: "local_shell"}}
	got, err := chooseCall(tools, Shell("ls"))
	if err != nil {
		t.Fatal(err)
	}
	want := toolCall{Name: "local_shell", Kind: "local_shell",
		Args: map[string]any{"type": "exec", "command": []string{"bash", "-lc", "ls"}, "timeout_ms": 120000}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("local_shell call (-want +got):\n%s", diff)
	}

	got, err = chooseCall(tools, Call("Read", map[string]any{"path": "a"}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(toolCall{Name: "Read", Kind: "function", Args: map[string]any{"path": "a"}}, got); diff != "" {
		t.Errorf("named call (-want +got):\n%s", diff)
	}

	if _, err := chooseCall([]tool{{Name: "Read"}}, Shell("ls")); err == nil {
		t.Error("Shell with no shell tool: want an error")
	}
}

func TestFakeJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema, want string
	}{
		{"gemini next speaker", `{"type":"OBJECT","properties":{"reasoning":{"type":"STRING"},"next_speaker":{"type":"STRING","enum":["model","user"]}},"required":["reasoning","next_speaker"]}`,
			`{"next_speaker":"user","reasoning":"fake reasoning"}`},
		{"gemini router", `{"type":"OBJECT","properties":{"complexity_reasoning":{"type":"STRING"},"complexity_score":{"type":"INTEGER"}}}`,
			`{"complexity_reasoning":"fake complexity_reasoning","complexity_score":1}`},
		{"defaults, enums, nesting", `{"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"string","default":"x"},"c":{"type":"string","enum":["p","q"]},"d":{"type":"object","properties":{"e":{"type":"number","minimum":3}}},"f":{"type":"array"}}}`,
			`{"a":false,"b":"x","c":"p","d":{"e":3},"f":[]}`},
		{"no schema", `{}`, `{}`},
		{"not an object", `{"type":"string"}`, `"fake value"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := string(fakeJSON(schema(t, tt.schema))); got != tt.want {
				t.Errorf("fakeJSON = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestChunksKeepText(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "short", "Done. <promise>TASK_DONE</promise>", "héllo wörld ünïcode text that goes on and on without end ✓✓✓✓✓✓✓✓✓✓✓✓"} {
		var joined string
		for _, c := range chunks(s) {
			joined += c
			if !isRuneStart(c[0]) {
				t.Errorf("chunk %q starts inside a rune", c)
			}
		}
		if joined != s {
			t.Errorf("chunks(%q) joined = %q", s, joined)
		}
	}
}

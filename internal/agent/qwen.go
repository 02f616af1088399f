package agent

// qwen is the Qwen Code adapter.
type qwen struct{ base }

// NewQwen returns the adapter for Qwen Code.
func NewQwen(opts Options) (Adapter, error) {
	b, err := newBase("qwen", opts)
	return qwen{b}, err
}

// qwenSpec is what ralph knows about Qwen Code.
func qwenSpec() Spec {
	return Spec{
		Name:             "qwen",
		New:              NewQwen,
		Dialect:          "claude-stream-json",
		ResolvesFileRefs: true, // as the Gemini CLI it comes from does
		Install:          "npm install -g @qwen-code/qwen-code",
		Credentials: Credentials{
			EnvVars: []string{"OPENAI_API_KEY", "DASHSCOPE_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"},
			Files:   []string{"~/.qwen/oauth_creds.json"},
			Login:   "run `qwen` and log in, or set OPENAI_API_KEY (with OPENAI_BASE_URL and OPENAI_MODEL)",
		},
		Hosts: []string{"chat.qwen.ai", "*.qwen.ai", "dashscope.aliyuncs.com", "dashscope-intl.aliyuncs.com"},
		// settings.json names hooks and MCP servers: reported, never
		// written back.
		ConfigDirs: []string{"~/.qwen"},
		// Per-project temporary files, debug logs, earlier sessions, the
		// usage log and the markers of its log cleanups.
		Scratch: []string{"~/.qwen/tmp", "~/.qwen/debug", "~/.qwen/projects", "~/.qwen/usage_record.jsonl",
			"~/.qwen/.openai-logs-cleanup-*"},
		// The tools it downloads.
		ReadOnly: []string{"~/.qwen/bin"},
		// The login, and this run's chats (qwen --resume finds them).
		WriteBack:  []string{"~/.qwen/oauth_creds.json", "~/.qwen/projects/*/chats/*.jsonl"},
		OwnSession: sessionsIn("projects", dashed),
		Env:        []string{"OPENAI_*", "QWEN_*", "DASHSCOPE_*"},
	}
}

func (qwen) Name() string { return "qwen" }

// Invocation runs `qwen -o stream-json --yolo [-m M]` with the prompt on
// stdin: like the Gemini CLI it comes from, Qwen Code runs headless when
// stdin is not a terminal and reads its prompt there.
func (q qwen) Invocation(req Request) (Invocation, error) {
	return q.stdinInvocation(layout{
		exe:   "qwen",
		flags: []string{"-o", "stream-json", "--yolo"},
		model: "-m",
	}, req), nil
}

// NewDecoder reads Qwen Code's stream-json, which has Claude Code's shape
// (its result error is {"message": ...}; it reports no cost).
func (qwen) NewDecoder() Decoder {
	d := newClaudeDecoder()
	d.inclusiveInput = true
	return d
}

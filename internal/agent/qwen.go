package agent

// qwen is the Qwen Code adapter.
type qwen struct{ base }

// NewQwen returns the adapter for Qwen Code.
func NewQwen(opts Options) (Adapter, error) {
	b, err := newBase("qwen", opts)
	return qwen{b}, err
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

package agent

// amp is the Sourcegraph Amp adapter.
type amp struct{ base }

// NewAmp returns the adapter for Amp.
func NewAmp(opts Options) (Adapter, error) {
	b, err := newBase("amp", opts)
	return amp{b}, err
}

func (amp) Name() string { return "amp" }

// Invocation runs `amp -x --stream-json --dangerously-allow-all [--mode
// M]` with the prompt on stdin (execute mode reads a piped stdin as its
// message). Amp picks models itself; the model setting names its mode
// (smart, rush, ...).
func (a amp) Invocation(req Request) (Invocation, error) {
	return a.stdinInvocation(layout{
		exe:   "amp",
		flags: []string{"-x", "--stream-json", "--dangerously-allow-all"},
		model: "--mode",
	}, req), nil
}

// NewDecoder reads Amp's --stream-json, which has Claude Code's shape (its
// result error is a string).
func (amp) NewDecoder() Decoder { return newClaudeDecoder() }

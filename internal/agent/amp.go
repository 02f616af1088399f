package agent

import "slices"

// amp is the Sourcegraph Amp adapter.
type amp struct{ base }

// NewAmp returns the adapter for Amp.
func NewAmp(opts Options) (Adapter, error) {
	b, err := newBase("amp", opts)
	return amp{b}, err
}

// ampSpec is what ralph knows about Amp.
func ampSpec() Spec {
	return Spec{
		Name:    "amp",
		New:     NewAmp,
		Dialect: "claude-stream-json",
		Install: "npm install -g @sourcegraph/amp",
		Credentials: Credentials{
			EnvVars: []string{"AMP_API_KEY"},
			Files:   xdg("data", "amp/secrets.json"),
			Login:   "run `amp login`, or set AMP_API_KEY",
		},
		Hosts: []string{"ampcode.com", "*.ampcode.com"},
		// settings.json names MCP servers and permissions: reported,
		// never written back.
		ConfigDirs: slices.Concat(xdg("config", "amp"), xdg("data", "amp"), xdg("cache", "amp")),
		// Logs.
		Scratch: xdg("cache", "amp"),
		// The login.
		WriteBack: xdg("data", "amp/secrets.json"),
		Env:       []string{"AMP_*"},
	}
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

package agent

import (
	"regexp"
)

// kiro is the Kiro CLI adapter.
type kiro struct{ base }

// NewKiro returns the adapter for the Kiro CLI.
func NewKiro(opts Options) (Adapter, error) {
	b, err := newBase("kiro", opts)
	return kiro{b}, err
}

// kiroSpec is what ralph knows about the Kiro CLI.
func kiroSpec() Spec {
	return Spec{
		Name:    "kiro",
		New:     NewKiro,
		Dialect: "text",
		Install: "curl -fsSL https://cli.kiro.dev/install | bash",
		Credentials: Credentials{
			EnvVars: []string{"KIRO_API_KEY"},
			Files:   xdg("data", "kiro-cli/data.sqlite3"),
			Login:   "run `kiro-cli login`, or set KIRO_API_KEY",
		},
		Hosts: []string{"*.kiro.dev", "q.us-east-1.amazonaws.com", "codewhisperer.us-east-1.amazonaws.com"},
		// data.sqlite3 holds the login with the conversations and
		// settings, and ~/.kiro the agents and MCP servers: a database
		// is not written back, so a login Kiro refreshes in a run is
		// not kept (reported).
		ConfigDirs: append(xdg("data", "kiro-cli"), "~/.kiro"),
		Env:        []string{"KIRO_*"},
	}
}

func (kiro) Name() string { return "kiro" }

// Invocation runs `kiro-cli chat --no-interactive --trust-all-tools [--model
// M] PROMPT`, stdin /dev/null, with NO_COLOR=1: headless Kiro prints a plain
// transcript, no structured stream.
func (k kiro) Invocation(req Request) (Invocation, error) {
	return k.argInvocation(layout{
		exe:   "kiro-cli",
		flags: []string{"chat", "--no-interactive", "--trust-all-tools"},
		model: "--model",
		tail:  []string{req.Prompt},
	}, req, "NO_COLOR=1"), nil
}

// NewDecoder reads Kiro's plain text. The whole output is the final text
// (RawText: it holds tool output and may echo the prompt), with terminal
// escapes removed.
func (kiro) NewDecoder() Decoder { return &kiroDecoder{} }

// ansiRE matches terminal escape sequences (CSI and OSC).
var ansiRE = regexp.MustCompile(`\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])`)

type kiroDecoder struct{ textDecoder }

func (d *kiroDecoder) Line(line []byte, emit func(Event)) {
	d.textDecoder.Line(ansiRE.ReplaceAll(line, nil), emit)
}

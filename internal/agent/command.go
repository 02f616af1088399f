package agent

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// command runs any program as the agent.
type command struct {
	base
	newDecoder func(now func() time.Time) Decoder
}

// NewCommand returns the adapter for an arbitrary program: opts.Command is
// the program, opts.Args (then ExtraArgs) its arguments. An argument
// containing {prompt} gets the prompt text, {prompt_file} the prompt's
// file, {model} the model; with neither prompt placeholder the prompt goes
// to stdin. opts.Output names how its output reads.
func NewCommand(opts Options) (Adapter, error) {
	if opts.Command == "" {
		return nil, errors.New("command agent: no command set: name the program to run")
	}
	dec, err := dialect(opts.Output)
	if err != nil {
		return nil, fmt.Errorf("command agent: %w", err)
	}
	b, err := newBase("command", opts)
	if err != nil {
		return nil, err
	}
	return command{base: b, newDecoder: dec}, nil
}

// commandSpec is the command agent: any program, so nothing is known of
// it beyond what the config says.
func commandSpec() Spec {
	return Spec{Name: "command", New: NewCommand, Custom: true}
}

func (command) Name() string { return "command" }

func (c command) Invocation(req Request) (Invocation, error) {
	args := append(slices.Clone(c.opts.Args), c.opts.ExtraArgs...)
	mode := PromptStdin
	switch {
	case slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, "{prompt}") }):
		mode = PromptArg
	case slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, "{prompt_file}") }):
		mode = PromptFile
		if req.PromptFile == "" {
			return Invocation{}, errors.New("command agent: the arguments use {prompt_file} but the request has no prompt file")
		}
	}
	// One pass, so a prompt that contains a placeholder is left alone.
	r := strings.NewReplacer("{prompt}", req.Prompt, "{prompt_file}", req.PromptFile, "{model}", req.Model)
	argv := []string{c.opts.Command}
	for _, a := range args {
		argv = append(argv, r.Replace(a))
	}
	inv := Invocation{Argv: argv, EnvSet: c.env(), Prompt: mode}
	if mode == PromptStdin {
		inv.Stdin = req.Prompt
	}
	return inv, nil
}

func (c command) NewDecoder() Decoder { return c.newDecoder(c.now) }

// dialectDecoder makes a decoder for one output format, reading reset
// times against now.
type dialectDecoder = func(now func() time.Time) Decoder

// dialects lists the output formats the command adapter reads: plain text
// and each JSON dialect of the CLIs above (each Spec's Dialect names its
// CLI's). Adding one is one line here, and one in config.OutputNames,
// which a test checks against this list.
func dialects() []struct {
	name string
	new  dialectDecoder
} {
	return []struct {
		name string
		new  dialectDecoder
	}{
		{"text", func(func() time.Time) Decoder { return &textDecoder{} }},
		{"claude-stream-json", func(func() time.Time) Decoder { return newClaudeDecoder() }},
		{"codex-json", func(now func() time.Time) Decoder { return newCodexDecoder(now) }},
		{"gemini-stream-json", func(now func() time.Time) Decoder { return newGeminiDecoder(now) }},
		{"opencode-json", func(now func() time.Time) Decoder { return newOpenCodeDecoder(now) }},
		{"droid-stream-json", func(now func() time.Time) Decoder { return newDroidDecoder(now) }},
		{"copilot-json", func(now func() time.Time) Decoder { return newCopilotDecoder(now) }},
		{"cursor-stream-json", func(func() time.Time) Decoder { return newCursorDecoder() }},
	}
}

func dialect(name string) (dialectDecoder, error) {
	var names []string
	for _, d := range dialects() {
		if d.name == name || name == "" && d.name == "text" {
			return d.new, nil
		}
		names = append(names, d.name)
	}
	return nil, fmt.Errorf("unknown output %q: want one of %s", name, strings.Join(names, ", "))
}

// maxTextTail bounds the plain-text output a text decoder keeps: markers
// are at the end.
const maxTextTail = 256 << 10

// textDecoder reads plain text: every line is assistant text and the whole
// output (its tail) is the final message.
type textDecoder struct{ tail []byte }

func (d *textDecoder) Line(line []byte, emit func(Event)) {
	line = bytes.TrimSuffix(line, []byte("\r"))
	emit(Event{Kind: EventText, Text: string(line)})
	d.tail = append(d.tail, line...)
	d.tail = append(d.tail, '\n')
	if len(d.tail) > 2*maxTextTail {
		// Shift only now and then, so long outputs stay linear.
		d.tail = append(d.tail[:0], d.tail[len(d.tail)-maxTextTail:]...)
	}
}

func (d *textDecoder) Finish() Result {
	t := d.tail
	if len(t) > maxTextTail {
		t = utf8Start(t[len(t)-maxTextTail:])
	}
	// Raw output may echo the prompt, markers and all: RawText tells
	// completion detection to remove it.
	r := Result{RawText: true}
	r.FinalText = strings.TrimRight(string(t), "\n")
	if r.FinalText != "" {
		r.Messages = []string{r.FinalText}
	}
	return r
}

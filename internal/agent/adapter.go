package agent

import (
	"cmp"
	"time"
)

// base is what the built-in adapters share: their options, the error
// patterns compiled from them, the clock, the argv layout and the
// FinishRun step.
type base struct {
	opts  Options
	rules []errorRule // the configured patterns
}

func newBase(name string, opts Options) (base, error) {
	rules, err := compileRules(name, opts.ErrorPatterns)
	if err != nil {
		return base{}, err
	}
	return base{opts: opts, rules: rules}, nil
}

func (b base) now() time.Time {
	if b.opts.Now != nil {
		return b.opts.Now()
	}
	return time.Now()
}

// layout is how one CLI's argv is built:
//
//	exe (or Options.Command)
//	flags (or Options.Args)
//	model flag and model, when a model is requested
//	Options.ExtraArgs
//	tail (the prompt, or files the adapter needs; always last)
type layout struct {
	exe   string
	flags []string
	model string // the CLI's model flag
	tail  []string
}

func (b base) argv(l layout, model string) []string {
	argv := []string{cmp.Or(b.opts.Command, l.exe)}
	if b.opts.Args != nil {
		argv = append(argv, b.opts.Args...)
	} else {
		argv = append(argv, l.flags...)
	}
	if model != "" && l.model != "" {
		argv = append(argv, l.model, model)
	}
	argv = append(argv, b.opts.ExtraArgs...)
	return append(argv, l.tail...)
}

// env returns the adapter's own variables followed by the configured
// ones, which win.
func (b base) env(own ...string) []string {
	return append(own, envList(b.opts.Env)...)
}

// stdinInvocation builds the usual invocation: the prompt on stdin.
func (b base) stdinInvocation(l layout, req Request) Invocation {
	return Invocation{Argv: b.argv(l, req.Model), EnvSet: b.env(), Prompt: PromptStdin, Stdin: req.Prompt}
}

// argInvocation builds an invocation whose prompt is in argv; stdin is
// /dev/null.
func (b base) argInvocation(l layout, req Request, own ...string) Invocation {
	return Invocation{Argv: b.argv(l, req.Model), EnvSet: b.env(own...), Prompt: PromptArg}
}

// FinishRun classifies what the decoder left unclassified and reads the
// reset time from the error text (classify.go).
func (b base) FinishRun(_ Request, res *Result) { classifyExit(res, b.rules, b.now()) }

package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ralph-loop/ralph/internal/agent"
)

// Agent is the simulated coding agent. It finds its task in the prompt,
// plays that task's script (assistant text, tool calls that change real
// files, tool results, token usage), streams it as Claude Code's
// stream-json to the transcript, and decodes it with the real Claude
// decoder, so the loop sees exactly what a real agent run gives it.
//
// The scripts fail and recover, each failure caught by another check:
// DEMO-2's first claim breaks its test (the gate catches it), DEMO-3's
// first call hits a usage limit that resets a few seconds later and its
// second weakens a test to pass (the tamper guard catches it), DEMO-4's
// first claim leaves out half the task (the reviewer catches it). The
// same agent reviews: given a review prompt, it plays the reviewer's
// script of the task (reviewScript).
type Agent struct {
	// Speed scales the pauses between steps: 1 is a watchable pace, 2
	// twice as fast, 0 no pauses at all.
	Speed float64
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu    sync.Mutex
	calls map[string]int // invocations per task
}

// NewAgent returns a simulated agent playing at speed.
func NewAgent(speed float64) *Agent {
	return &Agent{Speed: speed, Now: time.Now, calls: map[string]int{}}
}

// Name is the agent's name in history.
func (*Agent) Name() string { return "demo" }

// Invocation says what would run: nothing outside ralph.
func (*Agent) Invocation(req agent.Request) (agent.Invocation, error) {
	return agent.Invocation{Argv: []string{"(ralph's built-in simulated agent)"}, Prompt: agent.PromptStdin, Stdin: req.Prompt}, nil
}

// Run plays the script of the task the prompt names.
func (a *Agent) Run(ctx context.Context, req agent.Request, sink agent.Sink) (agent.Result, error) {
	start := a.now()
	id := taskIn(req.Prompt)
	review := strings.Contains(req.Prompt, reviewPrompt)
	key := id
	if review {
		key = "review " + id
	}
	a.mu.Lock()
	if a.calls == nil {
		a.calls = map[string]int{}
	}
	a.calls[key]++
	call := a.calls[key]
	a.mu.Unlock()
	steps := script(id, call, a.now())
	if review {
		steps = reviewScript(id, call)
	}

	dec, err := decoder()
	if err != nil {
		return agent.Result{}, err
	}
	s := &stream{a: a, ctx: ctx, dir: req.Dir, sink: sink, dec: dec,
		session: fmt.Sprintf("demo-%s-%d", strings.ToLower(strings.ReplaceAll(key, " ", "-")), call)}
	s.line(map[string]any{"type": "system", "subtype": "init", "session_id": s.session, "cwd": req.Dir,
		"model": "demo-sim", "tools": []string{"Bash", "Read", "Write", "Edit"}})
	err = s.play(steps)
	res := dec.Finish()
	res.Duration = a.now().Sub(start)
	if err != nil {
		// Interrupted: like a killed agent, the run ends where it stopped.
		res.Interrupted = true
		res.ExitCode = 143
	}
	return res, nil
}

func (a *Agent) now() time.Time {
	if a.Now == nil {
		return time.Now()
	}
	return a.Now()
}

// decoder is the real Claude Code stream-json decoder.
func decoder() (agent.Decoder, error) {
	ad, err := agent.New("command", agent.Options{Command: "demo", Output: Output})
	if err != nil {
		return nil, err
	}
	return ad.NewDecoder(), nil
}

// reviewPrompt is what tells a review prompt (ralph's review template)
// from a task's.
const reviewPrompt = "You are a code reviewer."

// taskIn finds the task a prompt names: the demo task id that appears
// first (the prompt names its task before anything else).
func taskIn(prompt string) string {
	best, at := "", -1
	for _, id := range []string{"DEMO-1", "DEMO-2", "DEMO-3", "DEMO-4"} {
		if i := strings.Index(prompt, id); i >= 0 && (at < 0 || i < at) {
			best, at = id, i
		}
	}
	return best
}

// step is one thing the simulated agent does.
type step struct {
	pause time.Duration // before the step, at speed 1
	text  string        // assistant text
	tool  string        // a tool call...
	input map[string]any
	out   string                 // ...and what it printed
	do    func(dir string) error // ...and what it changed
	retry string                 // an API retry notice (system/api_retry), its error
	limit time.Duration          // a usage limit hit, resetting after this (at speed 1)
	final string                 // the result text; ends the run
	usage [2]int64               // input, output tokens of the step's message
}

// stream writes the script as stream-json and decodes it as it goes.
type stream struct {
	a       *Agent
	ctx     context.Context
	dir     string
	sink    agent.Sink
	dec     agent.Decoder
	session string
	msg     int
	tool    int
	cost    float64
	in, out int64 // tokens so far
	cached  int64 // cache reads so far
}

func (s *stream) line(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	b = append(b, '\n')
	if s.sink.Transcript != nil {
		_, _ = s.sink.Transcript.Write(b)
	}
	emit := s.sink.Emit
	if emit == nil {
		emit = func(agent.Event) {}
	}
	s.dec.Line(b[:len(b)-1], emit)
}

// wait pauses for d at speed 1, scaled by the agent's speed.
func (s *stream) wait(d time.Duration) error {
	if s.a.Speed <= 0 {
		return s.ctx.Err()
	}
	t := time.NewTimer(time.Duration(float64(d) / s.a.Speed))
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return s.ctx.Err()
	case <-t.C:
		return nil
	}
}

func (s *stream) play(steps []step) error {
	for _, st := range steps {
		if err := s.wait(st.pause); err != nil {
			return err
		}
		switch {
		case st.retry != "":
			s.line(map[string]any{"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 10,
				"retry_delay_ms": 600, "error_status": 529, "error": st.retry, "session_id": s.session})
		case st.limit > 0:
			s.usageLimit(st.limit)
			return nil
		case st.final != "":
			s.assistant(map[string]any{"type": "text", "text": st.final}, st.usage)
			s.result(st.final)
			return nil
		case st.text != "":
			s.assistant(map[string]any{"type": "text", "text": st.text}, st.usage)
		case st.tool != "":
			if err := s.toolCall(st); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *stream) assistant(part map[string]any, usage [2]int64) {
	s.msg++
	in := usage[0]
	if in == 0 {
		in = 40
	}
	out := usage[1]
	if out == 0 {
		out = 60
	}
	// Each turn re-reads the conversation, mostly from the cache.
	cacheRead := 9000 + s.in
	s.in += in
	s.out += out
	s.cached += cacheRead
	s.cost += float64(in)*3e-6 + float64(out)*15e-6 + float64(cacheRead)*0.3e-6
	s.line(map[string]any{"type": "assistant", "parent_tool_use_id": nil, "session_id": s.session,
		"message": map[string]any{"id": fmt.Sprintf("msg_demo_%d", s.msg), "role": "assistant", "model": "demo-sim",
			"content": []any{part},
			"usage": map[string]any{"input_tokens": in, "output_tokens": out,
				"cache_read_input_tokens": cacheRead, "cache_creation_input_tokens": 0}}})
}

func (s *stream) toolCall(st step) error {
	s.tool++
	id := fmt.Sprintf("toolu_demo_%d", s.tool)
	s.assistant(map[string]any{"type": "tool_use", "id": id, "name": st.tool, "input": st.input}, st.usage)
	if err := s.wait(st.pause / 2); err != nil {
		return err
	}
	out := st.out
	if st.do != nil {
		if err := st.do(s.dir); err != nil {
			out = "Error: " + err.Error()
		}
	}
	if out == "" {
		out = fmt.Sprintf("(%s completed with no output)", st.tool)
	}
	s.line(map[string]any{"type": "user", "parent_tool_use_id": nil, "session_id": s.session,
		"message": map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": id, "content": out, "is_error": false}}}})
	return nil
}

func (s *stream) usage() map[string]any {
	return map[string]any{"input_tokens": s.in, "output_tokens": s.out,
		"cache_read_input_tokens": s.cached, "cache_creation_input_tokens": 0}
}

func (s *stream) result(final string) {
	s.line(map[string]any{"type": "result", "subtype": "success", "is_error": false, "num_turns": s.msg,
		"result": final, "session_id": s.session, "total_cost_usd": s.cost, "usage": s.usage(),
		"modelUsage": map[string]any{"demo-sim": map[string]any{"contextWindow": 200000}}})
}

// usageLimit ends the run the way Claude Code does when a subscription's
// limit is hit: a rejected rate_limit_event with the reset time, then an
// error result.
func (s *stream) usageLimit(after time.Duration) {
	wait := time.Second
	if s.a.Speed > 0 {
		wait = time.Duration(float64(after) / s.a.Speed)
	}
	// resetsAt has whole seconds: round up so the wait is never shorter.
	reset := s.a.now().Add(wait).Truncate(time.Second).Add(time.Second)
	s.line(map[string]any{"type": "rate_limit_event", "session_id": s.session,
		"rate_limit_info": map[string]any{"status": "rejected", "resetsAt": reset.Unix(), "rateLimitType": "five_hour"}})
	text := "You've hit your limit · resets " + reset.Local().Format("3:04:05pm") + " (simulated)"
	s.line(map[string]any{"type": "assistant", "parent_tool_use_id": nil, "session_id": s.session,
		"message": map[string]any{"id": "msg_demo_limit", "role": "assistant", "model": "<synthetic>",
			"content": []any{map[string]any{"type": "text", "text": text}}}})
	s.line(map[string]any{"type": "result", "subtype": "success", "is_error": true, "num_turns": 1,
		"result": text, "session_id": s.session, "total_cost_usd": 0, "usage": map[string]any{"input_tokens": 0, "output_tokens": 0}})
}

// writeFile returns a step action writing a file of the project.
func writeFile(name, content string) func(string) error {
	return func(dir string) error {
		return os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
	}
}

// appendFile returns a step action appending to a file of the project.
func appendFile(name, content string) func(string) error {
	return func(dir string) error {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		_, err = f.WriteString(content)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
}

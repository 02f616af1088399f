// Package route decides which agent and model run a task's next attempt:
// the precedence of the command line, the task and the run's config; the
// escalate ladder a failing task climbs; and the fallback agents that
// stand in while an agent's usage limit lasts. It also checks what a
// plan's tasks may name.
//
// It is pure logic: it starts no process, reads no file and has no clock
// of its own (the caller says what time it is). Whether an agent is
// installed is the caller's question; the answer comes in as Unavailable.
package route

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/words"
)

// Config is what the rule is made of.
type Config struct {
	// Agent and Model are the run's, from its config ("" model: the
	// agent's default).
	Agent, Model string
	// CLIAgent and CLIModel are the command line's --agent and --model,
	// when given: stronger than a task's own.
	CLIAgent, CLIModel string
	// Fallback are the agents (agent or agent:model) that stand in on a
	// usage limit, in order.
	Fallback []string
	// Escalate are the rungs (model, or agent:model); EscalateAfter the
	// failed attempts per rung (0: 1); MaxAttempts the failed attempts
	// that fail a task, which the ladder must fit in.
	Escalate      []string
	EscalateAfter int
	MaxAttempts   int
	// AllowedAgents are the agents a task may name besides those above;
	// AllowedModels, when set, the only models a task may name.
	AllowedAgents, AllowedModels []string
}

// FromConfig is the rule of a run's agent: cliAgent and cliModel are the
// command line's --agent and --model ("" when not given).
func FromConfig(c config.Config, cliAgent, cliModel string) Config {
	return Config{Agent: c.Agent, Model: c.Model, CLIAgent: cliAgent, CLIModel: cliModel,
		Fallback: c.Fallback, Escalate: c.Escalate, EscalateAfter: c.EscalateAfter, MaxAttempts: c.MaxAttempts,
		AllowedAgents: c.AllowedAgents, AllowedModels: c.AllowedModels}
}

// ForReview is the rule of the reviewer: its agent and model, and
// review.fallback (the run's fallback when the reviewer is the run's
// agent). A reviewer does not escalate.
func ForReview(c config.Config) Config {
	return Config{Agent: cmp.Or(c.Review.Agent, c.Agent), Model: c.Review.Model, Fallback: c.ReviewFallback()}
}

// Pair is an agent and a model ("" model: the agent's default).
type Pair struct{ Agent, Model string }

func (p Pair) String() string {
	if p.Model == "" {
		return p.Agent
	}
	return p.Agent + ":" + p.Model
}

// Choice is who runs a task's next attempt, and why.
type Choice struct {
	Agent, Model string
	// Why says where the agent and model come from: "the run's",
	// "the task's", "--agent/--model", "escalated ...", "... stands in".
	Why string
	// Rung is the ladder's rung the task is on; 0: its starting model.
	Rung int
	// For is the agent the task would run on were no agent limited;
	// Agent differs from it while a fallback stands in, until Until.
	For   string
	Until time.Time
	// Blocked: every agent that could run the task is limited; Until is
	// the first reset, and Agent the agent the task would run on.
	Blocked bool
}

// StandIn reports a fallback agent standing in for a limited one.
func (c Choice) StandIn() bool { return c.Agent != c.For && !c.Blocked }

// Rule is the rule of one run. It remembers which agents are limited
// until when, and which agent each task ran on last, so that a task
// started on a stand-in finishes there: the run goes back to a reset
// agent at the next task.
type Rule struct {
	// mu guards the memory below: --parallel workers' reviewers ask at
	// once.
	mu       sync.Mutex
	cfg      Config
	fallback []Pair
	escalate []Pair
	limits   map[string]time.Time
	// unavailable are the agents the caller found not installed or not
	// logged in, with why.
	unavailable map[string]string
	// lastTask and lastAgent are the task the rule chose for last and its
	// agent.
	lastTask, lastAgent string
}

// New makes the rule. Entries are read as config checked them
// (config.SplitAgentModel).
func New(c Config) *Rule {
	if c.EscalateAfter < 1 {
		c.EscalateAfter = 1
	}
	r := &Rule{cfg: c, limits: map[string]time.Time{}, unavailable: map[string]string{}}
	for _, e := range c.Fallback {
		a, m := config.SplitAgentModel(e)
		r.fallback = append(r.fallback, Pair{a, m})
	}
	for _, e := range c.Escalate {
		a, m := config.SplitAgentModel(e)
		r.escalate = append(r.escalate, Pair{a, m})
	}
	return r
}

// HasFallback reports whether a usage limit can switch agents.
func (r *Rule) HasFallback() bool { return len(r.fallback) > 0 }

// Escalates reports whether a failing task climbs a ladder.
func (r *Rule) Escalates() bool { return len(r.escalate) > 0 }

// Limit records that agent is limited until the given time.
func (r *Rule) Limit(agent string, until time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if until.After(r.limits[agent]) {
		r.limits[agent] = until
	}
}

// Unavailable records that agent cannot stand in (not installed, not
// logged in): the rule passes over it from now on.
func (r *Rule) Unavailable(agent, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unavailable[agent] = why
}

// LimitedUntil is when agent's limit ends; zero when it has none at now.
func (r *Rule) LimitedUntil(agent string, now time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.limitedUntil(agent, now)
}

func (r *Rule) limitedUntil(agent string, now time.Time) time.Time {
	if u := r.limits[agent]; u.After(now) {
		return u
	}
	return time.Time{}
}

func (r *Rule) usable(agent string, now time.Time) bool {
	_, out := r.unavailable[agent]
	return !out && !r.limits[agent].After(now)
}

// start is the agent and model t starts on, strongest first: the command
// line's, the task's, the run's. A model belongs to the agent of its own
// level (a task's bare model to the run's agent), and is not carried to
// another agent; the command line's --model goes to whichever agent the
// task starts on.
func (r *Rule) start(t task.Task) (Pair, string) {
	c := r.cfg
	agent := cmp.Or(c.CLIAgent, t.Agent, c.Agent)
	switch {
	case c.CLIModel != "":
		return Pair{agent, c.CLIModel}, "--model"
	case t.Model != "" && cmp.Or(t.Agent, c.Agent) == agent:
		return Pair{agent, t.Model}, "the task's"
	case c.CLIAgent != "":
		if agent == c.Agent {
			return Pair{agent, c.Model}, "--agent"
		}
		return Pair{agent, ""}, "--agent"
	case t.Agent != "" && t.Agent != c.Agent:
		return Pair{agent, ""}, "the task's"
	case t.Agent != "":
		return Pair{agent, c.Model}, "the task's"
	}
	return Pair{agent, c.Model}, "the run's"
}

// ladder is the rungs t climbs from its start: those after the start
// when it is a rung, else all of them. A bare rung is a model of the
// task's agent.
func (r *Rule) ladder(start Pair) []Pair {
	rungs := make([]Pair, len(r.escalate))
	for i, e := range r.escalate {
		rungs[i] = Pair{cmp.Or(e.Agent, start.Agent), e.Model}
	}
	if i := slices.Index(rungs, start); i >= 0 && start.Model != "" {
		return rungs[i+1:]
	}
	return rungs
}

// For says who runs t's next attempt after failed failed attempts, at
// now. It remembers the answer: a later call for the same task keeps a
// stand-in while it is usable.
func (r *Rule) For(t task.Task, failed int, now time.Time) Choice {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.choose(t, failed, now)
	r.lastTask, r.lastAgent = t.ID, c.Agent
	return c
}

func (r *Rule) choose(t task.Task, failed int, now time.Time) Choice {
	start, why := r.start(t)
	ladder := r.ladder(start)
	rung := min(failed/r.cfg.EscalateAfter, len(ladder))
	want := start
	if rung > 0 {
		want = ladder[rung-1]
		why = fmt.Sprintf("escalated to rung %d of %d after %s", rung, len(ladder), words.Count(failed, "failed attempt"))
	}
	c := Choice{Agent: want.Agent, Model: want.Model, Why: why, Rung: rung, For: want.Agent}
	standIn := func(a string) Choice {
		c.Agent, c.Model = a, r.modelOn(a, rung)
		c.Why = a + " stands in for " + want.Agent
		if u := r.limitedUntil(want.Agent, now); !u.IsZero() {
			c.Until = u
			c.Why += ", limited until " + u.Format(time.RFC3339)
		} else {
			c.Why += " until the task ends"
		}
		return c
	}
	if r.lastTask == t.ID && r.lastAgent != want.Agent && r.isFallback(r.lastAgent) && r.usable(r.lastAgent, now) {
		// A task started on a stand-in finishes there: the run goes
		// back to a reset agent at the next task.
		return standIn(r.lastAgent)
	}
	if r.usable(want.Agent, now) {
		return c
	}
	candidates := []string{want.Agent}
	for _, f := range r.fallback {
		if !slices.Contains(candidates, f.Agent) {
			candidates = append(candidates, f.Agent)
		}
	}
	for _, a := range candidates[1:] {
		if r.usable(a, now) {
			return standIn(a)
		}
	}
	c.Blocked = true
	for _, a := range candidates {
		if u, ok := r.limits[a]; ok && u.After(now) && (c.Until.IsZero() || u.Before(c.Until)) {
			if _, out := r.unavailable[a]; !out {
				c.Until = u
			}
		}
	}
	c.Why = "every agent that can run the task is limited"
	return c
}

// Start is who t starts on, no agent limited: for --dry-run and `ralph
// tasks show`. It remembers nothing.
func (r *Rule) Start(t task.Task) Choice {
	fresh := &Rule{cfg: r.cfg, fallback: r.fallback, escalate: r.escalate}
	return fresh.choose(t, 0, time.Time{})
}

// isFallback reports whether agent is one of the fallback list's.
func (r *Rule) isFallback(agent string) bool {
	return slices.ContainsFunc(r.fallback, func(p Pair) bool { return p.Agent == agent })
}

// modelOn is the model a stand-in agent uses on rung k: the k-th
// escalate entry that names it (its last when it has fewer), else its
// fallback entry's model, else its default. A bare model never goes to
// another agent.
func (r *Rule) modelOn(agent string, k int) string {
	var own []string
	for _, e := range r.escalate {
		if e.Agent == agent {
			own = append(own, e.Model)
		}
	}
	if k > 0 && len(own) > 0 {
		return own[min(k, len(own))-1]
	}
	if i := slices.IndexFunc(r.fallback, func(p Pair) bool { return p.Agent == agent }); i >= 0 {
		return r.fallback[i].Model
	}
	return ""
}

// Agents are the agents the rule may hand a task to: the run's, the
// command line's, the fallback's, escalate's and allowed-agents, each
// once, in that order.
func (r *Rule) Agents() []string {
	var names []string
	add := func(n string) {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	add(r.cfg.CLIAgent)
	add(r.cfg.Agent)
	for _, p := range r.fallback {
		add(p.Agent)
	}
	for _, p := range r.escalate {
		add(p.Agent)
	}
	for _, n := range r.cfg.AllowedAgents {
		add(n)
	}
	return names
}

// Check says what is wrong with what t names, as the plan at path has
// it: an agent the config does not allow, a model outside
// allowed-models, or a ladder too long for max-attempts.
func (r *Rule) Check(path string, t task.Task) error {
	var errs []error
	// An error names the line where the plan names the agent or the
	// model, else the task's.
	at := func(line int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: task %s: %s", location(path, cmp.Or(line, t.Line)), t.ID, fmt.Sprintf(format, args...)))
	}
	if allowed := r.Agents(); t.Agent != "" && !slices.Contains(allowed, t.Agent) {
		at(t.AgentLine, "agent %q is not allowed: a task may name %s (add it to allowed-agents in ralph.toml to allow it)",
			t.Agent, strings.Join(allowed, ", "))
	}
	if t.Model != "" && len(r.cfg.AllowedModels) > 0 && !slices.Contains(r.cfg.AllowedModels, t.Model) {
		at(t.ModelLine, "model %q is not in allowed-models (%s)", t.Model, strings.Join(r.cfg.AllowedModels, ", "))
	}
	if err := r.checkLadder(t); err != nil {
		at(0, "%v", err)
	}
	return errors.Join(errs...)
}

// checkLadder says when t cannot reach its top rung before max-attempts
// fails it.
func (r *Rule) checkLadder(t task.Task) error {
	start, _ := r.start(t)
	n := len(r.ladder(start))
	if n == 0 || r.cfg.MaxAttempts == 0 || r.cfg.EscalateAfter*n < r.cfg.MaxAttempts {
		return nil
	}
	return fmt.Errorf("starting on %s, it would fail before its top rung: escalate-after %d × %s of escalate (%s) needs max-attempts %d or more, and max-attempts is %d",
		start, r.cfg.EscalateAfter, words.Count(n, "rung"), strings.Join(r.cfg.Escalate, ", "), r.cfg.EscalateAfter*n+1, r.cfg.MaxAttempts)
}

// CheckPlan checks every task of p that is not done (Check), one error
// per line.
func (r *Rule) CheckPlan(p *task.Plan) error {
	var errs []error
	for _, t := range p.Tasks {
		if t.Status == task.StatusDone {
			continue
		}
		if err := r.Check(p.Path, t); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func location(path string, line int) string {
	if line > 0 {
		return fmt.Sprintf("%s:%d", path, line)
	}
	return path
}

// Describe says the rule in one line, for the run's header and
// --dry-run: "claude:sonnet → opus after 1 failure; on a usage limit:
// codex, gemini".
func (r *Rule) Describe() string {
	start, _ := r.start(task.Task{})
	var b strings.Builder
	b.WriteString(start.String())
	if ladder := r.ladder(start); len(ladder) > 0 {
		for _, p := range ladder {
			b.WriteString(" → ")
			if p.Agent == start.Agent {
				b.WriteString(p.Model)
			} else {
				b.WriteString(p.String())
			}
		}
		b.WriteString(" after " + words.Count(r.cfg.EscalateAfter, "failure"))
		if len(ladder) > 1 {
			b.WriteString(" each")
		}
	}
	s := b.String()
	if len(r.fallback) > 0 {
		names := make([]string, len(r.fallback))
		for i, p := range r.fallback {
			names[i] = p.String()
		}
		s += "; on a usage limit: " + strings.Join(names, ", ")
	}
	return s
}

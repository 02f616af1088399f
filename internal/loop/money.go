package loop

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
)

// Pricer prices the tokens of agents that report no cost (internal/price
// implements it; the command line wires it).
type Pricer interface {
	// Estimate is the cost of the tokens on model, in USD (input without
	// the cache reads and writes); ok is false when the model has no price.
	Estimate(model string, input, output, cacheRead, cacheWrite int64) (usd float64, ok bool)
	// DefaultModel is the model agentName uses when it is given none,
	// where known.
	DefaultModel(agentName string) string
}

// Quota actions: what a run does when a protected window crosses its line.
const (
	QuotaWait = "wait"
	QuotaStop = "stop"
)

// pricedAgent gives every result a cost: the one the agent reported, or
// an estimate from the price table, or none (cost unknown) for a model the
// table does not have, which the run says once per model.
type pricedAgent struct {
	Agent
	prices Pricer
	mu     sync.Mutex
	// warned are the models (or "(default)", "(tokens)") already warned
	// of; pending the warnings not yet shown (the coordinator's goroutine
	// shows them: workers share the agent).
	warned  map[string]bool
	pending []string
}

// priced wraps a, unless it is wrapped already (a --parallel worker gets
// the coordinator's agent, whose once-per-model warnings it shares).
func priced(a Agent, prices Pricer) Agent {
	if a == nil || prices == nil {
		return a
	}
	if _, ok := a.(*pricedAgent); ok {
		return a
	}
	return &pricedAgent{Agent: a, prices: prices, warned: map[string]bool{}}
}

func (p *pricedAgent) Run(ctx context.Context, req agent.Request, sink agent.Sink) (agent.Result, error) {
	res, err := p.Agent.Run(ctx, req, sink)
	p.price(req, &res)
	return res, err
}

// price fills res's cost where the agent reported none.
func (p *pricedAgent) price(req agent.Request, res *agent.Result) {
	if res.HasCost {
		return
	}
	u := res.Usage
	if u.InputTokens+u.OutputTokens+u.CacheReadTokens+u.CacheWriteTokens == 0 {
		if res.RawText {
			// Plain text output (Kiro, a command agent): no tokens were
			// reported, not none used. Its cost is unknown (null in
			// history), and that is all: such an agent never reports
			// usage, so a warning would only say so every run.
			return
		}
		// Nothing used costs nothing, whatever the model.
		res.HasCost, res.CostEstimated = true, true
		return
	}
	model := res.Model
	if model == "" {
		model = req.Model
	}
	if model == "" {
		model = p.prices.DefaultModel(p.Name())
	}
	if usd, ok := p.prices.Estimate(model, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens); ok {
		res.CostUSD, res.HasCost, res.CostEstimated = usd, true, true
		return
	}
	if model == "" {
		p.once("(default)", fmt.Sprintf("%s: no price for the model it uses by default: its tokens are counted but not their cost, "+
			"so --budget does not see them; run with --model and, if ralph has no price for it, add [prices.\"MODEL\"] to ralph.toml", p.Name()))
		return
	}
	p.once(model, fmt.Sprintf("%s: no price for model %s: its tokens are counted but not their cost, so --budget does not see them; "+
		"add [prices.%q] input, output, cache-read and cache-write (USD per million tokens) to ralph.toml", p.Name(), model, model))
}

// pricedAll is agents, each priced, the run's own (own, the agent or the
// reviewer, priced already) under its name: one agent, one set of
// warnings.
func pricedAll(agents map[string]Agent, prices Pricer, own Agent) map[string]Agent {
	all := map[string]Agent{}
	for name, a := range agents {
		if own != nil && name == own.Name() {
			all[name] = own
		} else {
			all[name] = priced(a, prices)
		}
	}
	if own != nil {
		if _, ok := all[own.Name()]; !ok {
			all[own.Name()] = own
		}
	}
	return all
}

// once queues warning the first time key comes up.
func (p *pricedAgent) once(key, warning string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.warned[key] {
		p.warned[key] = true
		p.pending = append(p.pending, warning)
	}
}

// takeWarnings returns the warnings not yet shown.
func (p *pricedAgent) takeWarnings() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.pending
	p.pending = nil
	return w
}

// costSource says where a result's cost comes from.
func costSource(res agent.Result) string {
	switch {
	case !res.HasCost:
		return state.CostUnknown
	case res.CostEstimated:
		return state.CostEstimated
	}
	return state.CostReported
}

// priceWarnings shows, once per model, that a model has no price.
func (r *runner) priceWarnings() {
	agents := []Agent{r.deps.Agent, r.deps.Reviewer}
	for _, m := range []map[string]Agent{r.deps.Agents, r.deps.Reviewers} {
		for _, name := range slices.Sorted(maps.Keys(m)) {
			agents = append(agents, m[name])
		}
	}
	// Each priced agent once (pricedAll maps the run's own under its
	// name); only pointers are compared.
	seen := map[*pricedAgent]bool{}
	for _, a := range agents {
		if p, ok := a.(*pricedAgent); ok && !seen[p] {
			seen[p] = true
			for _, w := range p.takeWarnings() {
				r.warn("%s", w)
			}
		}
	}
}

// noteQuota keeps the latest state of the windows agentName reported, in
// state.json, and reports a change.
func (r *runner) noteQuota(agentName string, windows []agent.QuotaWindow) {
	if len(windows) == 0 {
		return
	}
	if r.st.Quota == nil {
		r.st.Quota = map[string]state.QuotaWindow{}
	}
	now := r.deps.Now()
	changed := false
	for _, w := range windows {
		q := state.QuotaWindow{Agent: agentName, Status: w.Status, UpdatedAt: now}
		if w.HasUtilization {
			u := w.Utilization
			q.Utilization = &u
		}
		if !w.ResetsAt.IsZero() {
			t := w.ResetsAt
			q.ResetsAt = &t
		}
		old, ok := r.st.Quota[w.Window]
		if !ok || old.String() != q.String() {
			changed = true
		}
		if ok && samePeriod(old, q) && *q.Utilization > *old.Utilization {
			step := *q.Utilization - *old.Utilization
			q.Step = &step
		} else if ok && samePeriod(old, q) {
			q.Step = old.Step
		}
		r.st.Quota[w.Window] = q
	}
	if changed {
		// A copy: renderers keep events, and the run goes on changing its own.
		r.emit(Event{Kind: EventQuota, Iteration: r.st.Iteration, Quota: maps.Clone(r.st.Quota), Message: quotaLine(r.st.Quota)})
	}
}

// samePeriod says two reports of a window, both with a utilization, are
// of the same period (the same reset).
func samePeriod(a, b state.QuotaWindow) bool {
	return a.Utilization != nil && b.Utilization != nil && a.ResetsAt != nil && b.ResetsAt != nil && a.ResetsAt.Equal(*b.ResetsAt)
}

// quotaLine is the windows' state in one line, for the quota event:
// "five_hour allowed, 12% used · seven_day allowed_warning, 85% used,
// resets …".
func quotaLine(quota map[string]state.QuotaWindow) string {
	names := slices.Sorted(maps.Keys(quota))
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = name + " " + quota[name].String()
	}
	return strings.Join(parts, " · ")
}

// quotaHold returns the protected window of agentName's account that
// stops its new iterations, and why; "" when none does. A window whose
// reset has passed holds nothing, nor does an earlier run's report of a
// window without a reset time: the next report says where it stands.
func (r *runner) quotaHold(agentName string) (string, state.QuotaWindow, string) {
	if r.opts.QuotaReserve <= 0 {
		return "", state.QuotaWindow{}, ""
	}
	line := 100 - r.opts.QuotaReserve
	now := r.deps.Now()
	for _, name := range slices.Sorted(maps.Keys(r.st.Quota)) {
		q := r.st.Quota[name]
		if cmp.Or(q.Agent, r.deps.Agent.Name()) != agentName {
			continue // another account's
		}
		if q.ResetsAt != nil && !q.ResetsAt.After(now) {
			continue
		}
		if q.ResetsAt == nil && q.UpdatedAt.Before(r.st.StartedAt) {
			// No reset to wait for, and an earlier run's news: this run's
			// first iteration will say where the window stands.
			continue
		}
		listed := slices.Contains(r.opts.QuotaWindows, name)
		if len(r.opts.QuotaWindows) > 0 && !listed {
			continue
		}
		switch {
		case q.Utilization != nil && *q.Utilization >= line:
			return name, q, fmt.Sprintf("the %s window is %.0f%% used, at or past the %.0f%% that --quota-reserve %g allows",
				name, *q.Utilization, line, r.opts.QuotaReserve)
		case q.Utilization != nil && q.Step != nil && *q.Utilization+*q.Step > line:
			return name, q, fmt.Sprintf("the %s window is %.0f%% used and the last iteration used %.1f%% of it: "+
				"another would pass the %.0f%% that --quota-reserve %g allows", name, *q.Utilization, *q.Step, line, r.opts.QuotaReserve)
		case listed && q.Status == "allowed_warning":
			return name, q, fmt.Sprintf("the agent warns that the %s window is running out (allowed_warning), and quota-windows protects it", name)
		}
	}
	return "", state.QuotaWindow{}, ""
}

// checkQuota runs before an iteration starts: when a protected window of
// the agent about to run has crossed its line, a fallback agent stands in
// (again: the route is to be asked again), or the run waits for the
// window's reset (bounded by --max-wait, like a usage limit) or, with
// quota-action = "stop", stops with the tasks open. t is the task that
// would start.
func (r *runner) checkQuota(ctx context.Context, t task.Task) (again bool, err error) {
	agentName := r.agentNow().Name()
	name, q, why := r.quotaHold(agentName)
	if name == "" {
		return false, nil
	}
	if r.quotaFailover(agentName, q) {
		return true, nil
	}
	if r.opts.QuotaAction == QuotaStop {
		return false, fmt.Errorf("%w: quota: %s (quota-action = \"stop\"); %s", ErrLimit, why, resetNote(q))
	}
	if q.ResetsAt == nil {
		return false, fmt.Errorf("%w: quota: %s, and the agent did not say when it resets", ErrLimit, why)
	}
	now := r.deps.Now()
	until := q.ResetsAt.Add(r.deps.Jitter(min(limitJitter, q.ResetsAt.Sub(now)/10)))
	if r.opts.MaxWait > 0 && until.Sub(now) > r.opts.MaxWait {
		return false, fmt.Errorf("%w: quota: %s; it resets at %s, %s away, beyond --max-wait %s",
			ErrLimit, why, until.Format(time.RFC3339), until.Sub(now).Round(time.Second), r.opts.MaxWait)
	}
	prev := r.st.CurrentTask
	if r.st.CurrentTask == "" {
		r.st.CurrentTask = t.ID // for the interrupt's history line
	}
	err = r.wait(ctx, until, "quota: "+why)
	r.st.CurrentTask = prev
	return false, err
}

// quotaNote says in the run header how the run paces against the
// account's windows; "" when it does not.
func (r *runner) quotaNote() string {
	if r.opts.QuotaReserve <= 0 {
		return ""
	}
	windows := "every window the agent reports"
	if len(r.opts.QuotaWindows) > 0 {
		windows = strings.Join(r.opts.QuotaWindows, ", ")
	}
	action := "waits for the reset"
	if r.opts.QuotaAction == QuotaStop {
		action = "stops"
	}
	return fmt.Sprintf(", quota reserve %g%% of %s (past it, the run %s)", r.opts.QuotaReserve, windows, action)
}

func resetNote(q state.QuotaWindow) string {
	if q.ResetsAt == nil {
		return "the tasks stay open"
	}
	return "it resets at " + q.ResetsAt.UTC().Format(time.RFC3339) + "; the tasks stay open"
}

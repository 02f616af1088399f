package config

import (
	"fmt"
	"slices"
	"strings"
)

// routeFields are the keys that say which agent and model run a task:
// failover on a usage limit, escalation after failures, and what a plan's
// task may name (package route applies them).
func routeFields() []field {
	return []field{
		{key: "fallback", ptr: func(c *Config) any { return &c.Fallback },
			doc:   "agents a usage limit switches the run to, in order, each agent or agent:model; the run goes back to the first whose limit has reset at the next task; empty: wait for the reset",
			check: func(c *Config) string { return checkFallback(c.Fallback) },
			flag:  runFlag("fallback", "", "agents to switch to on a usage limit, in order, e.g. codex,gemini:gemini-2.5-pro")},
		{key: "fallback-after", ptr: func(c *Config) any { return &c.FallbackAfter },
			doc:   "with fallback, how long a usage limit is waited for before the run switches agents",
			check: func(c *Config) string { return nonNegative(c.FallbackAfter) }},
		{key: "escalate", ptr: func(c *Config) any { return &c.Escalate },
			doc:   "models a failing task climbs, one rung per escalate-after failed attempts, each a model of the task's agent or agent:model",
			check: func(c *Config) string { return checkEscalate(c.Escalate) }},
		{key: "escalate-after", ptr: func(c *Config) any { return &c.EscalateAfter },
			doc:   "failed attempts at a task before its next attempt climbs to the next escalate rung",
			check: func(c *Config) string { return atLeast(c.EscalateAfter, 1) }},
		{key: "allowed-agents", ptr: func(c *Config) any { return &c.AllowedAgents },
			doc:   "agents a plan's task may name besides the run's agent, fallback's and escalate's",
			check: func(c *Config) string { return checkAgentList(c.AllowedAgents) }},
		{key: "allowed-models", ptr: func(c *Config) any { return &c.AllowedModels },
			doc: "models a plan's task may name; empty: any model"},
	}
}

// SplitAgentModel reads an entry of fallback or escalate: "codex:gpt-5"
// is the agent codex with the model gpt-5, "codex" the agent alone when
// agent names one, and anything else a bare model (a model name may hold
// a colon: "qwen3:8b").
func SplitAgentModel(entry string) (agentName, model string) {
	name, rest, ok := strings.Cut(entry, ":")
	switch {
	case slices.Contains(agentNames(), name) && ok:
		return name, rest
	case slices.Contains(agentNames(), entry):
		return entry, ""
	}
	return "", entry
}

// ReviewFallback are the reviewer's agents on a usage limit:
// review.fallback, else, when the reviewer is the run's agent
// (review.agent empty), the run's fallback.
func (c Config) ReviewFallback() []string {
	if len(c.Review.Fallback) > 0 || c.Review.Agent != "" {
		return c.Review.Fallback
	}
	return c.Fallback
}

// checkFallback accepts a list of agent or agent:model entries.
func checkFallback(entries []string) string {
	for i, e := range entries {
		name, model := SplitAgentModel(e)
		switch {
		case name == "":
			return fmt.Sprintf("entry %d %q: want an agent or agent:model, with an agent of %s", i+1, e, strings.Join(agentNames(), ", "))
		case strings.HasSuffix(e, ":") && model == "":
			return fmt.Sprintf("entry %d %q: the model after the colon is empty", i+1, e)
		}
	}
	return ""
}

// checkEscalate accepts a list of model or agent:model rungs.
func checkEscalate(entries []string) string {
	for i, e := range entries {
		if name, model := SplitAgentModel(e); model == "" {
			what := "an agent without a model"
			if name == "" {
				what = "no model"
			}
			return fmt.Sprintf("entry %d %q: %s; a rung is a model, or agent:model", i+1, e, what)
		}
	}
	return ""
}

// checkAgentList accepts a list of agent names.
func checkAgentList(names []string) string {
	for i, n := range names {
		if !slices.Contains(agentNames(), n) {
			return fmt.Sprintf("entry %d %q: unknown agent (valid: %s)", i+1, n, strings.Join(agentNames(), ", "))
		}
	}
	return ""
}

package config

import (
	"fmt"
	"math"
	neturl "net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/ralph-loop/ralph/internal/egress"
	"github.com/ralph-loop/ralph/internal/task"
)

// KeyDoc documents one top-level key, for --help, docs/configuration.md and the
// `ralph init` template.
type KeyDoc struct {
	Key     string // as written in ralph.toml: max-iterations
	Env     string // the environment variable: RALPH_MAX_ITERATIONS; empty for agents (file only)
	Type    string // string, integer, number, bool, duration, list or table
	Default string // the default as a TOML value: 50, "30m", ["promise-tag"]
	Doc     string // one line
}

// FlagDoc is a key that is also a command-line flag. The flag's type is
// the key's (a list is one comma-separated value) and its default the
// key's default.
type FlagDoc struct {
	Key       string // the key the flag sets: max-iterations
	Name      string // the flag, without dashes: max-iterations
	Shorthand string // one letter, or empty: n
	Usage     string // the help line; a `WORD` in backquotes names the value
	// Default is the key's default, typed: string, int, float64, bool,
	// time.Duration, or []string for a list.
	Default any
	// Values are the values the flag takes when they are a few named ones
	// (each item's, for a list), for shell completion; nil otherwise.
	Values []string
}

// field is one top-level key of the schema. ptr returns the address of the
// key's field in a Config, which gives its type; check, when set, returns
// what is wrong with the value (empty when nothing is); flag, when set, is
// the key's command-line flag.
type field struct {
	key   string
	doc   string
	ptr   func(*Config) any
	check func(*Config) string
	flag  *flagSpec
	// values, when set, are the only values the key takes (each item's,
	// for a list).
	values func() []string
	// secret: the value is a credential, never shown (ralph config says
	// where it is set instead), and not to be kept in ralph.toml.
	secret bool
}

// flagSpec declares a key's flag once, for every command that takes it.
type flagSpec struct {
	name, shorthand, usage string
	commands               []string // run, plan
}

// runFlag is a flag of `ralph run` only.
func runFlag(name, shorthand, usage string) *flagSpec {
	return &flagSpec{name: name, shorthand: shorthand, usage: usage, commands: []string{"run"}}
}

// reviewFlag is a flag of `ralph review` only.
func reviewFlag(name, usage string) *flagSpec {
	return &flagSpec{name: name, usage: usage, commands: []string{"review"}}
}

// agentNames mirrors the agent package's adapter names (config must not
// import it); a test of the cli package compares them.
func agentNames() []string {
	return []string{"claude", "codex", "gemini", "opencode", "droid", "copilot", "qwen", "amp", "cursor", "kiro", "command"}
}

// ownerships are the values of ownership.
func ownerships() []string { return []string{string(task.OwnerRunner), string(task.OwnerAgent)} }

// quotaActions are the values of quota-action.
func quotaActions() []string { return []string{"wait", "stop"} }

// strategyNames mirrors the completion package's strategy names (config
// must not import it).
func strategyNames() []string { return []string{"promise-tag", "relaxed-tag", "heuristic"} }

// OutputNames are the output dialects of a command agent. They mirror the
// agent package's dialects, which config must not import; a test in
// package agent checks that they agree.
func OutputNames() []string {
	return []string{"text", "claude-stream-json", "codex-json", "gemini-stream-json", "opencode-json",
		"droid-stream-json", "copilot-json", "cursor-stream-json"}
}

// ErrorKindNames are the keys of an [agents.NAME.error-patterns] table. They
// mirror the error kinds the agent package accepts in patterns; a test in
// package agent checks that they agree.
func ErrorKindNames() []string { return []string{"usage_limit", "rate_limit", "transient", "fatal"} }

// checkErrorPattern returns what is wrong with one pattern of an
// error-patterns table, without the key.
func checkErrorPattern(kind, pattern string) string {
	if !slices.Contains(ErrorKindNames(), kind) {
		return fmt.Sprintf("unknown error kind %q (valid: %s)", kind, strings.Join(ErrorKindNames(), ", "))
	}
	if _, err := regexp.Compile(pattern); err != nil {
		return fmt.Sprintf("%q is not a regular expression: %v", pattern, err)
	}
	return ""
}

// fields is the schema of the top-level keys, in documentation order.
func fields() []field {
	return append([]field{
		{key: "tasks", ptr: func(c *Config) any { return &c.Tasks },
			doc: "plan file; empty: discover prd.json, tasks.json, progress.md, IMPLEMENTATION_PLAN.md, fix_plan.md"},
		{key: "agent", ptr: func(c *Config) any { return &c.Agent },
			doc:    "agent CLI to run: " + orList(agentNames()),
			check:  func(c *Config) string { return notEmpty(c.Agent) },
			values: agentNames,
			flag: &flagSpec{name: "agent", usage: "agent CLI: " + strings.Join(agentNames(), ", "),
				commands: []string{"run", "plan"}}},
		{key: "model", ptr: func(c *Config) any { return &c.Model },
			doc:  "model passed to the agent; empty: the agent's default",
			flag: &flagSpec{name: "model", usage: "model to ask the agent for", commands: []string{"run", "plan"}}},
		{key: "prompt", ptr: func(c *Config) any { return &c.Prompt },
			doc:  "prompt template file; empty: the built-in prompt",
			flag: runFlag("prompt", "", "prompt template `FILE` (default: the embedded one)")},
		{key: "max-iterations", ptr: func(c *Config) any { return &c.MaxIterations },
			doc:   "stop after this many iterations; 0: no limit",
			check: func(c *Config) string { return atLeast(c.MaxIterations, 0) },
			flag:  runFlag("max-iterations", "n", "stop after `N` agent runs (0: no limit)")},
		{key: "max-attempts", ptr: func(c *Config) any { return &c.MaxAttempts },
			doc:   "failed attempts after which a task is marked failed",
			check: func(c *Config) string { return atLeast(c.MaxAttempts, 1) },
			flag:  runFlag("max-attempts", "", "failed attempts before a task is marked failed")},
		{key: "timeout", ptr: func(c *Config) any { return &c.Timeout },
			doc:   "wall-clock limit of one iteration; 0: none",
			check: func(c *Config) string { return nonNegative(c.Timeout) },
			flag:  runFlag("timeout", "", "wall-clock limit per iteration")},
		{key: "idle-timeout", ptr: func(c *Config) any { return &c.IdleTimeout },
			doc:   "stop an iteration after this long without output; 0: none",
			check: func(c *Config) string { return nonNegative(c.IdleTimeout) },
			flag:  runFlag("idle-timeout", "", "limit on agent silence per iteration")},
		{key: "max-wait", ptr: func(c *Config) any { return &c.MaxWait },
			doc:   "longest wait for a usage limit to reset before stopping",
			check: func(c *Config) string { return nonNegative(c.MaxWait) },
			flag:  runFlag("max-wait", "", "longest wait for a usage limit to reset")},
		{key: "delay", ptr: func(c *Config) any { return &c.Delay },
			doc:   "pause between iterations",
			check: func(c *Config) string { return nonNegative(c.Delay) },
			flag:  runFlag("delay", "", "pause between iterations")},
		{key: "budget", ptr: func(c *Config) any { return &c.Budget },
			doc: "stop starting iterations once the run has cost this many USD; 0: no budget",
			check: func(c *Config) string {
				if !(c.Budget >= 0) || math.IsInf(c.Budget, 0) {
					return fmt.Sprintf("want 0 or more, got %v", c.Budget)
				}
				return ""
			},
			flag: runFlag("budget", "", "stop before an iteration once this many `USD` are spent (0: none)")},
		{key: "ownership", ptr: func(c *Config) any { return &c.Ownership },
			doc:    "who ticks tasks: runner (ralph, after the agent's promise) or agent (the agent edits the plan)",
			check:  func(c *Config) string { return oneOf(c.Ownership, ownerships()) },
			values: ownerships,
			flag:   runFlag("ownership", "", "who marks tasks done: runner or agent")},
		{key: "completion", ptr: func(c *Config) any { return &c.Completion },
			doc:    "completion strategies, tried in order: promise-tag, relaxed-tag, heuristic",
			check:  func(c *Config) string { return checkStrategies(c.Completion) },
			values: strategyNames,
			flag:   runFlag("completion", "", "completion strategies in order: "+strings.Join(strategyNames(), ","))},
		{key: "no-commit", ptr: func(c *Config) any { return &c.NoCommit },
			doc:  "do not commit after each accepted task",
			flag: runFlag("no-commit", "", "do not commit after accepted tasks")},
		{key: "commit-template", ptr: func(c *Config) any { return &c.CommitTemplate },
			doc:   "message of a task's commit, a Go template over the task: {{.ID}}, {{.Title}}, {{.Description}}",
			check: func(c *Config) string { return checkTemplate(c.CommitTemplate) }},
		{key: "allow-dirty", ptr: func(c *Config) any { return &c.AllowDirty },
			doc:  "start even when the working tree has changes that are not ralph's own",
			flag: runFlag("allow-dirty", "", "start even when the working tree has changes that are not ralph's own")},
		{key: "allow-no-repo", ptr: func(c *Config) any { return &c.AllowNoRepo },
			doc:  "run in a directory that is not in a git repository: nothing is committed, no guard, no reviewer diff, no rollback",
			flag: runFlag("allow-no-repo", "", "run even though the directory is not in a git repository (nothing committed, no guard, no rollback)")},
		{key: "allow-failing-gates", ptr: func(c *Config) any { return &c.AllowFailingGates },
			doc:  "start even when a gate fails before any change; such a gate is advisory for the run (its failures do not reject a task)",
			flag: runFlag("allow-failing-gates", "", "treat the gates that fail before any change as advisory for this run instead of stopping")},
		{key: "parallel", ptr: func(c *Config) any { return &c.Parallel },
			doc:   "tasks run at once, each in its own worktree",
			check: func(c *Config) string { return atLeast(c.Parallel, 1) },
			flag:  runFlag("parallel", "", "tasks to run at once, each in its own git worktree")},
		{key: "grace", ptr: func(c *Config) any { return &c.Grace },
			doc:   "wait between SIGTERM and SIGKILL when stopping an agent",
			check: func(c *Config) string { return nonNegative(c.Grace) }},
		{key: "stuck-threshold", ptr: func(c *Config) any { return &c.Stuck },
			doc:   "stop after this many iterations in a row without progress; 0: never",
			check: func(c *Config) string { return atLeast(c.Stuck, 0) }},
		{key: "max-tokens", ptr: func(c *Config) any { return &c.MaxTokens },
			doc:   "token budget for the run, for agents that report no cost; 0: none",
			check: func(c *Config) string { return atLeast(c.MaxTokens, 0) },
			flag:  runFlag("max-tokens", "", "stop before an iteration once this many tokens are used, for agents that report no cost (0: none)")},
		{key: "transcript-max", ptr: func(c *Config) any { return &c.TranscriptMax },
			doc:   "MiB of an iteration's agent output kept in its transcript; past it the output is still read for events, not stored",
			check: func(c *Config) string { return atLeast(c.TranscriptMax, 1) }},
		{key: "transcript-max-run", ptr: func(c *Config) any { return &c.TranscriptMaxRun },
			doc:   "MiB of agent output a run keeps in its transcripts, all iterations together",
			check: func(c *Config) string { return atLeast(c.TranscriptMaxRun, 1) }},
		{key: "quota-reserve", ptr: func(c *Config) any { return &c.QuotaReserve },
			doc: "percent of each protected usage window to leave unused: no iteration starts once the agent reports a window past 100 minus it; 0: no pacing",
			check: func(c *Config) string {
				if !(c.QuotaReserve >= 0 && c.QuotaReserve < 100) {
					return fmt.Sprintf("want a percentage from 0 to below 100, got %v", c.QuotaReserve)
				}
				return ""
			},
			flag: runFlag("quota-reserve", "", "leave `PCT` percent of each protected usage window unused: wait for its reset (or stop) once the agent reports it past 100-PCT (0: off)")},
		{key: "quota-windows", ptr: func(c *Config) any { return &c.QuotaWindows },
			doc:  "usage windows quota-reserve protects (five_hour, seven_day, seven_day_opus, ...), an allowed_warning of which also pauses the run; empty: every window the agent reports a utilization for",
			flag: runFlag("quota-windows", "", "usage windows --quota-reserve protects, e.g. seven_day (default: all reported)")},
		{key: "quota-action", ptr: func(c *Config) any { return &c.QuotaAction },
			doc:    "when a protected window crosses its line: wait (for its reset, bounded by max-wait) or stop (exit 3, tasks open)",
			check:  func(c *Config) string { return oneOf(c.QuotaAction, quotaActions()) },
			values: quotaActions,
			flag:   runFlag("quota-action", "", "when a protected window crosses its line: wait for its reset, or stop")},
		{key: "gates.commands", ptr: func(c *Config) any { return &c.Gates.Commands },
			doc: "[gates] shell commands a task must pass before it is accepted, e.g. [\"go test ./...\"]"},
		{key: "gates.timeout", ptr: func(c *Config) any { return &c.Gates.Timeout },
			doc:   "[gates] time limit of each gate command",
			check: func(c *Config) string { return nonNegative(c.Gates.Timeout) }},
		{key: "guard", ptr: func(c *Config) any { return &c.Guard },
			doc:    "tamper guard after each done claim: warn (report the changes that weaken checks), strict (reject the task for them) or off",
			check:  func(c *Config) string { return oneOf(c.Guard, GuardModes()) },
			values: GuardModes,
			flag:   runFlag("guard", "", "tamper guard: warn, strict (reject a task whose diff weakens the checks) or off")},
	}, slices.Concat(routeFields(), reviewFields(), sandboxFields(), notifyFields(), workerFields(), githubFields())...)
}

// sandboxFields are the keys of the [sandbox] section.
func sandboxFields() []field {
	return []field{
		{key: "sandbox.mode", ptr: func(c *Config) any { return &c.Sandbox.Mode },
			doc:    "[sandbox] what confines agents, reviewers and gates: auto (bubblewrap or sandbox-exec when a probe shows it works, otherwise none with a warning), bwrap or sandbox-exec (refuse to run without it), or none",
			check:  func(c *Config) string { return oneOf(c.Sandbox.Mode, SandboxModes()) },
			values: SandboxModes,
			flag:   runFlag("sandbox", "", "sandbox of agents, reviewers and gates: auto, bwrap, sandbox-exec or none")},
		{key: "sandbox.allow-write", ptr: func(c *Config) any { return &c.Sandbox.AllowWrite },
			doc: "[sandbox] more paths the sandbox may write (~/x, $VAR/x, absolute, or in the project); not for a toolchain's cache, which the agent could fill with forged results (gates get one listed here empty)"},
		{key: "sandbox.caches", ptr: func(c *Config) any { return &c.Sandbox.Caches },
			doc: "[sandbox] more cache directories (~/x, $VAR/x, absolute) the gates read with a throwaway layer of their own over them, besides Go's, Cargo's, npm's, pip's, Maven's, Gradle's, ccache's and sccache's"},
		{key: "sandbox.cache-max", ptr: func(c *Config) any { return &c.Sandbox.CacheMax },
			doc:   "[sandbox] MiB of the agent's own writable layer over the caches (bubblewrap), per --parallel slot, kept across its iterations and removed at the run's end; past it the layer starts over empty at the slot's next agent start, with a warning",
			check: func(c *Config) string { return atLeast(c.Sandbox.CacheMax, 1) }},
		{key: "sandbox.deny", ptr: func(c *Config) any { return &c.Sandbox.Deny },
			doc: "[sandbox] more paths the sandbox hides, besides ~/.ssh, ~/.aws, ~/.config/gcloud, ~/.azure, ~/.kube, ~/.docker, ~/.gnupg, ~/.config/gh, ~/.netrc, ~/.git-credentials"},
		{key: "sandbox.network", ptr: func(c *Config) any { return &c.Sandbox.Network },
			doc:   "[sandbox] the sandbox's network: proxy (a network of its own, out only through ralph's proxy, which logs every host and refuses the host's own addresses), open (the host's network, loopback included) or off (true means proxy, false off)",
			check: func(c *Config) string { return oneOf(string(c.Sandbox.Network), NetworkModes()) }},
		{key: "sandbox.allow-hosts", ptr: func(c *Config) any { return &c.Sandbox.AllowHosts },
			doc: "[sandbox] with network = \"proxy\", the hosts the agent may reach: host, host:port, *.domain (its subdomains), an address or a network (10.0.0.0/8), * for any public host; each agent's API is added. Empty: any public host. The host's own addresses (loopback, private) only when named",
			check: func(c *Config) string {
				if _, err := egress.Parse(c.Sandbox.AllowHosts); err != nil {
					return strings.ReplaceAll(strings.ReplaceAll(err.Error(), "sandbox.allow-hosts: ", ""), "\n", "; ")
				}
				return ""
			}},
		{key: "sandbox.env", ptr: func(c *Config) any { return &c.Sandbox.Env },
			doc: "[sandbox] more environment variables passed in (NAME* is a prefix); the rest of ralph's environment beyond PATH, HOME, locale, terminal, proxies and the agent's own keys is dropped"},
	}
}

// reviewFields are the keys of the [review] section.
func reviewFields() []field {
	return []field{
		{key: "review.when", ptr: func(c *Config) any { return &c.Review.When },
			doc:    "[review] when a reviewer agent checks the work: auto (each done claim, when no gate can reject a task), task (each done claim), end (the whole run, findings become tasks), both, or off",
			check:  func(c *Config) string { return oneOf(c.Review.When, ReviewWhens()) },
			values: ReviewWhens,
			flag:   runFlag("review", "", "reviewers: auto (each done claim when no gate can reject it), task (each done claim), end (the whole run), both or off")},
		{key: "review.agent", ptr: func(c *Config) any { return &c.Review.Agent },
			doc: "[review] the reviewer's agent CLI (another vendor's, say); empty: the run's agent",
			check: func(c *Config) string {
				if c.Review.Agent == "" {
					return ""
				}
				return oneOf(c.Review.Agent, agentNames())
			},
			values: agentNames,
			flag:   reviewFlag("agent", "the reviewers' agent CLI (default: review.agent, else the run's agent)")},
		{key: "review.model", ptr: func(c *Config) any { return &c.Review.Model },
			doc:  "[review] the reviewer's model; empty: the agent's default",
			flag: reviewFlag("model", "the reviewers' model")},
		{key: "review.fallback", ptr: func(c *Config) any { return &c.Review.Fallback },
			doc:   "[review] the reviewer's agents on a usage limit, in order (agent or agent:model); empty: fallback's, when review.agent is empty",
			check: func(c *Config) string { return checkFallback(c.Review.Fallback) }},
		{key: "review.prompt", ptr: func(c *Config) any { return &c.Review.Prompt },
			doc: "[review] review template file; empty: the built-in one"},
		{key: "review.max-attempts", ptr: func(c *Config) any { return &c.Review.MaxAttempts },
			doc:   "[review] reviewer runs of one claim that may end without a verdict before the iteration is review_failed",
			check: func(c *Config) string { return atLeast(c.Review.MaxAttempts, 1) }},
		{key: "review.timeout", ptr: func(c *Config) any { return &c.Review.Timeout },
			doc:   "[review] wall-clock limit of one reviewer run; 0: the run's timeout",
			check: func(c *Config) string { return nonNegative(c.Review.Timeout) },
			flag:  reviewFlag("timeout", "wall-clock limit of one reviewer run (0: the run's timeout)")},
		{key: "review.focus", ptr: func(c *Config) any { return &c.Review.Focus },
			doc:  "[review] the end review's reviewers, one per focus, run in parallel",
			flag: reviewFlag("focus", "the reviewers, one per focus, comma-separated")},
		{key: "review.rounds", ptr: func(c *Config) any { return &c.Review.Rounds },
			doc:   "[review] end review rounds at most (each round's findings become tasks, then run)",
			check: func(c *Config) string { return atLeast(c.Review.Rounds, 1) }},
	}
}

// githubFields are the keys of the [github] section.
func githubFields() []field {
	both := func(name, usage string) *flagSpec {
		return &flagSpec{name: name, usage: usage, commands: []string{"run", "tasks"}}
	}
	return []field{
		{key: "github.label", ptr: func(c *Config) any { return &c.GitHub.Label },
			doc:  "[github] the label of the issues that are the plan of github:OWNER/REPO; empty: every open issue",
			flag: both("label", "with a github: plan, the issues with this `LABEL`")},
		{key: "github.milestone", ptr: func(c *Config) any { return &c.GitHub.Milestone },
			doc:  "[github] only the issues of this milestone (its title or number, * or none)",
			flag: both("milestone", "with a github: plan, the issues of this milestone")},
		{key: "github.assignee", ptr: func(c *Config) any { return &c.GitHub.Assignee },
			doc:  "[github] only the issues assigned to this user (* any, none)",
			flag: both("assignee", "with a github: plan, the issues assigned to this `USER`")},
		{key: "github.api-url", ptr: func(c *Config) any { return &c.GitHub.APIURL },
			doc:   "[github] a GitHub Enterprise server's API URL (https://HOST/api/v3/); empty: github.com",
			check: func(c *Config) string { return checkURL(c.GitHub.APIURL) }},
		{key: "github.repo", ptr: func(c *Config) any { return &c.GitHub.Repo },
			doc: "[github] OWNER/REPO of the pull request when the plan is not github:OWNER/REPO; empty: from the remote's URL"},
		{key: "github.remote", ptr: func(c *Config) any { return &c.GitHub.Remote },
			doc:   "[github] the git remote the run branch is pushed to",
			check: func(c *Config) string { return notEmpty(c.GitHub.Remote) }},
		{key: "github.base", ptr: func(c *Config) any { return &c.GitHub.Base },
			doc: "[github] the branch the pull request merges into; empty: the repository's default branch"},
		{key: "github.pr", ptr: func(c *Config) any { return &c.GitHub.PR },
			doc:  "[github] at the end of a run, push the branch and open or update its pull request",
			flag: runFlag("pr", "", "at the end of the run, push the branch and open or update its pull request")},
	}
}

// notifyFields are the keys of the [notify] section.
func notifyFields() []field {
	url := func(get func(c *Config) string) func(c *Config) string {
		return func(c *Config) string { return checkURL(get(c)) }
	}
	return []field{
		{key: "notify.events", ptr: func(c *Config) any { return &c.Notify.Events },
			doc:   "[notify] milestones to announce: " + strings.Join(NotifyEvents(), ", "),
			check: func(c *Config) string { return checkNotifyEvents(c.Notify.Events) }},
		{key: "notify.timeout", ptr: func(c *Config) any { return &c.Notify.Timeout },
			doc:   "[notify] time limit of one delivery attempt",
			check: func(c *Config) string { return nonNegative(c.Notify.Timeout) }},
		{key: "notify.retries", ptr: func(c *Config) any { return &c.Notify.Retries },
			doc:   "[notify] attempts after a failed delivery, with backoff",
			check: func(c *Config) string { return atLeast(c.Notify.Retries, 0) }},
		{key: "notify.slack-webhook", secret: true, ptr: func(c *Config) any { return &c.Notify.SlackWebhook },
			doc:   "[notify] Slack incoming webhook URL (a secret)",
			check: url(func(c *Config) string { return c.Notify.SlackWebhook })},
		{key: "notify.discord-webhook", secret: true, ptr: func(c *Config) any { return &c.Notify.DiscordWebhook },
			doc:   "[notify] Discord webhook URL (a secret)",
			check: url(func(c *Config) string { return c.Notify.DiscordWebhook })},
		{key: "notify.telegram-token", secret: true, ptr: func(c *Config) any { return &c.Notify.TelegramToken },
			doc: "[notify] Telegram bot token (a secret); needs telegram-chat-id"},
		{key: "notify.telegram-chat-id", ptr: func(c *Config) any { return &c.Notify.TelegramChatID },
			doc: "[notify] Telegram chat to post to"},
		{key: "notify.telegram-api", ptr: func(c *Config) any { return &c.Notify.TelegramAPI },
			doc:   "[notify] Telegram Bot API base URL",
			check: url(func(c *Config) string { return c.Notify.TelegramAPI })},
		{key: "notify.ntfy-server", ptr: func(c *Config) any { return &c.Notify.NtfyServer },
			doc:   "[notify] ntfy server URL",
			check: url(func(c *Config) string { return c.Notify.NtfyServer })},
		{key: "notify.ntfy-topic", ptr: func(c *Config) any { return &c.Notify.NtfyTopic },
			doc: "[notify] ntfy topic to publish to (a secret on a public server)"},
		{key: "notify.ntfy-token", secret: true, ptr: func(c *Config) any { return &c.Notify.NtfyToken },
			doc: "[notify] ntfy access token (a secret)"},
		{key: "notify.webhook-url", ptr: func(c *Config) any { return &c.Notify.WebhookURL },
			doc:   "[notify] URL that receives each event as a JSON object",
			check: url(func(c *Config) string { return c.Notify.WebhookURL })},
		{key: "notify.webhook-headers", secret: true, ptr: func(c *Config) any { return &c.Notify.WebhookHeaders },
			doc: "[notify] headers of the webhook's requests, \"Name: value\" each",
			check: func(c *Config) string {
				for _, h := range c.Notify.WebhookHeaders {
					if name, _, ok := strings.Cut(h, ":"); !ok || strings.TrimSpace(name) == "" {
						return fmt.Sprintf("want \"Name: value\", got %q", h)
					}
				}
				return ""
			}},
		{key: "notify.command", ptr: func(c *Config) any { return &c.Notify.Command },
			doc: "[notify] shell command run for each event ($RALPH_EVENT, $RALPH_MESSAGE, $RALPH_EVENT_JSON), outside the sandbox and the project; a file it names that the agent can write is refused (see notify.sandbox)"},
		{key: "notify.sandbox", ptr: func(c *Config) any { return &c.Notify.Sandbox },
			doc: "[notify] run notify.command in the run's sandbox, in the project, with only notify.env's variables (for a command that runs a script of the project)"},
		{key: "notify.env", ptr: func(c *Config) any { return &c.Notify.Env },
			doc: "[notify] with notify.sandbox, the variables of ralph's environment the command gets (NAME* is a prefix), besides PATH, HOME, locale and the RALPH_ event variables"},
	}
}

// checkURL accepts an empty value or an http(s) URL with a host.
func checkURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := neturl.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The value may be a secret: the message does not repeat it.
		return "want an http:// or https:// URL"
	}
	return ""
}

func checkNotifyEvents(events []string) string {
	for _, e := range events {
		if !slices.Contains(NotifyEvents(), e) {
			return fmt.Sprintf("unknown event %q (valid: %s)", e, strings.Join(NotifyEvents(), ", "))
		}
	}
	return ""
}

func lookupField(key string) (field, bool) {
	for _, f := range fields() {
		if f.key == key {
			return f, true
		}
	}
	return field{}, false
}

// keyNames lists the top-level keys, agents included.
func keyNames() []string {
	var names []string
	for _, f := range fields() {
		names = append(names, f.key)
	}
	return append(append(names, "agents", "prices"), sections()...)
}

// envName is the environment variable of a key: max-iterations is
// RALPH_MAX_ITERATIONS.
func envName(key string) string {
	return "RALPH_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(key))
}

// Keys documents every top-level key, in a stable order, agents last.
func Keys() []KeyDoc {
	d := Defaults()
	var docs []KeyDoc
	for _, f := range fields() {
		docs = append(docs, KeyDoc{
			Key:     f.key,
			Env:     envName(f.key),
			Type:    typeOf(f.ptr(&d)).String(),
			Default: formatValue(f.ptr(&d)),
			Doc:     f.doc,
		})
	}
	return append(docs, KeyDoc{
		Key:     "agents",
		Type:    "table",
		Default: "{}",
		Doc:     "per-agent overrides, [agents.NAME]: command, args, extra-args, env, output, error-patterns (file only)",
	}, KeyDoc{
		Key:     "prices",
		Type:    "table",
		Default: "{}",
		Doc:     "per-model prices in USD per million tokens, [prices.\"MODEL\"]: input, output, cache-read, cache-write (file only)",
	})
}

// Flags lists the keys that are command-line flags of command (run,
// plan), in documentation order.
func Flags(command string) []FlagDoc {
	d := Defaults()
	var flags []FlagDoc
	for _, f := range fields() {
		if f.flag == nil || !slices.Contains(f.flag.commands, command) {
			continue
		}
		var def any
		switch p := f.ptr(&d).(type) {
		case *string:
			def = *p
		case *int:
			def = *p
		case *float64:
			def = *p
		case *bool:
			def = *p
		case *Duration:
			def = p.D()
		case *Network:
			def = string(*p)
		case *[]string:
			def = slices.Clone(*p)
		default:
			panic(fmt.Sprintf("config: no flag type for %T", p))
		}
		fd := FlagDoc{Key: f.key, Name: f.flag.name, Shorthand: f.flag.shorthand, Usage: f.flag.usage, Default: def}
		if f.values != nil {
			fd.Values = f.values()
		}
		flags = append(flags, fd)
	}
	return flags
}

// Set sets a top-level key from its string form, as the environment and
// flags give it: integers in decimal, durations as 90s or 15m, booleans as
// true/false (also 1/0, yes/no, on/off), lists comma-separated. The value
// is checked as Validate would; on error c is unchanged.
func (c *Config) Set(key, value string) error {
	f, ok := lookupField(key)
	switch {
	case key == "agents", key == "prices":
		return &Error{Key: key, Msg: key + ": set in a config file only"}
	case !ok:
		return &Error{Key: key, Msg: unknownKey(key, keyNames())}
	}
	if problem := setField(c, f, value); problem != "" {
		return &Error{Key: key, Msg: key + ": " + problem}
	}
	return nil
}

// setField parses value into the key's field and checks it, returning the
// problem, if any, without the key.
func setField(c *Config, f field, value string) string {
	next := *c
	if problem := parseValue(f.ptr(&next), value); problem != "" {
		return problem
	}
	if f.check != nil {
		if problem := f.check(&next); problem != "" {
			return problem
		}
	}
	copyValue(f.ptr(c), f.ptr(&next))
	return ""
}

// Validate reports every setting that is out of range, one error per line.
func (c Config) Validate() error {
	var errs errorList
	for _, f := range fields() {
		if f.check == nil {
			continue
		}
		if problem := f.check(&c); problem != "" {
			errs.add(&Error{Key: f.key, Msg: f.key + ": " + problem})
		}
	}
	for _, name := range sortedKeys(c.Agents) {
		if problem := oneOfOrEmpty(c.Agents[name].Output, OutputNames()); problem != "" {
			key := "agents." + name + ".output"
			errs.add(&Error{Key: key, Msg: key + ": " + problem})
		}
		patterns := c.Agents[name].ErrorPatterns
		for _, kind := range sortedKeys(patterns) {
			for _, p := range patterns[kind] {
				if problem := checkErrorPattern(kind, p); problem != "" {
					key := "agents." + name + ".error-patterns." + kind
					errs.add(&Error{Key: key, Msg: key + ": " + problem})
				}
			}
		}
	}
	for _, model := range sortedKeys(c.Prices) {
		if problem := checkPrice(c.Prices[model]); problem != "" {
			key := dotted([]string{"prices", model})
			errs.add(&Error{Key: key, Msg: key + ": " + problem})
		}
	}
	return errs.err()
}

// checkPrice returns what is wrong with a [prices."MODEL"] table.
func checkPrice(p Price) string {
	for i, v := range []*float64{p.Input, p.Output, p.CacheRead, p.CacheWrite} {
		if v != nil && (!(*v >= 0) || math.IsInf(*v, 0)) {
			return fmt.Sprintf("%s: want 0 or more USD per million tokens, got %v", priceFieldNames()[i], *v)
		}
	}
	return ""
}

// valueType is the type of a key as the user writes it.
type valueType int

const (
	typeString valueType = iota
	typeInt
	typeFloat
	typeBool
	typeDuration
	typeList
	typeTable
	typeNetwork
)

func (t valueType) String() string {
	return [...]string{"string", "integer", "number", "bool", "duration", "list", "table", "string"}[t]
}

// want says what a value of the type looks like, for "want X, got Y".
func (t valueType) want() string {
	return [...]string{"a string", "an integer", "a number", "true or false",
		"a duration string (90s, 15m, 1h)", "a list of strings", "a table",
		`"proxy", "open" or "off" (or true, false)`}[t]
}

func typeOf(ptr any) valueType {
	switch ptr.(type) {
	case *string:
		return typeString
	case *int:
		return typeInt
	case *float64:
		return typeFloat
	case *bool:
		return typeBool
	case *Duration:
		return typeDuration
	case *[]string:
		return typeList
	case *Network:
		return typeNetwork
	}
	panic(fmt.Sprintf("config: no value type for %T", ptr))
}

// parseValue parses the string form of a value into ptr, returning the
// problem, if any.
func parseValue(ptr any, s string) string {
	t := strings.TrimSpace(s)
	switch p := ptr.(type) {
	case *string:
		*p = s
	case *int:
		n, err := strconv.Atoi(t)
		if err != nil {
			return fmt.Sprintf("want %s, got %q", typeInt.want(), s)
		}
		*p = n
	case *float64:
		v, err := strconv.ParseFloat(strings.TrimPrefix(t, "$"), 64)
		if err != nil {
			return fmt.Sprintf("want %s, got %q", typeFloat.want(), s)
		}
		*p = v
	case *bool:
		switch strings.ToLower(t) {
		case "true", "1", "yes", "on":
			*p = true
		case "false", "0", "no", "off":
			*p = false
		default:
			return fmt.Sprintf("want %s, got %q", typeBool.want(), s)
		}
	case *Duration:
		d, err := time.ParseDuration(t)
		if err != nil {
			return notADuration(s)
		}
		*p = Duration(d)
	case *Network:
		n, ok := parseNetwork(s)
		if !ok {
			return fmt.Sprintf("want %s, got %q", typeNetwork.want(), s)
		}
		*p = n
	case *[]string:
		var list []string
		for item := range strings.SplitSeq(s, ",") {
			if item = strings.TrimSpace(item); item != "" {
				list = append(list, item)
			}
		}
		*p = list
	default:
		panic(fmt.Sprintf("config: cannot parse into %T", ptr))
	}
	return ""
}

func notADuration(s string) string {
	return fmt.Sprintf("%q is not a duration (use 90s, 15m, 1h)", s)
}

// copyValue sets *dst to *src; both point to fields of the same type.
func copyValue(dst, src any) {
	switch d := dst.(type) {
	case *string:
		*d = *src.(*string)
	case *int:
		*d = *src.(*int)
	case *float64:
		*d = *src.(*float64)
	case *bool:
		*d = *src.(*bool)
	case *Duration:
		*d = *src.(*Duration)
	case *Network:
		*d = *src.(*Network)
	case *[]string:
		*d = nil // an empty list is no list: [] in a file equals the default
		if s := *src.(*[]string); len(s) > 0 {
			*d = slices.Clone(s)
		}
	default:
		panic(fmt.Sprintf("config: cannot copy %T", dst))
	}
}

// formatValue writes a value as TOML.
func formatValue(ptr any) string {
	switch p := ptr.(type) {
	case *string:
		return strconv.Quote(*p)
	case *int:
		return strconv.Itoa(*p)
	case *float64:
		return strconv.FormatFloat(*p, 'f', -1, 64)
	case *bool:
		return strconv.FormatBool(*p)
	case *Duration:
		return strconv.Quote(p.String())
	case *Network:
		return strconv.Quote(string(*p))
	case *[]string:
		quoted := make([]string, len(*p))
		for i, s := range *p {
			quoted[i] = strconv.Quote(s)
		}
		return "[" + strings.Join(quoted, ", ") + "]"
	}
	panic(fmt.Sprintf("config: cannot format %T", ptr))
}

func notEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return "must not be empty"
	}
	return ""
}

func atLeast(n, least int) string {
	switch {
	case n >= least:
		return ""
	case least == 0:
		return fmt.Sprintf("want 0 or more, got %d", n)
	}
	return fmt.Sprintf("want at least %d, got %d", least, n)
}

func nonNegative(d Duration) string {
	if d < 0 {
		return fmt.Sprintf("want 0 or more, got %s", d)
	}
	return ""
}

func oneOf(s string, valid []string) string {
	if slices.Contains(valid, s) {
		return ""
	}
	return fmt.Sprintf("want %s, got %q", orList(valid), s)
}

func oneOfOrEmpty(s string, valid []string) string {
	if s == "" {
		return ""
	}
	return oneOf(s, valid)
}

// checkStrategies accepts the names completion.ParseStrategies accepts.
func checkStrategies(names []string) string {
	valid := strategyNames()
	n := 0
	for _, name := range names {
		s := strings.ToLower(strings.TrimSpace(name))
		if s == "" {
			continue
		}
		if !slices.Contains(valid, s) {
			return fmt.Sprintf("unknown strategy %q (valid: %s)", name, strings.Join(valid, ", "))
		}
		n++
	}
	if n == 0 {
		return "want at least one of " + strings.Join(valid, ", ")
	}
	return ""
}

// orList writes "a or b", "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// checkTemplate returns what is wrong with a commit message template.
func checkTemplate(text string) string {
	if strings.TrimSpace(text) == "" {
		return "must not be empty"
	}
	if _, err := template.New("commit").Parse(text); err != nil {
		return strings.TrimPrefix(err.Error(), "template: ")
	}
	return ""
}

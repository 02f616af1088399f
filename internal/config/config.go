// Package config owns ralph's settings: the schema, the defaults, and the
// layering defaults < user file < project file < RALPH_* environment < flags,
// with validation errors that name the file, line and key.
//
// It reads files and the environment it is given; it never runs processes.
package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// Config is every setting a run uses. The toml tags are the keys of
// ralph.toml; the environment variable of a key is RALPH_ plus the key in
// upper case with dashes as underscores (max-iterations: RALPH_MAX_ITERATIONS).
type Config struct {
	// Tasks is the plan file; empty means discover it.
	Tasks  string `toml:"tasks"`
	Agent  string `toml:"agent"`
	Model  string `toml:"model"`
	Prompt string `toml:"prompt"`

	MaxIterations int                    `toml:"max-iterations"`
	MaxAttempts   int                    `toml:"max-attempts"`
	Timeout       Duration               `toml:"timeout"`
	IdleTimeout   Duration               `toml:"idle-timeout"`
	MaxWait       Duration               `toml:"max-wait"`
	Delay         Duration               `toml:"delay"`
	Budget        float64                `toml:"budget"`
	Ownership     string                 `toml:"ownership"`
	Completion    []string               `toml:"completion"`
	NoCommit      bool                   `toml:"no-commit"`
	Parallel      int                    `toml:"parallel"`
	Grace         Duration               `toml:"grace"`
	Stuck         int                    `toml:"stuck-threshold"`
	Agents        map[string]AgentConfig `toml:"agents"`
	// MaxTokens is a token budget for agents that report no cost: no
	// iteration starts once the run has used this many tokens (0: none).
	MaxTokens int `toml:"max-tokens"`
	// TranscriptMax and TranscriptMaxRun bound, in MiB, what an
	// iteration's transcript and all of a run's keep on disk; past them
	// the agent's output is still decoded, not stored.
	TranscriptMax    int `toml:"transcript-max"`
	TranscriptMaxRun int `toml:"transcript-max-run"`
	// Prices override and extend the built-in price table, by model
	// ([prices."MODEL"], file only).
	Prices map[string]Price `toml:"prices"`
	// QuotaReserve is the share, in percent, of each protected usage
	// window the run leaves unused (0: no pacing); QuotaWindows the
	// windows protected (none: all the agent reports); QuotaAction what
	// happens when one crosses its line: wait or stop.
	QuotaReserve float64  `toml:"quota-reserve"`
	QuotaWindows []string `toml:"quota-windows"`
	QuotaAction  string   `toml:"quota-action"`
	// Fallback are the agents (agent or agent:model) a usage limit
	// switches the run to, in order; FallbackAfter how long the run waits
	// for the limit first.
	Fallback      []string `toml:"fallback"`
	FallbackAfter Duration `toml:"fallback-after"`
	// Escalate are the rungs (model, or agent:model) a task climbs after
	// each EscalateAfter failed attempts.
	Escalate      []string `toml:"escalate"`
	EscalateAfter int      `toml:"escalate-after"`
	// AllowedAgents and AllowedModels are what a plan's task may name
	// besides the agents above; an empty AllowedModels allows any model.
	AllowedAgents []string `toml:"allowed-agents"`
	AllowedModels []string `toml:"allowed-models"`
	// Gates are the quality checks a task must pass before it is accepted.
	Gates Gates `toml:"gates"`
	// CommitTemplate is the text/template of a task's commit message,
	// rendered with the task ({{.ID}}, {{.Title}}, ...).
	CommitTemplate string `toml:"commit-template"`
	// AllowDirty lets a run start on a working tree with changes that are
	// not ralph's own (they end up in its commits).
	AllowDirty bool `toml:"allow-dirty"`
	// AllowNoRepo lets a run work in a directory that is not in a
	// repository: nothing is committed, no guard reads a diff, nothing
	// can be rolled back.
	AllowNoRepo bool `toml:"allow-no-repo"`
	// AllowFailingGates makes the gates that fail on the starting tree
	// advisory for the run instead of stopping it.
	AllowFailingGates bool `toml:"allow-failing-gates"`
	// Notify is where the run's milestones are announced.
	Notify Notify `toml:"notify"`
	// Guard is the tamper guard's mode: warn, strict or off.
	Guard string `toml:"guard"`
	// Review is the [review] section: reviewers of done claims and of the
	// whole run.
	Review Review `toml:"review"`
	// Sandbox is the [sandbox] section: what confines the agents,
	// reviewers and gates.
	Sandbox Sandbox `toml:"sandbox"`
	// Worker is the [worker] section: many workers on one plan.
	Worker Worker `toml:"worker"`
	// GitHub is the [github] section: issues as a plan (github:OWNER/REPO)
	// and the pull request a run can end at.
	GitHub GitHub `toml:"github"`
}

// GitHub is the [github] section.
type GitHub struct {
	// Label, Milestone and Assignee select the open issues that are the
	// plan of github:OWNER/REPO.
	Label     string `toml:"label"`
	Milestone string `toml:"milestone"`
	Assignee  string `toml:"assignee"`
	// APIURL is a GitHub Enterprise server's API; empty: github.com.
	APIURL string `toml:"api-url"`
	// Repo is OWNER/REPO of the pull request when the plan is not a
	// github: one; empty: the remote's URL says.
	Repo string `toml:"repo"`
	// Remote is the git remote the run branch is pushed to; Base the
	// branch the pull request merges into (empty: the default branch).
	Remote string `toml:"remote"`
	Base   string `toml:"base"`
	// PR pushes the run branch and opens or updates its pull request at
	// the end of a run.
	PR bool `toml:"pr"`
}

// Sandbox is the [sandbox] section. Agents, reviewers and gates run in a
// sandbox that lets them write the project (or their task's worktree) and
// nothing else, hides credentials, and passes in only the variables they
// need.
type Sandbox struct {
	// Mode is auto (bubblewrap or sandbox-exec when a probe shows it
	// works, else none with a warning), bwrap or sandbox-exec (fail when
	// it cannot work), or none.
	Mode string `toml:"mode"`
	// AllowWrite are more paths the sandbox lets write; Deny more paths
	// it hides.
	AllowWrite []string `toml:"allow-write"`
	Deny       []string `toml:"deny"`
	// Network is how the sandbox reaches the network: proxy (a network
	// of its own, out only through ralph's proxy), open (the host's) or
	// off. A TOML boolean is read too: true is proxy, false off.
	Network Network `toml:"network"`
	// AllowHosts are the hosts the proxy lets the agent reach; empty:
	// any public host.
	AllowHosts []string `toml:"allow-hosts"`
	// Env names more variables passed in (NAME* is a prefix).
	Env []string `toml:"env"`
	// Caches are more cache directories the gates get a throwaway layer
	// over, besides the toolchains' own (internal/sandbox.FindCaches).
	Caches []string `toml:"caches"`
	// CacheMax bounds, in MiB, the agent's writable layer over those
	// caches in one --parallel slot; past it the layer starts over empty.
	CacheMax int `toml:"cache-max"`
}

// Network is the value of sandbox.network.
type Network string

// The values of sandbox.network.
const (
	// NetworkProxy gives the sandbox a network of its own, whose only way
	// out is ralph's proxy (sandbox.allow-hosts says where to).
	NetworkProxy Network = "proxy"
	// NetworkOpen shares the host's network, loopback included.
	NetworkOpen Network = "open"
	// NetworkOff gives the sandbox a loopback of its own and nothing else.
	NetworkOff Network = "off"
)

// NetworkModes are the values of sandbox.network.
func NetworkModes() []string {
	return []string{string(NetworkProxy), string(NetworkOpen), string(NetworkOff)}
}

// UnmarshalTOML reads the value as written: a string (checked against
// NetworkModes by the key's check, with the file's line), or a boolean.
func (n *Network) UnmarshalTOML(raw []byte) error {
	var v struct{ V any }
	if err := toml.Unmarshal(append([]byte("V = "), raw...), &v); err != nil {
		return err
	}
	switch x := v.V.(type) {
	case string:
		*n = Network(x)
	case bool:
		*n, _ = parseNetwork(strconv.FormatBool(x))
	default:
		return fmt.Errorf("want %s, got %T", typeNetwork.want(), x)
	}
	return nil
}

// parseNetwork reads the string form of sandbox.network, as flags, the
// environment and TOML give it: a mode, or a boolean (true: proxy, the
// network on the safe way; false: off).
func parseNetwork(s string) (Network, bool) {
	t := strings.ToLower(strings.TrimSpace(s))
	if slices.Contains(NetworkModes(), t) {
		return Network(t), true
	}
	var on bool
	if parseValue(&on, t) != "" {
		return "", false
	}
	if on {
		return NetworkProxy, true
	}
	return NetworkOff, true
}

// SandboxModes are the values of sandbox.mode. They mirror the sandbox
// package's modes, which config must not import; a test of the cli
// package compares them.
func SandboxModes() []string { return []string{"auto", "bwrap", "sandbox-exec", "none"} }

// Review is the [review] section: a fresh agent process, of any supported
// agent, reviews each done claim (when = "task"), the whole run at its end
// (when = "end"), or both; "auto", the default, reviews each done claim
// of a run that has no gate able to reject one.
type Review struct {
	When  string `toml:"when"`
	Agent string `toml:"agent"`
	Model string `toml:"model"`
	// Fallback are the reviewer's agents on a usage limit, as the run's
	// Fallback are the agent's (see Config.ReviewFallback).
	Fallback []string `toml:"fallback"`
	// Prompt is a review template file; empty: the embedded one.
	Prompt string `toml:"prompt"`
	// MaxAttempts bounds the reviewer runs of one claim that give no
	// verdict.
	MaxAttempts int `toml:"max-attempts"`
	// Timeout bounds one reviewer run; 0: the run's timeout.
	Timeout Duration `toml:"timeout"`
	// Focus are the end-of-run reviewers, one per focus; Rounds bounds
	// the end review's rounds.
	Focus  []string `toml:"focus"`
	Rounds int      `toml:"rounds"`
}

// ReviewWhens are the values of review.when.
func ReviewWhens() []string { return []string{"auto", "off", "task", "end", "both"} }

// GuardModes are the values of guard.
func GuardModes() []string { return []string{"warn", "strict", "off"} }

// DefaultReviewFocus are the end-of-run reviewers' focuses.
func DefaultReviewFocus() []string {
	return []string{"correctness against the plan", "tests", "simplicity", "security", "documentation"}
}

// Notify is the [notify] section: where a run announces its milestones
// (started, task done or failed, waiting for a usage limit, completed,
// stopped). Each target is on when its address is set. The values are
// secrets as often as not: set them in the environment
// (RALPH_NOTIFY_SLACK_WEBHOOK, ...) rather than in a committed file.
type Notify struct {
	// Events are the milestones announced; all of them by default.
	Events []string `toml:"events"`
	// Timeout bounds one delivery attempt; Retries are the attempts after
	// a failed one, with backoff.
	Timeout Duration `toml:"timeout"`
	Retries int      `toml:"retries"`

	SlackWebhook   string `toml:"slack-webhook"`
	DiscordWebhook string `toml:"discord-webhook"`
	TelegramToken  string `toml:"telegram-token"`
	TelegramChatID string `toml:"telegram-chat-id"`
	// TelegramAPI is the Bot API's base URL (tests point it elsewhere).
	TelegramAPI string `toml:"telegram-api"`
	NtfyServer  string `toml:"ntfy-server"`
	NtfyTopic   string `toml:"ntfy-topic"`
	NtfyToken   string `toml:"ntfy-token"`
	// WebhookURL receives each event as a JSON object; WebhookHeaders are
	// "Name: value" lines added to the request.
	WebhookURL     string   `toml:"webhook-url"`
	WebhookHeaders []string `toml:"webhook-headers"`
	// Command is a shell command run for each event, with the event in
	// RALPH_EVENT, RALPH_MESSAGE and RALPH_EVENT_JSON: outside the
	// sandbox, where no file it names may be one the agent can write, or
	// in it (Sandbox), with only Env's variables.
	Command string `toml:"command"`
	// Sandbox runs Command in the run's sandbox; Env names the variables
	// of ralph's environment it gets there (NAME* is a prefix).
	Sandbox bool     `toml:"sandbox"`
	Env     []string `toml:"env"`
}

// NotifyEvents are the milestones [notify] can announce.
func NotifyEvents() []string {
	return []string{"started", "task_done", "task_failed", "waiting_for_limit", "agent_switched", "question", "completed", "stopped"}
}

// Gates is the [gates] section: shell commands run in the project after a
// task-done claim, before the task is marked done or committed.
type Gates struct {
	Commands []string `toml:"commands"`
	Timeout  Duration `toml:"timeout"`
}

// sections are the tables whose keys are written "section.key" in the
// schema (gates.commands); the agents table has its own rules.
func sections() []string { return []string{"gates", "notify", "review", "sandbox", "github"} }

// Price is one model's [prices."MODEL"] table, in USD per million
// tokens; a key left out keeps the built-in price (0 for a new model).
type Price struct {
	Input      *float64 `toml:"input"`
	Output     *float64 `toml:"output"`
	CacheRead  *float64 `toml:"cache-read"`
	CacheWrite *float64 `toml:"cache-write"`
}

// only is p with only the named key set, for an error at its line.
func (p Price) only(key string) Price {
	switch key {
	case "input":
		return Price{Input: p.Input}
	case "output":
		return Price{Output: p.Output}
	case "cache-read":
		return Price{CacheRead: p.CacheRead}
	case "cache-write":
		return Price{CacheWrite: p.CacheWrite}
	}
	return Price{}
}

// priceFieldNames are the keys of a [prices."MODEL"] table.
func priceFieldNames() []string { return []string{"input", "output", "cache-read", "cache-write"} }

// AgentConfig overrides how one agent is started.
type AgentConfig struct {
	// Command replaces the agent's executable (a path or a name on PATH).
	Command string `toml:"command"`
	// Args replaces the adapter's default arguments when set; ExtraArgs is
	// appended to them.
	Args      []string          `toml:"args"`
	ExtraArgs []string          `toml:"extra-args"`
	Env       map[string]string `toml:"env"`
	// Output is the output dialect of the command agent: "text",
	// "claude-stream-json" or another agent's JSON dialect (OutputNames).
	Output string `toml:"output"`
	// ErrorPatterns are regular expressions by error kind (usage_limit,
	// rate_limit, transient, fatal) that classify a failed run from its
	// stderr or error text when the agent's own output does not.
	ErrorPatterns map[string][]string `toml:"error-patterns"`
}

// Duration is a time.Duration written as "90s" or "15m" in TOML and the
// environment.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the duration as a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// String writes the duration as a Go duration string without zero units:
// 30m rather than 30m0s, 6h rather than 6h0m0s.
func (d Duration) String() string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") || strings.HasSuffix(s, "h0m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// DefaultCommitTemplate is the message of a task's commit (text/template
// over the task: .ID, .Title, .Description, ...).
const DefaultCommitTemplate = "feat: {{.ID}} - {{.Title}}"

// Defaults returns the settings used when nothing else says otherwise.
func Defaults() Config {
	return Config{
		Agent:            "claude",
		MaxIterations:    50,
		MaxAttempts:      3,
		Timeout:          Duration(30 * time.Minute),
		IdleTimeout:      Duration(10 * time.Minute),
		MaxWait:          Duration(6 * time.Hour),
		Ownership:        "runner",
		Completion:       []string{"promise-tag"},
		Parallel:         1,
		Grace:            Duration(5 * time.Second),
		Stuck:            5,
		EscalateAfter:    1,
		TranscriptMax:    256,
		TranscriptMaxRun: 2048,
		Gates:            Gates{Timeout: Duration(10 * time.Minute)},
		// The same as the loop's default (config must not import it).
		CommitTemplate: DefaultCommitTemplate,
		Notify: Notify{Events: NotifyEvents(), Timeout: Duration(10 * time.Second), Retries: 3,
			TelegramAPI: "https://api.telegram.org", NtfyServer: "https://ntfy.sh"},
		Guard:       "warn",
		QuotaAction: "wait",
		Review:      Review{When: "auto", MaxAttempts: 2, Focus: DefaultReviewFocus(), Rounds: 2},
		Sandbox:     Sandbox{Mode: "auto", Network: NetworkProxy, CacheMax: 4096},
		Worker:      Worker{Remote: "origin", Lease: Duration(DefaultLease)},
		GitHub:      GitHub{Label: "ralph", Remote: "origin"},
	}
}

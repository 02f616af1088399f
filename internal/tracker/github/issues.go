package github

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	gh "github.com/google/go-github/v84/github"

	"github.com/ralph-loop/ralph/internal/task"
)

// The labels ralph puts on the issues it works on.
const (
	LabelInProgress = "ralph:in-progress"
	LabelDone       = "ralph:done"
	LabelFailed     = "ralph:failed"
)

// maxDescription bounds an issue body in the plan: the prompt carries it,
// and a body of several MB (a pasted log) would swamp the agent. The rest
// stays on GitHub, which the description links to.
const maxDescription = 32 << 10

// maxParsed bounds the part of a body read for criteria and dependencies:
// they are written by people, near the top, and a several-MB log pasted
// below them is not worth scanning line by line.
const maxParsed = 256 << 10

// Tasks lists the query's open issues, oldest first, as tasks (pull
// requests, which the issues API also returns, are left out).
func (c *Client) Tasks(ctx context.Context) ([]task.Task, error) {
	if err := c.call(ctx, "reading repository "+c.Repo(), func(ctx context.Context) (*gh.Response, error) {
		_, r, err := c.gh.Repositories.Get(ctx, c.owner, c.name)
		return r, err
	}); err != nil {
		return nil, err
	}
	milestone, err := c.milestone(ctx)
	if err != nil {
		return nil, err
	}
	opts := &gh.IssueListByRepoOptions{State: "open", Milestone: milestone, Assignee: c.opts.Query.Assignee,
		Sort: "created", Direction: "asc", ListOptions: gh.ListOptions{PerPage: 100}}
	if c.opts.Query.Label != "" {
		opts.Labels = []string{c.opts.Query.Label}
	}
	var tasks []task.Task
	var bad []error // issues that do not make a task: all of them at once
	for {
		var page []*gh.Issue
		var resp *gh.Response
		if err := c.call(ctx, "listing the issues of "+c.Repo(), func(ctx context.Context) (*gh.Response, error) {
			var err error
			page, resp, err = c.gh.Issues.ListByRepo(ctx, c.owner, c.name, opts)
			return resp, err
		}); err != nil {
			return nil, err
		}
		for _, is := range page {
			if is.IsPullRequest() {
				continue
			}
			t, err := IssueTask(is)
			if err != nil {
				bad = append(bad, err)
				continue
			}
			c.rememberLabels(is.GetNumber(), is.Labels)
			tasks = append(tasks, t)
		}
		if resp.NextPage == 0 {
			if len(bad) > 0 {
				// Waiting does not mend labels: no snapshot stands in.
				return nil, c.permanent(fmt.Errorf("the issues of %s: %w", c.Repo(), errors.Join(bad...)))
			}
			return tasks, nil
		}
		opts.ListOptions.Page = resp.NextPage
	}
}

// milestone resolves the query's milestone to what the API filters by: a
// number, "*" or "none".
func (c *Client) milestone(ctx context.Context) (string, error) {
	m := strings.TrimSpace(c.opts.Query.Milestone)
	if m == "" || m == "*" || m == "none" {
		return m, nil
	}
	if _, err := strconv.Atoi(m); err == nil {
		return m, nil
	}
	c.mu.Lock()
	known := c.milestoneNum
	c.mu.Unlock()
	if known != "" {
		return known, nil
	}
	opts := &gh.MilestoneListOptions{State: "open", ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		var page []*gh.Milestone
		var resp *gh.Response
		if err := c.call(ctx, "listing the milestones of "+c.Repo(), func(ctx context.Context) (*gh.Response, error) {
			var err error
			page, resp, err = c.gh.Issues.ListMilestones(ctx, c.owner, c.name, opts)
			return resp, err
		}); err != nil {
			return "", err
		}
		for _, ms := range page {
			if strings.EqualFold(ms.GetTitle(), m) {
				n := strconv.Itoa(ms.GetNumber())
				c.mu.Lock()
				c.milestoneNum = n
				c.mu.Unlock()
				return n, nil
			}
		}
		if resp.NextPage == 0 {
			return "", c.permanent(fmt.Errorf("milestone %q: no open milestone of %s has that title", m, c.Repo()))
		}
		opts.Page = resp.NextPage
	}
}

func (c *Client) rememberLabels(n int, labels []*gh.Label) {
	names := make([]string, 0, len(labels))
	for _, l := range labels {
		names = append(names, l.GetName())
	}
	c.mu.Lock()
	c.labels[n] = names
	c.mu.Unlock()
}

// IssueTask is an issue as a task: id #N, its title, its body as the
// description, its task-list items and "Acceptance criteria" section as
// criteria, "Depends on #M" and "Blocked by #M" as dependencies, a
// priority:* label as the priority, an agent:* and a model:* label as the
// task's own agent and model (agent:codex, model:opus), and done when
// labelled ralph:done. Two agent:* or two model:* labels are an error
// naming the issue (#N) and the labels: which one counts would be a guess.
func IssueTask(is *gh.Issue) (task.Task, error) {
	body := strings.ReplaceAll(is.GetBody(), "\r\n", "\n")
	head := body
	if len(head) > maxParsed {
		head = head[:strings.LastIndexByte(head[:maxParsed], '\n')+1]
	}
	t := task.Task{
		ID:       "#" + strconv.Itoa(is.GetNumber()),
		Title:    oneLine(is.GetTitle()),
		Status:   task.StatusOpen,
		Criteria: criteria(head),
	}
	if t.Title == "" {
		t.Title = "issue " + t.ID
	}
	t.DependsOn = dependencies(head, is.GetNumber())
	desc := strings.TrimSpace(body)
	if len(desc) > maxDescription {
		cut := maxDescription
		for cut > 0 && !utf8.RuneStart(desc[cut]) {
			cut--
		}
		desc = desc[:cut] + fmt.Sprintf("\n\n[… cut: the issue body is %d bytes; read the rest at %s]", len(body), is.GetHTMLURL())
	}
	if u := is.GetHTMLURL(); u != "" {
		desc = strings.TrimSpace(desc + "\n\n" + u)
	}
	t.Description = desc
	for _, l := range is.Labels {
		name := l.GetName()
		if p, ok := priority(name); ok && (t.Priority == 0 || p < t.Priority) {
			t.Priority = p
		}
		if name == LabelDone {
			t.Status = task.StatusDone
		}
	}
	var err error
	if t.Agent, t.Model, err = labelRoute(is); err != nil {
		return task.Task{}, err
	}
	return t, nil
}

// labelRoute reads an issue's agent:* and model:* labels.
func labelRoute(is *gh.Issue) (agent, model string, err error) {
	named := map[string][]string{} // "agent", "model": the labels naming one
	for _, l := range is.Labels {
		for _, kind := range routeKinds {
			if _, ok := cutLabel(l.GetName(), kind); ok {
				named[kind] = append(named[kind], l.GetName())
			}
		}
	}
	var errs []error
	for _, kind := range routeKinds {
		ls := named[kind]
		if len(ls) == 0 {
			continue
		}
		if len(ls) > 1 {
			errs = append(errs, fmt.Errorf("#%d: labels %s: an issue names one %s; remove all but one", is.GetNumber(), quoteAll(ls), kind))
			continue
		}
		v, _ := cutLabel(ls[0], kind)
		switch {
		case !task.IsRouteName(v):
			errs = append(errs, fmt.Errorf("#%d: label %q: want one word after %q, such as %s:%s", is.GetNumber(), ls[0], kind+":", kind, routeExample[kind]))
		case kind == "agent":
			agent = v
		default:
			model = v
		}
	}
	return agent, model, errors.Join(errs...)
}

// routeKinds are the label prefixes that name a task's agent and model.
var routeKinds = []string{"agent", "model"}

// routeExample is a label value for each kind, for messages.
var routeExample = map[string]string{"agent": "codex", "model": "opus"}

// cutLabel reads a KIND:NAME label (agent:codex): the name as written,
// trimmed; the kind in any case.
func cutLabel(label, kind string) (string, bool) {
	prefix := kind + ":"
	if len(label) < len(prefix) || !strings.EqualFold(label[:len(prefix)], prefix) {
		return "", false
	}
	return strings.TrimSpace(label[len(prefix):]), true
}

// quoteAll quotes labels for a message: "model:opus", "model:sonnet".
func quoteAll(ls []string) string {
	q := make([]string, len(ls))
	for i, l := range ls {
		q[i] = strconv.Quote(l)
	}
	return strings.Join(q, ", ")
}

// oneLine folds whitespace, so a title is one line of the plan.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// priority reads a priority:* label: priority:1, priority:p0 (= 1),
// priority:critical (1), high (2), medium (3), low (4).
func priority(label string) (int, bool) {
	v, ok := strings.CutPrefix(strings.ToLower(label), "priority:")
	if !ok {
		v, ok = strings.CutPrefix(strings.ToLower(label), "priority/")
	}
	if !ok {
		return 0, false
	}
	v = strings.TrimSpace(v)
	switch v {
	case "critical", "urgent", "highest":
		return 1, true
	case "high":
		return 2, true
	case "medium", "normal":
		return 3, true
	case "low":
		return 4, true
	case "lowest":
		return 5, true
	}
	if n, err := strconv.Atoi(strings.TrimPrefix(v, "p")); err == nil && n >= 0 {
		if strings.HasPrefix(v, "p") {
			n++ // p0 is the first
		}
		return max(n, 1), true
	}
	return 0, false
}

var (
	taskItem = regexp.MustCompile(`^\s*[-*+]\s+\[[ xX]\]\s+(.+)$`)
	bullet   = regexp.MustCompile(`^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?(.+)$`)
	heading  = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	boldHead = regexp.MustCompile(`^\s*(?:\*\*|__)(.+?)(?:\*\*|__)\s*:?\s*$`)
	fence    = regexp.MustCompile("^\\s{0,3}(```|~~~)")
	depLine  = regexp.MustCompile(`(?i)\b(?:depends\s+on|blocked\s+by)\b:?((?:[\s,]*(?:and\s+|&\s*)?#\d+)+)`)
	issueRef = regexp.MustCompile(`#(\d+)`)
)

// criteria are the body's task-list items, and the bullets of a section
// headed "Acceptance criteria", in order and once each. Code blocks are
// skipped: a checklist inside a fence is an example, not the work.
func criteria(body string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		s = oneLine(s)
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	inAC, acLevel := false, 0
	for line := range proseLines(body) {
		if m := heading.FindStringSubmatch(line); m != nil {
			level := len(m[1])
			if isCriteriaTitle(m[2]) {
				inAC, acLevel = true, level
			} else if inAC && level <= acLevel {
				inAC = false
			}
			continue
		}
		if m := boldHead.FindStringSubmatch(line); m != nil {
			inAC, acLevel = isCriteriaTitle(m[1]), 7
			continue
		}
		if m := taskItem.FindStringSubmatch(line); m != nil {
			add(m[1])
			continue
		}
		if inAC {
			if m := bullet.FindStringSubmatch(line); m != nil {
				add(m[1])
			}
		}
	}
	return out
}

// proseLines yields the body's lines outside fenced code blocks (and not
// the fences themselves).
func proseLines(body string) iter.Seq[string] {
	return func(yield func(string) bool) {
		inFence := ""
		for line := range strings.SplitSeq(body, "\n") {
			if m := fence.FindStringSubmatch(line); m != nil {
				switch inFence {
				case "":
					inFence = m[1]
				case m[1]:
					inFence = ""
				}
				continue
			}
			if inFence == "" && !yield(line) {
				return
			}
		}
	}
}

func isCriteriaTitle(s string) bool {
	s = strings.ToLower(strings.Trim(strings.TrimSpace(s), ":*_"))
	return s == "acceptance criteria" || s == "acceptance criterion" || s == "done when" || s == "definition of done"
}

// dependencies are the issues named after "Depends on" or "Blocked by",
// outside code blocks; self-references are dropped.
func dependencies(body string, self int) []string {
	var deps []string
	for line := range proseLines(body) {
		for _, m := range depLine.FindAllStringSubmatch(line, -1) {
			for _, ref := range issueRef.FindAllStringSubmatch(m[1], -1) {
				n, err := strconv.Atoi(ref[1])
				if err != nil || n == self {
					continue
				}
				id := "#" + ref[1]
				if !slices.Contains(deps, id) {
					deps = append(deps, id)
				}
			}
		}
	}
	return deps
}

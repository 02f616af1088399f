package cli

import (
	"cmp"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/receipt"
	"github.com/ralph-loop/ralph/internal/session"
	"github.com/ralph-loop/ralph/internal/task"
)

// Shell completion of values: the agents, plan formats, sandbox modes and
// review settings a flag takes, the task ids of the plan, and plan files.
// They are attached here, once the command tree is built, by flag name and
// by the argument names in a command's Use line, so that the commands
// themselves need not know about completion.

// planFileExts are the extensions of plan files.
var planFileExts = []string{"json", "md"}

// addCompletions attaches the completions to every command of the tree.
func addCompletions(f *Factory, root *cobra.Command) {
	fixed := map[string][]string{
		"agent":   agent.Names(),
		"format":  task.ShortFormatNames(),
		"sandbox": config.SandboxModes(),
		"review":  config.ReviewWhens(),
		"by":      receipt.Views(),
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for name, values := range fixed {
			if c.Flags().Lookup(name) != nil {
				_ = c.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
			}
		}
		for _, k := range config.Flags(c.Name()) {
			if k.Values != nil && c.Flags().Lookup(k.Name) != nil {
				_, list := k.Default.([]string)
				_ = c.RegisterFlagCompletionFunc(k.Name, valueCompletion(k.Values, list))
			}
		}
		if c.Flags().Lookup("task") != nil {
			_ = c.RegisterFlagCompletionFunc("task", func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
				return taskIDs(f, cmd, "")
			})
		}
		if c.Flags().Lookup("plan") != nil {
			_ = c.RegisterFlagCompletionFunc("plan", planFiles)
		}
		if c.ValidArgsFunction == nil && len(c.ValidArgs) == 0 {
			if complete := argCompletion(f, c.Use); complete != nil {
				c.ValidArgsFunction = complete
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// valueCompletion completes a flag that takes one of values, or, for a
// list, a comma-separated run of them: the values not yet given, after
// what is typed up to the last comma.
func valueCompletion(values []string, list bool) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if !list {
			return values, cobra.ShellCompDirectiveNoFileComp
		}
		i := strings.LastIndexByte(toComplete, ',') + 1
		given := strings.Split(toComplete[:i], ",")
		var out []string
		for _, v := range values {
			if !slices.Contains(given, v) {
				out = append(out, toComplete[:i]+v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
}

// argCompletion completes a command's arguments by their names in its Use
// line: ID is a task of the plan, PLAN, IN and OUT plan files.
func argCompletion(f *Factory, use string) cobra.CompletionFunc {
	names := strings.Fields(use)[1:]
	for i, n := range names {
		names[i] = strings.Trim(n, "[]")
	}
	if !slices.ContainsFunc(names, func(n string) bool { return n == "ID" || n == "PLAN" || n == "IN" }) {
		return nil
	}
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) >= len(names) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		switch names[len(args)] {
		case "ID":
			plan := ""
			if len(names) > 1 && names[1] == "PLAN" {
				plan = cmdPlan(cmd)
			}
			return taskIDs(f, cmd, plan)
		case "PLAN", "IN", "OUT":
			return planFiles(cmd, args, toComplete)
		}
		return nil, cobra.ShellCompDirectiveDefault
	}
}

// planFiles completes plan files: JSON and markdown.
func planFiles(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return planFileExts, cobra.ShellCompDirectiveFilterFileExt
}

// cmdPlan is the plan a command's --plan flag names, if it has one.
func cmdPlan(cmd *cobra.Command) string {
	if fl := cmd.Flags().Lookup("plan"); fl != nil {
		return fl.Value.String()
	}
	return ""
}

// taskIDs completes the ids of the plan's tasks (plan, else the tasks key,
// else the plan discovery finds), each with its title and status. Nothing
// when the plan cannot be read: completion never prints an error.
func taskIDs(f *Factory, cmd *cobra.Command, plan string) ([]string, cobra.ShellCompDirective) {
	dir, err := f.ProjectDir()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	plan = cmp.Or(plan, cmdPlan(cmd))
	if plan == "" {
		if cfg, err := f.Config(dir); err == nil {
			plan = cfg.Tasks
		}
	}
	if session.IsTrackerPlan(plan) {
		return nil, cobra.ShellCompDirectiveNoFileComp // no network for a completion
	}
	file, err := session.OpenPlan(dir, plan)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var ids []string
	for _, t := range file.Plan().Tasks {
		ids = append(ids, t.ID+"\t"+string(t.Status)+": "+t.Title)
	}
	return ids, cobra.ShellCompDirectiveNoFileComp
}

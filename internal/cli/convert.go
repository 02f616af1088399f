package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"
	"github.com/spf13/cobra"

	"github.com/ralph-loop/ralph/internal/session"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/words"
)

type convertOptions struct {
	f      *Factory
	In     string
	Out    string
	Format string
	Force  bool
}

const convertLong = `Convert a plan from one format to another.

IN is read in whatever format it is (prd.json, tasks.json, progress.md, a
markdown checklist, a heading plan, a markdown plan with a JSON task list).
OUT's format comes from --format, else from its name: tasks.json is ral's
format, other *.json files prd.json, progress.md rslph's progress file, other
*.md files a markdown checklist.

Ids, titles, descriptions, acceptance criteria, priorities, dependencies,
notes and status (open, done, failed) are kept; a note says what OUT's
format has no place for. OUT is not overwritten without --force.

Formats: prd, tasks, progress, checklist, headings, mdjson.`

func newCmdConvert(f *Factory, runF func(*convertOptions) error) *cobra.Command {
	opts := &convertOptions{f: f}
	cmd := &cobra.Command{
		Use:   "convert IN OUT",
		Short: "Convert a plan between formats",
		Long:  convertLong,
		Args:  args(cobra.ExactArgs(2)),
		RunE: func(_ *cobra.Command, a []string) error {
			opts.In, opts.Out = a[0], a[1]
			if runF != nil {
				return runF(opts)
			}
			return runConvert(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "", "OUT's `FORMAT`: prd, tasks, progress, checklist, headings or mdjson")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "overwrite OUT")
	return cmd
}

func runConvert(opts *convertOptions) error {
	dir, err := opts.f.ProjectDir()
	if err != nil {
		return err
	}
	in, out := session.InDir(dir, opts.In), session.InDir(dir, opts.Out)
	formatName := opts.Format
	if formatName != "" {
		if formatName, err = task.FormatName(formatName); err != nil {
			return usageError(err)
		}
	} else {
		var ok bool
		if formatName, ok = task.FormatForPath(out); !ok {
			return usageError(fmt.Errorf("cannot tell the format of %s from its name: give --format (prd, tasks, progress, checklist, headings, mdjson)", opts.Out))
		}
	}
	if same(in, out) {
		return usageError(fmt.Errorf("%s is both IN and OUT: convert to another file", opts.In))
	}
	if _, err := os.Stat(out); err == nil && !opts.Force {
		return fmt.Errorf("%s already exists; nothing written (use --force to overwrite)", opts.Out)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	src, err := task.Load(in)
	if err != nil {
		return err
	}
	plan := src.Plan()
	data, err := task.Encode(formatName, plan)
	if err != nil {
		return err
	}
	// Never write what does not read back as the same tasks.
	back, err := task.ParseAs(formatName, out, data)
	if err != nil {
		return fmt.Errorf("internal error: the %s written for %s does not read back: %w", formatName, opts.In, err)
	}
	if len(back.Tasks) != len(plan.Tasks) {
		return fmt.Errorf("internal error: the %s written for %s has %d tasks, not %d", formatName, opts.In, len(back.Tasks), len(plan.Tasks))
	}
	for i, t := range back.Tasks {
		if t.ID != plan.Tasks[i].ID || t.Status != plan.Tasks[i].Status {
			return fmt.Errorf("internal error: task %d of %s reads back as %s (%s), not %s (%s)", i+1, opts.In, t.ID, t.Status, plan.Tasks[i].ID, plan.Tasks[i].Status)
		}
	}
	if err := renameio.WriteFile(out, data, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", opts.Out, err)
	}
	w := opts.f.IO.Out
	counts := map[task.Status]int{}
	for _, t := range plan.Tasks {
		counts[t.Status]++
	}
	fmt.Fprintf(w, "wrote %s (%s): %s, %d done, %d failed\n", opts.Out, formatName, words.Count(len(plan.Tasks), "task"), counts[task.StatusDone], counts[task.StatusFailed])
	if lost := lostFields(plan, formatName); len(lost) > 0 {
		fmt.Fprintf(w, "note: %s has no place for: %s\n", formatName, strings.Join(lost, ", "))
	}
	return nil
}

// lostFields names what p has that a plan in the format cannot hold.
func lostFields(p *task.Plan, formatName string) []string {
	var lost []string
	category := false
	for _, t := range p.Tasks {
		category = category || t.Category != ""
	}
	switch formatName {
	case task.FormatTasksJSON:
		if p.Name != "" || p.Description != "" {
			lost = append(lost, "the plan's name and description (ral keeps them in plan.md)")
		}
	case task.FormatChecklist, task.FormatHeadingPlan:
		if category {
			lost = append(lost, "categories")
		}
	}
	if p.Branch != "" && formatName != task.FormatPRD {
		lost = append(lost, "the branch name")
	}
	return lost
}

// same reports whether two paths name the same file.
func same(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ia, err1 := os.Stat(a)
	ib, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(ia, ib)
}

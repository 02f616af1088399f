package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ralph-loop/ralph/internal/scaffold"
	"github.com/ralph-loop/ralph/internal/session"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/vcs"
)

type initOptions struct {
	f      *Factory
	Force  bool
	Format string
	Commit bool
}

func newCmdInit(f *Factory, runF func(*initOptions) error) *cobra.Command {
	opts := &initOptions{f: f}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create ralph.toml, a prompt template and an example plan",
		Long:  initLong,
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runInit(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "overwrite existing files")
	cmd.Flags().BoolVar(&opts.Commit, "commit", false, "commit the files it writes, apart from any work (on a terminal it asks)")
	cmd.Flags().StringVar(&opts.Format, "format", "prd", "the plan's `FORMAT`: prd, tasks, progress, checklist, headings or mdjson")
	return cmd
}

const initLong = `Create ralph.toml, a prompt template and an example plan in the
format of the workflow you use. The project's own checks (go vet and go
test with a go.mod, package.json's test, lint and typecheck scripts, cargo
test, pytest, ruff, Makefile targets test, check and lint, Gradle, Maven)
are written into ralph.toml as its quality gates, each with the file that
revealed it: a task is accepted only once they pass.

  prd        prd.json (snarktank/ralph, ralph-tui); the default
  tasks      ral's files: tasks.json, plan.md (the project's details),
             activity.md (the agents' log) and prompt.md, which ralph.toml
             names as the prompt
  progress   progress.md (rslph, portableralph)
  checklist  IMPLEMENTATION_PLAN.md, a markdown checklist
  headings   PLAN.md, "### Task N:" sections (ralphex)
  mdjson     plan.md with a fenced JSON task list

Existing files are not overwritten without --force.

The files are ralph's setup, best committed apart from the work: with
--commit init commits them; on a terminal it asks; otherwise it prints the
command. Left uncommitted, the first run commits them alone, before any
task's commit.`

func runInit(ctx context.Context, opts *initOptions) error {
	dir, err := opts.f.ProjectDir()
	if err != nil {
		return err
	}
	if _, err := task.FormatName(opts.Format); err != nil {
		return usageError(fmt.Errorf("--format: %w", err))
	}
	files, err := scaffold.Files(opts.Format)
	if err != nil {
		return err
	}
	checks := session.DetectChecks(opts.f.Host, dir)
	for i := range files {
		if files[i].Name == "ralph.toml" {
			files[i].Body = scaffold.WithGates(files[i].Body, checks)
		}
	}
	if !opts.Force {
		var exist []string
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(dir, f.Name)); err == nil {
				exist = append(exist, f.Name)
			}
		}
		if len(exist) > 0 {
			return fmt.Errorf("%s already exist%s; nothing written (use --force to overwrite)",
				strings.Join(exist, ", "), map[bool]string{true: "s", false: ""}[len(exist) == 1])
		}
	}
	var written []string
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), []byte(f.Body), 0o644); err != nil {
			return err
		}
		written = append(written, f.Name)
		fmt.Fprintf(opts.f.IO.Out, "wrote %s\n", f.Name)
		if f.Name == "ralph.toml" {
			for _, c := range checks {
				fmt.Fprintf(opts.f.IO.Out, "  gate: %s (%s)\n", c.Command, c.Why)
			}
			// What ralph wrote is what the user asked for; a later
			// change takes effect once they approve it.
			if _, err := opts.f.TrustStore().Approve(filepath.Join(dir, f.Name), []byte(f.Body), time.Now()); err != nil {
				return fmt.Errorf("trust ralph.toml: %w", err)
			}
			fmt.Fprintln(opts.f.IO.Out, "  trusted: after you edit it, run ralph trust (ralph obeys it only at content you approved)")
		}
	}
	if changed, err := state.EnsureGitignore(dir); err != nil {
		return err
	} else if changed {
		fmt.Fprintln(opts.f.IO.Out, "added .ralph/ to .gitignore")
		written = append(written, ".gitignore")
	}
	if err := commitInit(ctx, opts, dir, written); err != nil {
		return err
	}
	_, err = fmt.Fprintf(opts.f.IO.Out, "next: edit %s, then `ralph run --dry-run` to see the first prompt, and `ralph run`\n", files[len(files)-1].Name)
	return err
}

// commitInit commits the files init wrote, apart from any work: with
// --commit, or when the user says yes on a terminal; otherwise it says
// how. Outside a git repository there is nothing to commit.
func commitInit(ctx context.Context, opts *initOptions, dir string, files []string) error {
	g, err := vcs.Open(ctx, dir, opts.f.Environ())
	if err != nil {
		return nil // not a repository, or no git: nothing to commit
	}
	w := opts.f.IO.Out
	paths := make([]string, len(files))
	for i, f := range files {
		rel, err := filepath.Rel(g.Root, filepath.Join(dir, f))
		if err != nil {
			return err
		}
		paths[i] = filepath.ToSlash(rel)
	}
	commit := opts.Commit
	if !commit && opts.f.IO.TTY && stdinTerminal(opts.f.IO.In) {
		fmt.Fprint(w, "commit these files now, apart from any work? [y/N] ")
		line, _ := bufio.NewReader(opts.f.IO.In).ReadString('\n')
		commit = strings.EqualFold(strings.TrimSpace(line), "y") || strings.EqualFold(strings.TrimSpace(line), "yes")
	}
	if !commit {
		_, err := fmt.Fprintf(w, "to commit them apart from the work: git add %s && git commit -m 'ralph: setup'\n"+
			"  (left uncommitted, the first run commits them alone, before any task)\n", strings.Join(paths, " "))
		return err
	}
	hash, err := g.CommitFiles(ctx, "ralph: setup ("+strings.Join(paths, ", ")+")", paths)
	if err != nil {
		return fmt.Errorf("committing ralph's setup files: %w", err)
	}
	if hash != "" {
		_, err = fmt.Fprintf(w, "committed %s (%s)\n", strings.Join(paths, ", "), hash[:min(7, len(hash))])
	}
	return err
}

// stdinTerminal reports whether in is a terminal someone can answer on.
func stdinTerminal(in io.Reader) bool {
	f, ok := in.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

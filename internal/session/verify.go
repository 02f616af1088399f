package session

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/vcs"
)

// verifyOptions maps the guard and [review] settings onto the loop's
// options: the guard's mode and the configuration files it watches, and
// the reviewers' settings with the review template's text.
func verifyOptions(f *Host, dir string, cfg config.Config, o *loop.Options) error {
	o.Guard = cfg.Guard
	o.Review = loop.ReviewOptions{
		When: cfg.Review.When, Model: cfg.Review.Model, MaxAttempts: cfg.Review.MaxAttempts,
		Timeout: cfg.Review.Timeout.D(), Focus: cfg.Review.Focus, Rounds: cfg.Review.Rounds,
	}
	if cfg.Review.Prompt != "" {
		b, err := readPromptFile(dir, cfg.Review.Prompt)
		if err != nil {
			return fmt.Errorf("review.prompt: %w", err)
		}
		o.Review.Prompt, o.Review.PromptName = string(b), cfg.Review.Prompt
	}
	o.GuardConfigFiles = []string{filepath.Join(dir, "ralph.toml")}
	if f.ConfigFile != "" {
		o.GuardConfigFiles = append(o.GuardConfigFiles, f.ConfigFile)
	}
	return nil
}

// guardPaths makes the guard's configuration files relative to the top of
// the repository, as the guard names files; those outside it are dropped.
func guardPaths(root string, files []string) []string {
	out := []string{}
	for _, p := range files {
		if !filepath.IsAbs(p) {
			if abs, err := filepath.Abs(p); err == nil {
				p = abs
			}
		}
		if rel, err := state.RepoPath(root, p); err == nil {
			out = append(out, rel)
		}
	}
	return out
}

// loopOwnFiles are those of files (absolute) that are in the project dir
// and the repository at root, as the loop puts them back (loop.OwnFile).
func loopOwnFiles(root, dir string, files []string) []loop.OwnFile {
	var out []loop.OwnFile
	for _, p := range files {
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		if repo, err := state.RepoPath(root, p); err == nil {
			out = append(out, loop.OwnFile{Repo: repo, Dir: rel})
		}
	}
	return out
}

// newReviewer builds the reviewer's agent: review.agent with its own
// [agents.NAME] overrides, the run's agent when review.agent is empty,
// in the run's sandbox; nil when no reviewer runs. validation are the
// plan's Validation Commands.
func newReviewer(f *Host, cfg config.Config, validation []string, sb runSandbox) (loop.Agent, error) {
	if !mayReview(cfg, validation) {
		return nil, nil
	}
	return reviewerAgent(f, cfg, sb)
}

// mayReview reports whether a reviewer may run: review.when is not off,
// and with auto, the run may be left without a gate that can reject a
// task (none configured, or --allow-failing-gates may make them all
// advisory; the plan's Validation Commands never are). The loop decides
// auto for good once the baseline has run.
func mayReview(cfg config.Config, validation []string) bool {
	switch cfg.Review.When {
	case "", loop.ReviewOff:
		return false
	case loop.ReviewAuto:
		return len(validation) == 0 && (len(cfg.Gates.Commands) == 0 || cfg.AllowFailingGates)
	}
	return true
}

// reviewsTasks reports whether a reviewer checks each task of a run
// without gates.
func reviewsTasks(cfg config.Config, validation []string) bool {
	w := cfg.Review.When
	return mayReview(cfg, validation) && (w == loop.ReviewAuto || w == loop.ReviewTask || w == loop.ReviewBoth)
}

// reviewerAgent is the reviewers' agent: review.agent, else the run's.
func reviewerAgent(f *Host, cfg config.Config, sb runSandbox) (loop.Agent, error) {
	rc := cfg
	if cfg.Review.Agent != "" {
		rc.Agent = cfg.Review.Agent
	}
	ag, err := newAgent(f, rc, sb)
	if err != nil {
		return nil, fmt.Errorf("review.agent: %w", err)
	}
	return ag, nil
}

// treesDep is the repository as the loop's Trees: git only (Sapling has
// no tree ids to diff); nil otherwise.
func treesDep(repo vcs.Repo) loop.Trees {
	if g, ok := repo.(*vcs.Git); ok {
		return g
	}
	return nil
}

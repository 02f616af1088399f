// Package demo is `ralph demo`: a throwaway project with a small plan, and
// a simulated coding agent that works through it, so that the whole loop
// (prompts, streamed events, a usage-limit wait, the checks of a done
// claim, each catching a bad one, commits) can be seen in a minute
// without an account, an API key or a network: the gate (simulated go
// test) catches a broken change, the tamper guard a weakened test, the
// reviewer (the simulated agent again) a claim that does half the task.
//
// The simulated agent is product code, not a test fixture: it implements
// the loop's Agent interface, writes real files, and streams Claude Code's
// stream-json, which the real Claude decoder reads. It never starts a
// process; the only ones the demo starts are git's (git.go, and the
// guard's look at the diff).
package demo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// PlanFile is the demo plan's file name.
const PlanFile = "prd.json"

// Output is the dialect of the simulated agent's raw output (what `ralph
// logs` decodes it with).
const Output = "claude-stream-json"

// plan is the demo's prd.json: four stories, one depending on another.
const plan = `{
  "project": "Greeter",
  "branchName": "ralph/demo",
  "description": "A tiny Go package that greets people: ralph's demo plan.",
  "userStories": [
    {
      "id": "DEMO-1",
      "title": "Create the greeting",
      "description": "Add greet.go with Greet() returning \"Hello, world!\", and a test.",
      "acceptanceCriteria": ["go test ./... passes"],
      "priority": 1,
      "passes": false
    },
    {
      "id": "DEMO-2",
      "title": "Greet by name",
      "description": "Greet(name) returns \"Hello, NAME!\"; an empty name greets the world.",
      "acceptanceCriteria": ["Greet(\"Ada\") == \"Hello, Ada!\"", "go test ./... passes"],
      "priority": 2,
      "passes": false,
      "dependsOn": ["DEMO-1"]
    },
    {
      "id": "DEMO-3",
      "title": "Add a farewell",
      "description": "Farewell(name) returns \"Goodbye, NAME!\".",
      "acceptanceCriteria": ["go test ./... passes"],
      "priority": 3,
      "passes": false
    },
    {
      "id": "DEMO-4",
      "title": "Document the greeter",
      "description": "A usage section in README.md.",
      "priority": 4,
      "passes": false
    }
  ]
}
`

const readme = "# Greeter\n\nA throwaway project made by `ralph demo`: the plan is `prd.json`, what each\niteration did is in `.ralph/` (`ralph history`, `ralph logs`).\n"

const gomod = "module greeter\n\ngo 1.22\n"

// config is the demo project's ralph.toml: what the demo runs with (Run),
// for the user to read. Its agent and gate are simulated there.
const config = `# The settings ralph demo runs with: the go test gate, the strict tamper
# guard, and a reviewer on each task. The demo simulates the agent, the
# reviewer (the same agent) and the gate; ralph run here would run them.
guard = "strict"

[gates]
commands = ["` + GateCommand + `"]

[review]
when = "task"
`

// Create writes the demo project into dir, which must be missing or
// empty, and returns the plan's path.
func Create(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("demo: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("demo: %w", err)
	}
	if len(entries) > 0 {
		return "", fmt.Errorf("demo: %s is not empty: give a new or empty directory", dir)
	}
	files := []struct{ name, content string }{
		{PlanFile, plan},
		{"README.md", readme},
		{"go.mod", gomod},
		{"ralph.toml", config},
	}
	var errs []error
	for _, f := range files {
		errs = append(errs, os.WriteFile(filepath.Join(dir, f.name), []byte(f.content), 0o644))
	}
	if err := errors.Join(errs...); err != nil {
		return "", fmt.Errorf("demo: %w", err)
	}
	return filepath.Join(dir, PlanFile), nil
}

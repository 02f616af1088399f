package demo

import (
	"fmt"
	"time"
)

// The project's files as the simulated agent writes them.
const (
	greetV1 = `// Package greeter greets people.
package greeter

// Greet returns the greeting.
func Greet() string { return "Hello, world!" }
`
	greetTestV1 = `package greeter

import "testing"

func TestGreet(t *testing.T) {
	if got := Greet(); got != "Hello, world!" {
		t.Errorf("Greet() = %q", got)
	}
}
`
	// The first attempt at DEMO-2 forgets the exclamation mark.
	greetV2Bug = `// Package greeter greets people.
package greeter

// Greet greets name, or the world when name is empty.
func Greet(name string) string {
	if name == "" {
		name = "world"
	}
	return "Hello, " + name
}
`
	greetV2 = `// Package greeter greets people.
package greeter

// Greet greets name, or the world when name is empty.
func Greet(name string) string {
	if name == "" {
		name = "world"
	}
	return "Hello, " + name + "!"
}
`
	greetTestV2 = `package greeter

import "testing"

func TestGreet(t *testing.T) {
	for name, want := range map[string]string{"": "Hello, world!", "Ada": "Hello, Ada!"} {
		if got := Greet(name); got != want {
			t.Errorf("Greet(%q) = %q, want %q", name, got, want)
		}
	}
}
`
	farewell = `package greeter

// Farewell says goodbye to name.
func Farewell(name string) string { return "Goodbye, " + name + "!" }
`
	farewellTest = `package greeter

import "testing"

func TestFarewell(t *testing.T) {
	if got := Farewell("Ada"); got != "Goodbye, Ada!" {
		t.Errorf("Farewell(%q) = %q", "Ada", got)
	}
}
`
	readmeUsage = "\n## Usage\n\n```go\ngreeter.Greet(\"Ada\")    // Hello, Ada!\ngreeter.Farewell(\"Ada\") // Goodbye, Ada!\n```\n"
	readmeGreet = "\n## Usage\n\n```go\ngreeter.Greet(\"Ada\") // Hello, Ada!\n```\n"
	// DEMO-3's refactor loses the "!" again.
	greetRefactored = `// Package greeter greets people.
package greeter

// Greet greets name, or the world when name is empty.
func Greet(name string) string { return say("Hello", name) }

func say(word, name string) string {
	if name == "" {
		name = "world"
	}
	return word + ", " + name
}
`
	// ...and the test that caught it no longer checks anything.
	greetTestWeakened = `package greeter

import "testing"

func TestGreet(t *testing.T) {
	for name := range map[string]string{"": "Hello, world!", "Ada": "Hello, Ada!"} {
		_ = Greet(name)
	}
}
`
)

// reviewScript is what the agent does on its call-th review of task id:
// DEMO-4's first claim does half the task.
func reviewScript(id string, call int) []step {
	if id == "DEMO-4" && call == 1 {
		return []step{
			say("Reading the diff against the task: a usage section in README.md."),
			{pause: 300 * ms, final: "The usage section shows Greet only.\n\n1. README.md's usage leaves out Farewell(name), which the greeter also has.\n\n<promise>REVISE</promise>",
				usage: [2]int64{200, 60}},
		}
	}
	return []step{
		say("Reading the diff against the task and its criteria."),
		{pause: 300 * ms, final: "The change does what the task asks, and its test checks it.\n\n<promise>SHIP</promise>", usage: [2]int64{200, 40}},
	}
}

// progress is an entry of progress.txt, where the prompt asks the agent to
// leave what it learned for the next iterations.
func progress(now time.Time, id, what, learned string) string {
	return fmt.Sprintf("## %s - %s\n- %s\n- **Learnings for future iterations:**\n  - %s\n---\n", now.Format("2006-01-02 15:04"), id, what, learned)
}

// The steps of the scripts. Pauses are at speed 1; usage is the input and
// output tokens of the step's message.

func say(text string) step { return step{pause: 350 * ms, text: text, usage: [2]int64{120, 90}} }

func read(path, content string) step {
	return step{pause: 300 * ms, tool: "Read", input: file(path), out: content}
}

func write(path, content string) step {
	return step{pause: 450 * ms, tool: "Write", input: file(path), do: writeFile(path, content), usage: [2]int64{60, 420}}
}

func edit(path, content string) step {
	return step{pause: 450 * ms, tool: "Edit", input: file(path), do: writeFile(path, content), usage: [2]int64{60, 260}}
}

// note appends to progress.txt, as the prompt asks.
func note(entry string) step {
	return step{pause: 250 * ms, tool: "Edit", input: file("progress.txt"), do: appendFile("progress.txt", entry)}
}

func run(cmd, out string) step {
	return step{pause: 400 * ms, tool: "Bash", input: map[string]any{"command": cmd}, out: out}
}

func done(text string) step {
	return step{pause: 300 * ms, final: text + "\n\n<promise>TASK_DONE</promise>", usage: [2]int64{80, 140}}
}

func usageLimit(after time.Duration) step { return step{pause: 500 * ms, limit: after} }

func file(path string) map[string]any { return map[string]any{"file_path": path} }

const ms = time.Millisecond

// script is what the agent does on its call-th invocation for task id.
func script(id string, call int, now time.Time) []step {
	switch {
	case id == "DEMO-1":
		return []step{
			say("I'll start by looking at what is in the project."),
			run("ls", "README.md\ngo.mod\nprd.json"),
			read("README.md", readme),
			say("Only the module so far. I'll add Greet with a test that pins its output."),
			write("greet.go", greetV1),
			write("greet_test.go", greetTestV1),
			run("go test ./...", "ok  \tgreeter\t0.004s"),
			note(progress(now, "DEMO-1", "Added Greet() and its test (greet.go, greet_test.go)",
				"go test ./... is the project's check")),
			done("Greet() returns \"Hello, world!\" and `go test ./...` passes."),
		}
	case id == "DEMO-2" && call == 1:
		// A claim made without running the tests: the gate runs them.
		return []step{
			say("Greet needs a name. Reading the current code first."),
			read("greet.go", greetV1),
			edit("greet.go", greetV2Bug),
			edit("greet_test.go", greetTestV2),
			done("Greet(name) greets by name; the test covers it."),
		}
	case id == "DEMO-2":
		return []step{
			say("The gate says TestGreet fails: the greeting lacks its \"!\". Fixing that."),
			read("greet.go", greetV2Bug),
			edit("greet.go", greetV2),
			run("go test ./...", "ok  \tgreeter\t0.004s"),
			note(progress(now, "DEMO-2", "Greet(name) greets by name; empty greets the world",
				"run the tests before claiming done: the first attempt missed a \"!\"")),
			done("Greet(\"Ada\") returns \"Hello, Ada!\" and the tests pass."),
		}
	case id == "DEMO-3" && call == 1:
		return []step{usageLimit(4 * time.Second)}
	case id == "DEMO-3" && call == 2:
		// A refactor that breaks Greet, and a test made to pass by taking
		// out its assertion: the gate passes, the tamper guard does not.
		return []step{
			say("Farewell and Greet can share a helper. Refactoring greet.go first."),
			edit("greet.go", greetRefactored),
			write("farewell.go", farewell),
			write("farewell_test.go", farewellTest),
			run("go test ./...", "--- FAIL: TestGreet (0.00s)\n    greet_test.go:8: Greet(\"Ada\") = \"Hello, Ada\", want \"Hello, Ada!\"\nFAIL\nFAIL\tgreeter\t0.005s"),
			say("TestGreet is too strict about punctuation; loosening it."),
			edit("greet_test.go", greetTestWeakened),
			run("go test ./...", "ok  \tgreeter\t0.004s"),
			done("Farewell(\"Ada\") returns \"Goodbye, Ada!\"; the tests pass."),
		}
	case id == "DEMO-3":
		return []step{
			say("The guard says I removed TestGreet's assertion. Putting the test back and fixing Greet instead."),
			edit("greet_test.go", greetTestV2),
			edit("greet.go", greetV2),
			say("Adding Farewell next to Greet."),
			write("farewell.go", farewell),
			write("farewell_test.go", farewellTest),
			{pause: 400 * ms, retry: "overloaded"},
			run("go test ./...", "ok  \tgreeter\t0.005s"),
			note(progress(now, "DEMO-3", "Added Farewell(name) and its test", "one file per function, a test beside each")),
			done("Farewell(\"Ada\") returns \"Goodbye, Ada!\"; the tests pass."),
		}
	case id == "DEMO-4" && call == 1:
		// Half the task: the reviewer reads the diff against the task.
		return []step{
			read("README.md", readme),
			edit("README.md", readme+readmeGreet),
			done("README.md shows how to greet."),
		}
	case id == "DEMO-4":
		return []step{
			say("The reviewer says the usage leaves out Farewell. Adding it."),
			read("README.md", readme+readmeGreet),
			edit("README.md", readme+readmeUsage),
			run("go vet ./...", ""),
			note(progress(now, "DEMO-4", "Documented Greet and Farewell in README.md", "README.md holds the usage")),
			done("README.md shows how to greet and say goodbye."),
		}
	}
	return []step{
		say("This task is not one the demo knows; there is nothing to do."),
		done("Nothing to change."),
	}
}

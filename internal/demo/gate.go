package demo

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/ralph-loop/ralph/internal/task"
)

// GateCommand is the demo project's gate, as its ralph.toml names it.
const GateCommand = "go test ./..."

// Gate is the demo's gate: `go test ./...`, simulated, since the demo
// needs no Go toolchain. It knows the one test the demo's scripts break,
// TestGreet by name, and fails it as go test would: while greet_test.go
// still checks the greeting of "Ada" and greet.go's has lost its "!". A test
// made to pass by taking out its assertion passes here too, as it would
// under go test: the tamper guard is what catches that.
type Gate struct {
	// Dir is the project's directory.
	Dir string
}

// Check runs the simulated tests on the project as it is now.
func (g Gate) Check(context.Context, task.Task) (bool, string, error) {
	greet, err := g.read("greet.go")
	if err != nil {
		return false, "", err
	}
	test, err := g.read("greet_test.go")
	if err != nil {
		return false, "", err
	}
	checks := strings.Contains(test, "t.Errorf(")
	if checks && strings.Contains(test, `"Ada"`) && !strings.Contains(greet, `"!"`) {
		return false, "gate failed: `" + GateCommand + "` exited 1 (simulated: the demo runs no Go toolchain)\n" +
			"--- FAIL: TestGreet (0.00s)\n    greet_test.go:8: Greet(\"Ada\") = \"Hello, Ada\", want \"Hello, Ada!\"\nFAIL\nFAIL\tgreeter\t0.005s\n", nil
	}
	return true, "gates passed: " + GateCommand + " (simulated)", nil
}

// read is a file of the project; "" when it is not there yet.
func (g Gate) read(name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(g.Dir, name))
	if os.IsNotExist(err) {
		return "", nil
	}
	return string(b), err
}

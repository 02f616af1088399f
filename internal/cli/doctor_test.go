package cli

import (
	"regexp"
	"slices"
	"testing"

	"github.com/ralph-loop/ralph/internal/agent"
)

// TestDoctorExamples checks the credentials doctor's help (and so
// docs/cli.md) gives as examples against the agents' Specs, where doctor
// looks.
func TestDoctorExamples(t *testing.T) {
	t.Parallel()
	var files []string
	for _, s := range agent.Specs() {
		files = append(files, s.Credentials.Files...)
	}
	for _, text := range []string{doctorLong} {
		vars := regexp.MustCompile(`([A-Z][A-Z0-9_]+) for (\w+)`).FindAllStringSubmatch(text, -1)
		for _, m := range vars {
			if s, ok := agent.Lookup(m[2]); !ok || !slices.Contains(s.Credentials.EnvVars, m[1]) {
				t.Errorf("%q: %s does not look at %s", m[0], m[2], m[1])
			}
		}
		paths := regexp.MustCompile(`~/[\w./-]*\w`).FindAllString(text, -1)
		for _, p := range paths {
			if !slices.Contains(files, p) {
				t.Errorf("doctor looks for no %s", p)
			}
		}
		if len(vars)+len(paths) == 0 {
			t.Errorf("no examples found in %q", text)
		}
	}
}

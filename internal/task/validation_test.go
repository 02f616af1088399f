package task

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValidationCommands(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, doc string
		want      []string
	}{
		{"fenced block", "# Plan\n\n## Validation Commands\n\n```bash\ngo test ./...\n# a comment\ngolangci-lint run\n```\n\n### Task 1: x\n",
			[]string{"go test ./...", "golangci-lint run"}},
		{"list of code spans", "## Validation Commands\n- `make test`\n- `make lint`\n- not a command\n\n## Tasks\n- [ ] a\n",
			[]string{"make test", "make lint"}},
		{"section ends at the next heading", "## Validation Commands\n- `make test`\n## Notes\n```\nnot a gate\n```\n",
			[]string{"make test"}},
		{"subheadings stay inside", "## Validation Commands\n### Unit\n- `go test ./...`\n## Next\n",
			[]string{"go test ./..."}},
		{"none", "# Plan\n- [ ] a\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, validationCommands(tt.doc)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

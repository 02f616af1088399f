package state

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEnsureGitignore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		before      *string // nil: no .gitignore
		want        string
		wantChanged bool
	}{
		{"absent", nil, ".ralph/\n", true},
		{"empty", new(""), ".ralph/\n", true},
		{"trailing newline", new("node_modules/\n"), "node_modules/\n.ralph/\n", true},
		{"no trailing newline", new("node_modules/\n*.log"), "node_modules/\n*.log\n.ralph/\n", true},
		{"crlf", new("node_modules/\r\n*.log"), "node_modules/\r\n*.log\r\n.ralph/\r\n", true},
		{"has .ralph/", new("a\n.ralph/\nb\n"), "a\n.ralph/\nb\n", false},
		{"has .ralph", new(".ralph"), ".ralph", false},
		{"has /.ralph/", new("  /.ralph/  \r\n"), "  /.ralph/  \r\n", false},
		{"has /.ralph", new("x\n/.ralph\n"), "x\n/.ralph\n", false},
		{"only similar", new(".ralph-old/\n# .ralph/\n"), ".ralph-old/\n# .ralph/\n.ralph/\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, ".gitignore")
			if tt.before != nil {
				if err := os.WriteFile(path, []byte(*tt.before), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			changed, err := EnsureGitignore(dir)
			if err != nil {
				t.Fatal(err)
			}
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf(".gitignore (-want +got):\n%s", diff)
			}
			// Idempotent.
			if changed, err := EnsureGitignore(dir); err != nil || changed {
				t.Errorf("second EnsureGitignore = %v, %v; want false, nil", changed, err)
			}
			if tt.before != nil {
				if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
					t.Errorf("permissions changed to %v", fi.Mode().Perm())
				}
			}
		})
	}
}

package task

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDiscover(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files []string // a trailing "/" makes a directory
		want  string   // "" for the no-plan error
	}{
		{"prd.json first", []string{"fix_plan.md", "progress.md", "tasks.json", "prd.json"}, "prd.json"},
		{"tasks.json", []string{"fix_plan.md", "tasks.json"}, "tasks.json"},
		{"progress.md", []string{"IMPLEMENTATION_PLAN.md", "progress.md"}, "progress.md"},
		{"IMPLEMENTATION_PLAN.md", []string{"fix_plan.md", "IMPLEMENTATION_PLAN.md"}, "IMPLEMENTATION_PLAN.md"},
		{"fix_plan.md", []string{"README.md", "fix_plan.md"}, "fix_plan.md"},
		{"a directory is not a plan", []string{"prd.json/", "fix_plan.md"}, "fix_plan.md"},
		{"none", []string{"README.md", "plan.json"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for _, f := range tt.files {
				var err error
				if name, ok := strings.CutSuffix(f, "/"); ok {
					err = os.Mkdir(filepath.Join(dir, name), 0o755)
				} else {
					err = os.WriteFile(filepath.Join(dir, f), nil, 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			got, err := Discover(dir)
			if tt.want == "" {
				if !errors.Is(err, ErrNoPlan) {
					t.Fatalf("Discover() = %q, %v; want ErrNoPlan", got, err)
				}
				want := "no plan file found in DIR: looked for prd.json, tasks.json, progress.md, IMPLEMENTATION_PLAN.md, fix_plan.md; name the plan file (ralph run PLAN), or start one: ralph init writes an example plan (ralph plan has an agent write one)"
				if diff := cmp.Diff(want, strings.ReplaceAll(err.Error(), dir, "DIR")); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(filepath.Join(dir, tt.want), got); diff != "" {
				t.Errorf("path (-want +got):\n%s", diff)
			}
		})
	}
}

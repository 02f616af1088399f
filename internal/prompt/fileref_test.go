package prompt

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResolveFileRefs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, dir, want string
	}{
		{"ral's first line", "@plan.md @activity.md @tasks.json\n\n## Instructions", "",
			"plan.md activity.md tasks.json\n\n## Instructions"},
		{"in a sentence", "Read @docs/spec.md, then (@notes/todo.md).", "",
			"Read docs/spec.md, then (notes/todo.md)."},
		{"full stop stays", "See @plan.md. Then work.", "", "See plan.md. Then work."},
		{"with a plan directory", "@plan.md and @./sub/a.json", "features/json",
			"features/json/plan.md and features/json/sub/a.json"},
		{"absolute path kept", "@/etc/ralph/a.md", "x", "/etc/ralph/a.md"},
		{"in backticks and quotes", "`@a.md` \"@b.json\" '@c.md'", "", "`a.md` \"b.json\" 'c.md'"},
		{"e-mail address", "mail ann@example.md or bob@plan.json", "", "mail ann@example.md or bob@plan.json"},
		{"npm scope", "npm i @scope/package and @types/node", "", "npm i @scope/package and @types/node"},
		{"other extensions", "@notes.mdx @data.json5 @image.png @README.markdown", "", "@notes.mdx @data.json5 @image.png @README.markdown"},
		{"no name", "@.md @/.json @dir/", "", "@.md @/.json @dir/"},
		{"mention", "ask @alice about @plan.md", "", "ask @alice about plan.md"},
		{"at line start after newline", "x\n@AGENTS.md", "", "x\nAGENTS.md"},
		{"unicode before", "é@plan.md «@plan.md»", "", "é@plan.md «plan.md»"},
		{"nothing to do", "no references here", "", "no references here"},
		{"doubled at", "@@plan.md", "", "@@plan.md"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, ResolveFileRefs(tt.in, tt.dir)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzResolveFileRefs(f *testing.F) {
	f.Add("@plan.md @activity.md @tasks.json", "dir")
	f.Add("ann@example.md @scope/pkg @a.mdx", "")
	f.Fuzz(func(t *testing.T, text, dir string) {
		out := ResolveFileRefs(text, dir)
		if dir == "" && len(out) > len(text) {
			t.Fatalf("without a dir the text can only shrink: %q -> %q", text, out)
		}
		if again := ResolveFileRefs(out, ""); dir == "" && again != out {
			t.Fatalf("not idempotent: %q -> %q -> %q", text, out, again)
		}
	})
}

package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The files a project file names for ralph to read stay in the project:
// the agent can write ralph.toml and make symlinks, and what these files
// hold goes into its prompts.
func TestProjectFilePathsStayInTheProject(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "id_ed25519")
	for _, f := range []struct{ name, body string }{{"prompt.md", "do it\n"}, {secret, "KEY\n"}} {
		path := f.name
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		if err := os.WriteFile(path, []byte(f.body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(secret, filepath.Join(dir, "PROMPT.md")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, body, want string }{
		{"inside", "prompt = \"prompt.md\"\n", ""},
		{"inside, absolute", "prompt = \"" + filepath.Join(dir, "prompt.md") + "\"\n", ""},
		{"missing", "prompt = \"nope.md\"\n", ""},
		{"absolute outside", "\nprompt = \"" + secret + "\"\n",
			`ralph.toml:2: prompt: "` + secret + `" is outside the project ` + dir + `: ralph reads it into the agents' prompts; keep it in the project`},
		{"dot-dot", "[review]\nprompt = \"../x.md\"\n",
			`ralph.toml:2: review.prompt: "../x.md" is outside the project ` + dir + `: ralph reads it into the agents' prompts; keep it in the project`},
		{"symlink out", "prompt = \"PROMPT.md\"\n",
			`ralph.toml:1: prompt: "PROMPT.md" leads out of the project (to ` + mustReal(t, secret) + `): ralph reads it into the agents' prompts; keep it in the project`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			project := filepath.Join(t.TempDir(), "ralph.toml")
			if err := os.WriteFile(project, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(LoadOptions{ProjectFile: project, ProjectDir: dir})
			got := errString(err)
			if tc.want != "" {
				tc.want = filepath.Join(filepath.Dir(project), tc.want)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Error(diff)
			}
			// The user's own file may name any file.
			if _, err := Load(LoadOptions{UserFile: project, ProjectDir: dir}); err != nil {
				t.Errorf("user file: %v", err)
			}
		})
	}
}

func mustReal(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Approve sees the project file's content before it is applied, and its
// error is Load's.
func TestApproveStopsLoad(t *testing.T) {
	t.Parallel()
	user := writeFile(t, "config.toml", "model = \"u\"\n")
	project := writeFile(t, "ralph.toml", "model = \"p\"\n")
	refused := errors.New("not trusted")
	var seen []string
	_, err := Load(LoadOptions{UserFile: user, ProjectFile: project, Approve: func(path string, data []byte) error {
		seen = append(seen, path+": "+string(data))
		return refused
	}})
	if !errors.Is(err, refused) {
		t.Fatalf("got %v, want the refusal", err)
	}
	if diff := cmp.Diff([]string{project + ": model = \"p\"\n"}, seen); diff != "" {
		t.Error(diff)
	}
}

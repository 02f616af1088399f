package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// TestConfigOutputIsTOML: what ralph config prints, every key with its
// value and source, parses as TOML, and says each key once.
func TestConfigOutputIsTOML(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := "agent = \"command\"\n[agents.command]\ncommand = \"x\"\nextra-args = [\"-v\"]\n[notify]\nntfy-token = \"tk\"\n"
	if err := os.WriteFile(filepath.Join(dir, "ralph.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"config"}, {"config", "--all"}} {
		f, out, _ := testFactory(t, dir, "RALPH_NOTIFY_SLACK_WEBHOOK=https://h.example/x")
		root := newRootCmd(f)
		root.SetArgs(append([]string{"-C", dir}, args...))
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var v map[string]any
		if err := toml.Unmarshal(out.Bytes(), &v); err != nil {
			t.Errorf("ralph %v is not TOML: %v\n%s", args, err, out)
		}
	}
}

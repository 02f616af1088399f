package cli

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBuildInfoComplete(t *testing.T) {
	t.Parallel()
	checkout := &debug.BuildInfo{
		Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef"},
			{Key: "vcs.time", Value: "2026-11-27T04:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	installed := &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}}
	for _, tc := range []struct {
		name  string
		flags BuildInfo
		read  *debug.BuildInfo
		want  BuildInfo
	}{
		{"release: the linker flags win", BuildInfo{"v0.1.0", "abc", "2026-11-01T00:00:00Z"}, checkout,
			BuildInfo{"v0.1.0", "abc", "2026-11-01T00:00:00Z"}},
		{"go install @v0.1.0", BuildInfo{}, installed, BuildInfo{Version: "v0.1.0"}},
		{"go build in a checkout", BuildInfo{}, checkout,
			BuildInfo{Commit: "0123456789abcdef-dirty", Date: "2026-11-27T04:00:00Z"}},
		{"no build information", BuildInfo{}, nil, BuildInfo{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := tc.flags.complete(func() (*debug.BuildInfo, bool) { return tc.read, tc.read != nil })
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("complete (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVersionFlagAndCommand(t *testing.T) {
	t.Parallel()
	platform := runtime.GOOS + "/" + runtime.GOARCH
	want := "ralph v0.1.0 (commit abc123, built 2026-11-27T04:00:00Z, " + runtime.Version() + ", " + platform + ")\n"
	for _, argv := range [][]string{{"--version"}, {"version"}} {
		f, out, _ := testFactory(t, t.TempDir())
		f.Build = BuildInfo{Version: "v0.1.0", Commit: "abc123", Date: "2026-11-27T04:00:00Z"}
		root := newRootCmd(f)
		root.SetArgs(argv)
		if err := root.Execute(); err != nil {
			t.Fatalf("ralph %s: %v", strings.Join(argv, " "), err)
		}
		if got := out.String(); got != want {
			t.Errorf("ralph %s:\n got %q\nwant %q", strings.Join(argv, " "), got, want)
		}
	}
	if got := (BuildInfo{}).String(); !strings.HasPrefix(got, "dev (commit unknown, ") {
		t.Errorf("an unstamped build says %q, want dev and an unknown commit", got)
	}
}

package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// BuildInfo says which ralph this is. main fills it from the linker flags
// that a release and `make build` set; what they leave empty comes from the
// build information Go records in every binary: `go install …@v0.1.0`
// records the version, a build in a checkout the commit and its time.
type BuildInfo struct {
	Version string // v0.1.0, or a git describe such as v0.1.0-3-gabc1234-dirty
	Commit  string // the full commit hash
	Date    string // the commit's time, RFC 3339 (builds are reproducible)
}

// complete fills what the linker flags left empty from Go's build
// information (read is debug.ReadBuildInfo; tests pass their own).
func (b BuildInfo) complete(read func() (*debug.BuildInfo, bool)) BuildInfo {
	bi, ok := read()
	if !ok {
		return b
	}
	if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	fromFlags, modified := b.Commit != "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if !fromFlags {
				b.Commit = s.Value
			}
		case "vcs.time":
			if b.Date == "" {
				b.Date = s.Value
			}
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && !fromFlags && b.Commit != "" {
		b.Commit += "-dirty"
	}
	return b
}

// String is the line `ralph version` and `ralph --version` print after
// "ralph ": the version, then the commit, the date and the platform.
func (b BuildInfo) String() string {
	v := b.Version
	if v == "" {
		v = "dev"
	}
	commit := b.Commit
	if commit == "" {
		commit = "unknown"
	}
	detail := []string{"commit " + commit}
	if b.Date != "" {
		detail = append(detail, "built "+b.Date)
	}
	detail = append(detail, runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH)
	return fmt.Sprintf("%s (%s)", v, strings.Join(detail, ", "))
}

func newCmdVersion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print ralph's version, commit and build date",
		Args:  args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(f.IO.Out, "ralph %s\n", f.Build)
			return err
		},
	}
}

package vcs

import (
	"errors"
	"strings"
)

// RefusedError is git refusing files of the working tree: paths it will
// not put in any index, such as a name it keeps for itself in any case
// (.GIT/x), a .gitmodules that is a link, or a name core.protectNTFS
// forbids (GIT~1). Until they are renamed or removed, nothing of the tree
// can be looked at or committed. Its text is git's own.
type RefusedError struct {
	// Paths are the refused paths, relative to the top of the working
	// tree, as git names them.
	Paths []string
	// Err is the failed git command's error (a *CmdError).
	Err error
}

func (e *RefusedError) Error() string { return e.Err.Error() }

func (e *RefusedError) Unwrap() error { return e.Err }

// RefusedPaths names the paths git refused: how the loop, which does not
// import this package, tells a refusal from another failure.
func (e *RefusedError) RefusedPaths() []string { return e.Paths }

// Complaint is what git said, without the command line.
func (e *RefusedError) Complaint() string {
	var ce *CmdError
	if errors.As(e.Err, &ce) && ce.Stderr != "" {
		return strings.TrimSpace(ce.Stderr)
	}
	return e.Err.Error()
}

// refused makes err, a git add that failed, a *RefusedError when git
// said which paths it refuses; other failures (a lock, a full disk, a
// file that cannot be read) are returned as they are.
func refused(err error) error {
	var ce *CmdError
	if !errors.As(err, &ce) {
		return err
	}
	paths := refusedPaths(ce.Stderr)
	if len(paths) == 0 {
		return err
	}
	return &RefusedError{Paths: paths, Err: err}
}

// refusedPaths reads the paths git add refuses from its error lines (in
// English: the caller runs it with LC_ALL=C): "error: invalid path 'P'"
// for a path verify_path rejects, "error: 'P/' does not have a commit
// checked out" for a nested repository without a commit.
func refusedPaths(stderr string) []string {
	var paths []string
	for line := range strings.SplitSeq(stderr, "\n") {
		line = strings.TrimSpace(line)
		if p, ok := strings.CutPrefix(line, "error: invalid path '"); ok {
			if p, ok := strings.CutSuffix(p, "'"); ok && p != "" {
				paths = append(paths, p)
			}
			continue
		}
		if p, ok := strings.CutPrefix(line, "error: '"); ok {
			if p, ok := strings.CutSuffix(p, "' does not have a commit checked out"); ok && p != "" {
				paths = append(paths, strings.TrimSuffix(p, "/"))
			}
		}
	}
	return paths
}

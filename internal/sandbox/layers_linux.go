package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// LayersMain is LayersCommand: args are "--over DIR", "--empty DIR" and
// "--store PATH" options, then "--" and the bubblewrap command line. It
// runs as root of a user and mount namespace of its own, which only it
// and bubblewrap (executed in its place) are in:
//
//   - --over DIR mounts a tmpfs over DIR, and over that an overlay whose
//     lower layer is what DIR held (reached through a descriptor opened
//     before, since the tmpfs hides it) and whose upper layer is in the
//     tmpfs: the gate reads the user's cache and writes to memory that
//     goes when the gate's namespaces do. Nothing is written on the host,
//     so nothing is left to remove, whatever ends the gate.
//   - --empty DIR mounts an empty tmpfs over DIR: a cache the agent may
//     write, which no gate reads.
//   - --store PATH refuses to start the gate when PATH is there but is a
//     link or a file, not a directory bwrap can cover: the gate would
//     read what the agent left there.
//   - --upper BASE --home DIR mounts at BASE/merged (for bubblewrap to
//     bind over DIR) an overlay of what DIR holds and a writable upper
//     layer on disk in BASE/upper: the gate's home, where what it writes
//     outside the places it keeps goes, for ralph to list once it has
//     ended (Box.Watch) and then remove. Where no overlay can be made,
//     BASE/merged is DIR read-only, as without it, and BASE/failed says
//     why.
//   - --keep DIR puts the upper layers of the --over options after it in
//     DIR, on disk, one directory per cache, instead of in a tmpfs: the
//     agent's layer, which its next start in the same slot finds as it
//     left it (AgentLayers).
//
// It returns only on failure, with bubblewrap's "exit 1 before the
// command" status.
func LayersMain(args []string, errOut io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintln(errOut, "ralph "+LayersCommand+":", err)
		return 1
	}
	keep, upper := "", ""
	for len(args) >= 2 && args[0] != "--" {
		var err error
		switch args[0] {
		case "--upper":
			upper = args[1]
		case "--home":
			err = throwaway(args[1], upper)
		case "--keep":
			keep = args[1]
		case "--over":
			err = overlay(args[1], false, keep)
		case "--empty":
			err = overlay(args[1], true, "")
		case "--store":
			if fi, lerr := os.Lstat(args[1]); lerr == nil && !fi.IsDir() {
				err = fmt.Errorf("%s is a link or a file: ralph runs no gate over a store that replays results (a test cache) unless it is a directory it can give the gate empty; remove it", args[1])
			}
		default:
			err = fmt.Errorf("unknown option %s", args[0])
		}
		if err != nil {
			return fail(err)
		}
		args = args[2:]
	}
	if len(args) < 2 || args[0] != "--" {
		return fail(errors.New("want [--upper BASE --home DIR | --keep DIR | --over DIR | --empty DIR | --store PATH]... -- BWRAP [ARG...]"))
	}
	return fail(unix.Exec(args[1], args[1:], os.Environ()))
}

// overlay mounts over dir an overlay of what dir held and a writable
// upper layer. Without keep, the upper layer is in a tmpfs mounted over
// dir first, with dir's mode (only the tmpfs when empty is set): it goes
// with the namespace. With keep, it is on disk in keep (keptDir): what is
// written there outlives the namespace, for the next start given the
// same keep; the namespace's root is the user outside, so the files are
// the user's, and userxattr keeps overlayfs's own marks (opaque
// directories) in the user.* attributes such a root may set.
func overlay(dir string, empty bool, keep string) error {
	lower, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	defer unix.Close(lower)
	var st unix.Stat_t
	if err := unix.Fstat(lower, &st); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	mode := st.Mode & 0o7777
	base, extra := dir, ""
	if keep != "" {
		base, extra = keptDir(keep, dir), ",userxattr"
	} else if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("mode=%o", mode)); err != nil {
		return fmt.Errorf("a tmpfs over %s: %w", dir, err)
	}
	if empty {
		return nil
	}
	upper, work := filepath.Join(base, "upper"), filepath.Join(base, "work")
	for _, d := range []string{upper, work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	// The layer's root has dir's mode (the umask took bits off).
	if err := unix.Chmod(upper, mode); err != nil {
		return err
	}
	// Each layer by a descriptor: a path with a comma or a colon would
	// break the options.
	var fds [2]int
	for i, d := range []string{upper, work} {
		if fds[i], err = unix.Open(d, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
			return err
		}
		defer unix.Close(fds[i])
	}
	opts := fmt.Sprintf("lowerdir=/proc/self/fd/%d,upperdir=/proc/self/fd/%d,workdir=/proc/self/fd/%d%s", lower, fds[0], fds[1], extra)
	if err := unix.Mount("overlay", dir, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("an overlay over %s (upper layer in %s): %w", dir, base, err)
	}
	return nil
}

// throwaway mounts at base/merged an overlay of dir (lower) and
// base/upper, on disk, with userxattr as the kept layers are; or, when
// the kernel refuses it, dir itself read-only there, and the reason in
// base/failed: the gate then finds its home as it would without the
// layer.
func throwaway(dir, base string) error {
	if base == "" {
		return errors.New("--home needs --upper first")
	}
	merged := filepath.Join(base, "merged")
	if err := os.Mkdir(merged, 0o700); err != nil {
		return err
	}
	err := overlayAt(dir, merged, base)
	if err == nil {
		return nil
	}
	if werr := os.WriteFile(filepath.Join(base, "failed"), []byte(err.Error()), 0o600); werr != nil {
		return errors.Join(err, werr)
	}
	if err := unix.Mount(dir, merged, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if err := unix.Mount("", merged, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		return fmt.Errorf("%s read-only: %w", dir, err)
	}
	return nil
}

// overlayAt mounts at target an overlay of dir and an upper layer in
// base, each layer by a descriptor.
func overlayAt(dir, target, base string) error {
	paths := []string{dir, filepath.Join(base, "upper"), filepath.Join(base, "work")}
	for _, d := range paths[1:] {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	var fds [3]int
	for i, d := range paths {
		fd, err := unix.Open(d, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
		defer unix.Close(fd)
		fds[i] = fd
	}
	var st unix.Stat_t
	if err := unix.Fstat(fds[0], &st); err != nil {
		return err
	}
	// The layer's root has dir's mode (the umask took bits off).
	if err := unix.Chmod(paths[1], st.Mode&0o7777); err != nil {
		return err
	}
	opts := fmt.Sprintf("lowerdir=/proc/self/fd/%d,upperdir=/proc/self/fd/%d,workdir=/proc/self/fd/%d,userxattr", fds[0], fds[1], fds[2])
	if err := unix.Mount("overlay", target, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("an overlay over %s (upper layer in %s): %w", dir, base, err)
	}
	return nil
}

package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"

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
//   - --scratch DIR mounts a tmpfs at DIR, where the options below make
//     a gate's throwaway layers (Box.throwaway), and --report SOCKET
//     sends ralph (Box.Watch) a descriptor of it on SOCKET once they are
//     made: ralph lists what the gate wrote there after it has ended, and
//     the memory goes when ralph lets go of it.
//   - --upper DIR names the directory, in the tmpfs, of the throwaway
//     layer the next option makes, which also records there the path it
//     is over (pathFile):
//   - --layer PATH mounts at DIR/merged (for bubblewrap to bind over
//     PATH) an overlay of what the directory PATH holds and a writable
//     upper layer, DIR/upper. Where no overlay can be made, DIR/failed
//     says why and bubblewrap does not bind DIR/merged: the gate sees
//     PATH as the host has it, read-only.
//   - --protected PATH is --layer for a place the gate could write on
//     the host were it not read-only (the git directory, ralph's state):
//     where no overlay can be made, DIR/merged is PATH read-only.
//   - --synthetic PATH makes DIR/dir stand for the directory PATH, which
//     has something mounted below it: a copy of each of its files and
//     links, an empty directory for each of its directories (ralph binds
//     their layers over them), anything else PATH's own, bound read-only.
//     Where it cannot, as --layer; --protected-synthetic, as --protected.
//   - --blank PATH makes DIR/upper, an empty directory bubblewrap binds
//     over the hidden PATH.
//   - --copy PATH copies the file PATH to DIR/copy, which bubblewrap
//     binds over it; where it cannot (a file it may not read), DIR/copy
//     is PATH read-only, and DIR/failed says why.
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
	keep, upper, report, scratch := "", "", "", -1
	var dropped []string
	defer func() {
		if scratch >= 0 {
			unix.Close(scratch)
		}
	}()
	for len(args) >= 2 && args[0] != "--" {
		var err error
		switch args[0] {
		case "--scratch":
			scratch, err = scratchAt(args[1])
		case "--report":
			report = args[1]
		case "--upper":
			upper = args[1]
		case "--layer", "--protected", "--blank", "--copy", "--synthetic", "--protected-synthetic":
			var d string
			if d, err = throwaway(args[0], args[1], upper); d != "" {
				dropped = append(dropped, d)
			}
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
	if report != "" && scratch >= 0 {
		if err := send(report, scratch); err != nil {
			return fail(err)
		}
	}
	if len(args) < 2 || args[0] != "--" {
		return fail(errors.New("want [--scratch DIR --report SOCKET] [--upper DIR (--layer | --protected | --synthetic | --protected-synthetic | --blank | --copy) PATH | --keep DIR | --over DIR | --empty DIR | --store PATH]... -- BWRAP [ARG...]"))
	}
	argv := withoutBinds(args[1:], dropped)
	return fail(unix.Exec(argv[0], argv, os.Environ()))
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

// scratchAt mounts the throwaway layers' tmpfs at dir and returns a
// descriptor of it, for ralph.
func scratchAt(dir string) (int, error) {
	if err := unix.Mkdir(dir, 0o700); err != nil {
		return -1, err
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=700"); err != nil {
		return -1, fmt.Errorf("a tmpfs at %s: %w", dir, err)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("%s: %w", dir, err)
	}
	return fd, nil
}

// send hands ralph fd on the unix socket at path (received).
func send(path string, fd int) error {
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	if err := unix.Connect(s, &unix.SockaddrUnix{Name: path}); err != nil {
		return fmt.Errorf("ralph's socket %s: %w", path, err)
	}
	return unix.Sendmsg(s, []byte{0}, unix.UnixRights(fd), nil, 0)
}

// throwaway makes, in dir (in the tmpfs), the throwaway layer opt asks
// for over path (LayersMain), and records path there.
func throwaway(opt, path, dir string) (dropped string, err error) {
	if dir == "" {
		return "", errors.New(opt + " needs --upper first")
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, pathFile), []byte(path), 0o600); err != nil {
		return "", err
	}
	var source string
	switch opt {
	case "--blank":
		return "", os.Mkdir(filepath.Join(dir, "upper"), 0o700)
	case "--synthetic", "--protected-synthetic":
		source = filepath.Join(dir, syntheticDir)
		err = synthesize(path, source)
	case "--copy":
		source = filepath.Join(dir, copiedFile)
		if err = copyFile(path, source); err != nil {
			if werr := os.WriteFile(source, nil, 0o600); werr != nil { // for the original's bind below
				return "", errors.Join(err, werr)
			}
		}
	default:
		source = filepath.Join(dir, "merged")
		if err := os.Mkdir(source, 0o700); err != nil {
			return "", err
		}
		err = overlayAt(path, source, dir)
	}
	if err == nil {
		return "", nil
	}
	if werr := os.WriteFile(filepath.Join(dir, failedFile), []byte(err.Error()), 0o600); werr != nil {
		return "", errors.Join(err, werr)
	}
	if opt == "--layer" || opt == "--synthetic" {
		// Bubblewrap is not to bind it: the gate sees path as the host
		// has it, read-only (under --ro-bind / /).
		return source, nil
	}
	// What the gate could otherwise write on the host (the git
	// directory, ralph's files in the project) stays read-only: the
	// original is bound there.
	if opt == "--protected-synthetic" {
		if err := os.RemoveAll(source); err != nil {
			return "", err
		}
		if err := os.Mkdir(source, 0o700); err != nil {
			return "", err
		}
	}
	if err := unix.Mount(path, source, "", unix.MS_BIND, ""); err == nil {
		if err := unix.Mount("", source, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			return "", fmt.Errorf("%s read-only: %w", path, err)
		}
		return "", nil
	}
	// Something is mounted below path: the kernel binds it only with
	// what is mounted there, all of which is made read-only.
	if err := unix.Mount(path, source, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, source, unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return "", fmt.Errorf("%s read-only: %w", path, err)
	}
	return "", nil
}

// withoutBinds is bubblewrap's command line argv without its binds of
// the sources in dropped, up to its own "--".
func withoutBinds(argv, dropped []string) []string {
	if len(dropped) == 0 {
		return argv
	}
	out := make([]string, 0, len(argv))
	for i := 0; i < len(argv); i++ {
		if argv[i] == "--" {
			return append(out, argv[i:]...)
		}
		if argv[i] == "--bind" && i+2 < len(argv) && slices.Contains(dropped, argv[i+1]) {
			i += 2
			continue
		}
		out = append(out, argv[i])
	}
	return out
}

// synthesize makes syn stand for the directory path (--synthetic).
func synthesize(path, syn string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if err := os.Mkdir(syn, 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return err
	}
	for _, e := range entries {
		src, dst := filepath.Join(path, e.Name()), filepath.Join(syn, e.Name())
		switch t := e.Type(); {
		case t.IsDir():
			err = os.Mkdir(dst, 0o755)
		case t&fs.ModeSymlink != 0:
			var target string
			if target, err = os.Readlink(src); err == nil {
				err = os.Symlink(target, dst)
			}
		case t.IsRegular() && copyFile(src, dst) == nil:
		default: // a file it may not read, a socket, a device: the host's
			if err = os.WriteFile(dst, nil, 0o600); err == nil {
				err = bindReadOnly(src, dst)
			}
		}
		if err != nil {
			return fmt.Errorf("%s in a stand-in: %w", src, err)
		}
	}
	return os.Chmod(syn, fi.Mode().Perm())
}

// bindReadOnly binds src at dst, read-only.
func bindReadOnly(src, dst string) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return err
	}
	return unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, "")
}

// copyFile copies the regular file src to dst, with its mode, streamed.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// overlayAt mounts at target an overlay of dir and an upper layer in
// base, each layer by a descriptor. base is in the namespace's own tmpfs,
// where its root may set overlayfs's trusted.* marks: no userxattr, which
// a tmpfs takes only from Linux 6.6.
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
	opts := fmt.Sprintf("lowerdir=/proc/self/fd/%d,upperdir=/proc/self/fd/%d,workdir=/proc/self/fd/%d", fds[0], fds[1], fds[2])
	if err := unix.Mount("overlay", target, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("an overlay over %s (upper layer in %s): %w", dir, base, err)
	}
	return nil
}

// received is the descriptor of the throwaway layers' tmpfs that
// LayersCommand sent on ln before it started bubblewrap; false when it
// sent none (no layer was laid: it failed before, or was not asked).
// The sender has gone: nothing here waits.
func received(ln *net.UnixListener) (int, bool) {
	raw, err := ln.SyscallConn()
	if err != nil {
		return 0, false
	}
	conn := -1
	if raw.Control(func(fd uintptr) {
		conn, _, err = unix.Accept4(int(fd), unix.SOCK_CLOEXEC) // the listener does not block: none pending is EAGAIN
	}) != nil || err != nil {
		return 0, false
	}
	defer unix.Close(conn)
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(conn, make([]byte, 1), oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return 0, false
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return 0, false
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) == 0 {
		return 0, false
	}
	for _, fd := range fds[1:] {
		unix.Close(fd)
	}
	return fds[0], true
}

// closeFD closes a descriptor received.
func closeFD(fd int) { _ = unix.Close(fd) }

// alive says whether a process pid exists (a signal 0 it may not send
// still finds it).
func alive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

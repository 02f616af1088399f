package sandbox

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A watched gate run (Watch) writes wherever it could write outside the
// sandbox: what it may keep (the project, its caches' layers,
// sandbox.allow-write) as it does without them, and everything else it
// sees into throwaway layers, which ralph lists once the run has ended.
// So the sandbox refuses a gate no write that the host would allow, and a
// gate never fails on a read-only mount for ralph to misread as the
// work's failure; what was discarded is said with a failing gate's
// output.
//
// The layers are in a tmpfs LayersCommand mounts at scratchDir in the
// run's directory (its base), in its namespace alone, one directory per
// layer, named by number: the path the layer is over (pathFile), its
// upper layer, where it is merged, why it could not be laid (failedFile),
// or a file's copy (copiedFile).
const (
	scratchDir = "layers"
	pathFile   = "path"
	failedFile = "failed"
	copiedFile = "copy"
	// syntheticDir is a directory that stands for one with something
	// mounted below it: its entries copied, its directories placeholders
	// that their own layers are bound over.
	syntheticDir = "dir"
)

// throwawayTarget is a place a watched gate gets a throwaway layer over.
type throwawayTarget struct {
	path string
	// mount is a mount point: a file system of its own, which the layer
	// of a directory above it does not take in.
	mount bool
	// own are the places given a layer for what they are, wherever they
	// are: the git directory and ralph's and git's read-only directories
	// in the project (writes there would be obeyed by ralph's own git or
	// read by ralph), which the project's writable bind holds.
	own bool
}

// throwaway lays out the throwaway layers of the gate run laid out as r
// (caches are its caches' layers, bound on their own): over the home
// (throwawayHome), each top-level directory of the host, each mount point
// (a file mounted on its own gets a copy: an overlay covers directories
// only), the git directory, and the read-only directories in the project
// (ralph's state, git's hooks and info); the read-only files inside them
// go with them. A read-only file in the project (ralph.toml, the prompts)
// gets a copy, compared with it afterwards. A hidden directory becomes an
// empty one whose writes are discarded the same way.
//
// A directory that holds a mount point can get no overlay (in a user
// namespace the kernel lays none over a directory with something mounted
// below it): it gets a synthetic one instead, in the tmpfs, with a copy
// of each of its files and links, where the gate's new files go too, and
// each of its directories gets a layer of its own. One that holds the
// run's base stays read-only (an overlay cannot hold its own upper layer;
// the base is in the private /tmp unless /tmp is in the home). Not
// layered: the kernel's and bubblewrap's own (/proc, /sys, /dev, the
// private /tmp), and what the gate keeps or may not see. It returns
// LayersCommand's arguments and changes r's binds and hidden paths.
func (b *Box) throwaway(r *layout, caches []string) []string {
	base := b.layers.base
	scratch := filepath.Join(base, scratchDir)
	args := []string{"--scratch", scratch, "--report", filepath.Join(base, reportSocket)}
	n := 0
	next := func() string {
		n++
		return filepath.Join(scratch, strconv.Itoa(n-1))
	}
	gitDir := realPath(b.policy.GitDir)
	never := slices.Concat([]string{"/proc", "/sys", "/dev", base}, caches)
	if r.tmp != "" {
		never = append(never, r.tmp)
	}
	for _, h := range r.hidden {
		never = append(never, h.path)
	}
	var kept []string
	for _, m := range r.binds {
		switch {
		case m.source != "":
			never = append(never, m.path) // an agent's copy
		case m.writable && m.path != gitDir:
			kept = append(kept, m.path)
		}
	}
	mounts := mountPoints()
	var layered, synthetic []string
	var lay func(t throwawayTarget)
	lay = func(t throwawayTarget) {
		p := t.path
		if p == "/" || slices.Contains(layered, p) ||
			slices.ContainsFunc(never, func(x string) bool { return within(p, x) }) ||
			!t.own && slices.ContainsFunc(kept, func(k string) bool { return within(p, k) }) ||
			!t.mount && inLayer(p, layered, kept) {
			return
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return
		}
		if !fi.IsDir() {
			if t.mount && fi.Mode().IsRegular() {
				// A file mounted on its own (a container's /etc/hosts):
				// no overlay takes it, a copy does.
				dir := next()
				args = append(args, "--upper", dir, "--copy", p)
				r.binds = append(r.binds, bind{path: p, source: filepath.Join(dir, copiedFile), writable: true})
			}
			return
		}
		if within(base, p) {
			return
		}
		if slices.ContainsFunc(mounts, func(m string) bool { return m != p && within(m, p) }) {
			// p's own entries are copied into a directory of the
			// layers' tmpfs (the gate's new files go there too); its
			// directories get their own layers, or the host's, read-only.
			dir := next()
			args = append(args, "--upper", dir, layerOption("--synthetic", t.own), p)
			r.binds = append(r.binds, bind{path: p, source: filepath.Join(dir, syntheticDir), writable: true})
			entries, _ := os.ReadDir(p)
			for _, e := range entries {
				if c := filepath.Join(p, e.Name()); e.IsDir() {
					lay(throwawayTarget{path: c, own: t.own})
					synthetic = append(synthetic, c)
				}
			}
			return
		}
		dir := next()
		args = append(args, "--upper", dir, layerOption("--layer", t.own), p)
		r.binds = append(r.binds, bind{path: p, source: filepath.Join(dir, "merged"), writable: true})
		layered = append(layered, p)
	}
	for _, t := range throwawayTargets(r, b.throwawayHome(r), gitDir, mounts) {
		lay(t)
	}
	// A directory in a synthetic one that nothing else is bound over is
	// the host's, read-only, as it would be without the layers.
	for _, c := range synthetic {
		if c != r.tmp && !slices.ContainsFunc(r.binds, func(m bind) bool { return m.path == c }) &&
			!slices.ContainsFunc(r.hidden, func(h hidden) bool { return h.path == c }) {
			r.binds = append(r.binds, bind{path: c})
		}
	}
	// A read-only path in a layer goes with it: its writes are discarded
	// with the layer's; so does the git directory's writable bind, once
	// it has a layer.
	r.binds = slices.DeleteFunc(r.binds, func(m bind) bool {
		if m.source == "" && m.path == gitDir && slices.Contains(layered, gitDir) {
			return true
		}
		return !m.writable && m.source == "" && inLayer(m.path, layered, kept)
	})
	// A read-only file where the gate writes (ralph.toml, a prompt, a
	// worktree's .git file) becomes a copy of it, compared afterwards. A
	// file cannot take an overlay; one replaced or removed (a rename over
	// it) is still refused, as a mount point is.
	for i, m := range r.binds {
		if m.writable || m.source != "" ||
			!slices.ContainsFunc(kept, func(k string) bool { return within(m.path, k) }) {
			continue
		}
		if fi, err := os.Stat(m.path); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		dir := next()
		args = append(args, "--upper", dir, "--copy", m.path)
		r.binds[i] = bind{path: m.path, source: filepath.Join(dir, copiedFile), writable: true}
	}
	r.hidden = slices.DeleteFunc(r.hidden, func(h hidden) bool {
		if !h.dir || slices.ContainsFunc(r.binds, func(m bind) bool { return within(m.path, h.path) }) {
			return false // a file is /dev/null, which takes writes; what is bound inside stays hidden
		}
		dir := next()
		args = append(args, "--upper", dir, "--blank", h.path)
		r.binds = append(r.binds, bind{path: h.path, source: filepath.Join(dir, "upper"), writable: true})
		return true
	})
	return args
}

// layerOption is LayersCommand's option for a layer of the kind opt:
// over a place of the gate's own (the git directory, ralph's state),
// which the gate could write on the host, the protected kind, read-only
// where it cannot be laid.
func layerOption(opt string, own bool) string {
	switch {
	case !own:
		return opt
	case opt == "--synthetic":
		return "--protected-synthetic"
	}
	return "--protected"
}

// inLayer says whether what the gate sees at p is in one of the layered
// paths: the deepest of them and of the kept ones (writable, bound over
// the layers) that holds p is a layered one.
func inLayer(p string, layered, kept []string) bool {
	deepest, isLayer := "", false
	for _, l := range layered {
		if within(p, l) && len(l) > len(deepest) {
			deepest, isLayer = l, true
		}
	}
	for _, k := range kept {
		if within(p, k) && len(k) > len(deepest) {
			deepest, isLayer = k, false
		}
	}
	return isLayer
}

// throwawayTargets are the places a gate laid out as r may get a
// throwaway layer over, shallow first: the host's top-level directories,
// the home, the mount points, the git directory and the read-only
// directories bound in r.
func throwawayTargets(r *layout, home, gitDir string, mounts []string) []throwawayTarget {
	var out []throwawayTarget
	if entries, err := os.ReadDir("/"); err == nil {
		for _, e := range entries {
			if e.IsDir() { // not a link: /bin is /usr/bin's
				out = append(out, throwawayTarget{path: "/" + e.Name()})
			}
		}
	}
	if home != "" {
		out = append(out, throwawayTarget{path: home})
	}
	for _, m := range mounts {
		out = append(out, throwawayTarget{path: m, mount: true})
	}
	if gitDir != "" {
		out = append(out, throwawayTarget{path: gitDir, own: true})
	}
	for _, m := range r.binds {
		if !m.writable && m.source == "" && isDir(m.path) {
			out = append(out, throwawayTarget{path: m.path, own: true})
		}
	}
	slices.SortStableFunc(out, func(x, y throwawayTarget) int {
		return strings.Count(x.path, "/") - strings.Count(y.path, "/")
	})
	return out
}

// mountPoints are the paths where something is mounted, as this process
// sees them (/proc/self/mountinfo's fifth field, unescaped); none where
// the kernel does not say.
func mountPoints() []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && !slices.Contains(out, unescapeMount(f[4])) {
			out = append(out, unescapeMount(f[4]))
		}
	}
	return out
}

// unescapeMount undoes the kernel's octal escapes of a mount point's
// space, tab, newline and backslash.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// discarded lists what a gate run left in its throwaway layers in root
// (LayersCommand's tmpfs: a file, a link, a removal, an empty directory it made), each as its
// path (in the home as "~/" and the path there), at most maxDiscarded of
// them and a count of the others, and the places it found read-only
// because their layer could not be laid, with why.
func discarded(root, home string) (paths []string, more int, readOnly []string) {
	type layer struct{ path, dir string }
	var layers []layer
	entries, _ := os.ReadDir(root)
	slices.SortFunc(entries, func(x, y fs.DirEntry) int {
		i, _ := strconv.Atoi(x.Name())
		j, _ := strconv.Atoi(y.Name())
		return i - j
	})
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if p, err := os.ReadFile(filepath.Join(dir, pathFile)); err == nil {
			layers = append(layers, layer{string(p), dir})
		}
	}
	add := func(p string) {
		if len(paths) >= maxDiscarded {
			more++
			return
		}
		paths = append(paths, shown(p, home))
	}
	for _, l := range layers {
		if b, err := os.ReadFile(filepath.Join(l.dir, failedFile)); err == nil {
			readOnly = append(readOnly, shown(l.path, home)+" ("+string(b)+")")
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			readOnly = append(readOnly, shown(l.path, home)+" ("+err.Error()+")")
			continue
		}
		if changed, err := differs(l.path, filepath.Join(l.dir, copiedFile)); err == nil {
			if changed {
				add(l.path)
			}
			continue
		}
		if syn := filepath.Join(l.dir, syntheticDir); isDir(syn) {
			syntheticChanges(syn, l.path, add)
			continue
		}
		upper := filepath.Join(l.dir, "upper")
		_ = filepath.WalkDir(upper, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == upper {
				return nil //nolint:nilerr // a part it cannot read is left out of the list, not an error of the gate's
			}
			if d.IsDir() {
				if entries, err := os.ReadDir(p); err != nil || len(entries) > 0 {
					return nil
				}
			}
			rel, _ := filepath.Rel(upper, p)
			add(filepath.Join(l.path, rel))
			return nil
		})
	}
	return paths, more, readOnly
}

// shown is p as a gate's note names it: in the home, "~/" and the path
// there.
func shown(p, home string) string {
	if home != "" && home != "/" && within(p, home) {
		return "~" + strings.TrimPrefix(p, home)
	}
	return p
}

// differs says whether the gate's copy of the file orig (copyFile) was
// changed; an error when there is no copy. The copy is the gate's to
// fill: it is compared a block at a time, never read whole.
func differs(orig, copied string) (bool, error) {
	c, err := os.Open(copied)
	if err != nil {
		return false, err
	}
	defer c.Close()
	o, err := os.Open(orig)
	if err != nil {
		return true, nil //nolint:nilerr // the original gone is a change to report, not an error of the gate's
	}
	defer o.Close()
	ci, cerr := c.Stat()
	oi, oerr := o.Stat()
	if cerr != nil || oerr != nil || ci.Size() != oi.Size() {
		return true, nil
	}
	cb, ob := make([]byte, 32<<10), make([]byte, 32<<10)
	for {
		n, cerr := io.ReadFull(c, cb)
		m, oerr := io.ReadFull(o, ob)
		if n != m || !bytes.Equal(cb[:n], ob[:m]) {
			return true, nil
		}
		if cerr != nil || oerr != nil {
			return !isEnd(cerr) || !isEnd(oerr), nil // a read error counts as a change
		}
	}
}

// isEnd is how io.ReadFull says a file ended.
func isEnd(err error) bool { return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) }

// syntheticChanges calls add with each path of orig that its synthetic
// directory syn (LayersMain's --synthetic) shows changed: an entry made
// there, a file or link whose copy differs, an entry removed. The
// placeholders of what was bound over (directories, other files) are
// left out.
func syntheticChanges(syn, orig string, add func(string)) {
	_ = filepath.WalkDir(syn, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == syn {
			return nil //nolint:nilerr // a part it cannot read is left out of the list, not an error of the gate's
		}
		rel, _ := filepath.Rel(syn, p)
		host := filepath.Join(orig, rel)
		hi, herr := os.Lstat(host)
		switch {
		case herr != nil:
			add(host) // made by the gate
			if d.IsDir() {
				return filepath.SkipDir
			}
		case d.IsDir() != hi.IsDir():
			add(host)
		case d.Type()&fs.ModeSymlink != 0:
			if a, _ := os.Readlink(p); hi.Mode()&fs.ModeSymlink == 0 || a != readlink(host) {
				add(host)
			}
		case d.Type().IsRegular() && hi.Mode().IsRegular():
			if changed, _ := differs(host, p); changed {
				add(host)
			}
		}
		return nil
	})
	entries, _ := os.ReadDir(orig)
	for _, e := range entries {
		if _, err := os.Lstat(filepath.Join(syn, e.Name())); err != nil {
			add(filepath.Join(orig, e.Name())) // removed by the gate
		}
	}
}

func readlink(p string) string {
	s, _ := os.Readlink(p)
	return s
}

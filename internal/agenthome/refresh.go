package agenthome

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ralph-loop/ralph/internal/durable"
)

// Refresh brings into the copy the user's newer logins: the files WriteBack
// names by their full name (not a pattern, nor in scratch) that changed
// in the user's directory since the copy was made or last synced. Another
// process may have refreshed the login meanwhile (the user's own CLI,
// another run), and a refresh token that rotates makes the copy's stale.
// Call it after Sync, when no agent works in the copy: a change the agent
// made there was written back by Sync, or reported, yours kept; now the
// copy keeps yours too. It returns the files it brought in.
func (h *Home) Refresh() ([]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, nil
	}
	var in []string
	var errs []error
	for _, r := range h.roots {
		for _, rel := range r.writeBack {
			if strings.ContainsAny(rel, "*?[") || r.inScratch(rel) {
				continue
			}
			ok, err := r.refresh(rel)
			if err != nil {
				errs = append(errs, fmt.Errorf("agent home: %s: %w", h.display(r, rel), err))
			}
			if ok {
				in = append(in, h.display(r, rel))
			}
		}
	}
	return in, errors.Join(errs...)
}

// refresh copies the user's file at rel over the copy's when the user's
// changed since base says.
func (r *root) refresh(rel string) (bool, error) {
	real, name, err := openParent(r.real, rel, false)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, errInTheWay) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer real.Close()
	cur, err := lstatAt(real, name)
	b, had := r.base[rel]
	if err != nil || fileType(&cur) != unix.S_IFREG || had && stampOf(&cur) == b.real {
		return false, nil // gone (the agent keeps its copy's), not a file, or unchanged
	}
	src, st, err := openRegular(real, name)
	if err != nil || src == nil {
		return false, nil
	}
	defer src.Close()
	sum, err := hashFile(src)
	if err != nil {
		return false, err
	}
	if _, err := src.Seek(0, 0); err != nil {
		return false, err
	}
	dst, dname, err := r.openCopyParent(rel)
	if err != nil {
		return false, nil // the agent moved the copy's directory away: nothing to put it in
	}
	defer dst.Close()
	if err := durable.ReplaceFrom(dst, dname, src, os.FileMode(modeOf(&st)&0o777)); err != nil {
		return false, err
	}
	var cst unix.Stat_t
	if cst, err = lstatAt(dst, dname); err != nil {
		return false, err
	}
	r.base[rel] = entry{perm: modeOf(&cst) & 0o777, copy: stampOf(&cst), real: stampOf(&st), sum: sum}
	delete(r.last, rel)
	return true, nil
}

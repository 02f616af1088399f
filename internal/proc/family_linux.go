package proc

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// sweepBound bounds how long a sweep waits for the processes it
	// killed to exit (one in uninterruptible sleep may take long).
	sweepBound = 5 * time.Second
	// maxRounds bounds a sweep's rounds of find, kill and wait: a
	// process that forks as fast as it is killed must not hold ralph.
	maxRounds = 50
	// maxUnsure bounds the rounds a sweep looks again at processes whose
	// environment could not be read yet.
	maxUnsure = 5
)

// becomeSubreaper makes ralph the reaper of its orphaned descendants
// (PR_SET_CHILD_SUBREAPER), for the whole process and for good: a
// descendant whose parent exits is re-parented to ralph, not to init,
// where a sweep finds it.
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// selfExecutable is the running executable, even if its file was replaced
// or removed since (an upgrade during a run).
func selfExecutable() (string, error) { return "/proc/self/exe", nil }

// sweepChild kills and reaps what the child with marker and group pgid
// left: the processes re-parented to ralph and their trees. Those that
// carry its marker outside its group are leftovers (killed, reported);
// members of its group are already being killed by the group's SIGKILL
// and are only waited for and reaped.
func (f *Family) sweepChild(marker string, pgid int) []Leftover {
	if !f.strays() {
		// Once the child is gone, whatever survives of its tree hangs
		// below a process re-parented to ralph (the subreaper): with no
		// such child there is nothing to look for, and the whole process
		// table need not be read (about 1.5 ms an agent run).
		return nil
	}
	return f.reap(func(p procInfo, mark string) (kill, report bool) {
		switch {
		case p.pgrp == pgid:
			return true, false
		case mark == marker:
			return true, true
		}
		return false, false
	})
}

// sweepAll kills and reaps whatever is left with the family's mark.
func (f *Family) sweepAll() []Leftover {
	prefix := f.id + "."
	return f.reap(func(_ procInfo, mark string) (kill, report bool) {
		ok := strings.HasPrefix(mark, prefix)
		return ok, ok
	})
}

// reap finds ralph's children that proc did not start (orphans
// re-parented to ralph) and their descendants, kills those ours selects,
// waits for them to exit and reaps the zombies among ralph's children that
// are safe to reap, in rounds until a round finds nothing to kill.
//
// A zombie child is reaped by its pid, with wait4 on that pid (never -1,
// which would take os/exec's own children from it), only when it cannot
// be a child os/exec waits for: proc makes every child it starts a group
// leader, so a zombie that is not one is an orphan; and one this sweep
// killed was seen alive carrying a mark no child of proc has.
func (f *Family) reap(ours func(p procInfo, mark string) (kill, report bool)) []Leftover {
	self := os.Getpid()
	var killed []Leftover
	seen := map[int]bool{}
	deadline := time.Now().Add(sweepBound)
	for round := range maxRounds {
		tree := newProcTree()
		var roots []int
		for _, kid := range tree.children(self) {
			if f.isLive(kid) {
				continue // proc supervises it; its tree is its own sweep's
			}
			p := tree.info[kid]
			if p.state == 'Z' {
				if kid != p.pgrp || seen[kid] {
					var ws unix.WaitStatus
					_, _ = unix.Wait4(kid, &ws, unix.WNOHANG, nil)
				}
				continue
			}
			roots = append(roots, kid)
		}
		var doomed []int
		unsure := false
		for _, pid := range tree.descendants(roots) {
			p := tree.info[pid]
			if p.state == 'Z' {
				continue // a zombie is its parent's to reap, or ralph's next round
			}
			mark, empty := markOf(pid)
			if empty {
				// In the middle of an exec: its environment is not there
				// yet. Look again.
				unsure = true
			}
			kill, report := ours(p, mark)
			if !kill {
				continue
			}
			if report && !seen[pid] {
				killed = append(killed, Leftover{Pid: pid, Command: cmdline(pid)})
			}
			seen[pid] = true
			doomed = append(doomed, pid)
		}
		if len(doomed) == 0 {
			if unsure && round < maxUnsure {
				runtime.Gosched()
				continue
			}
			break
		}
		for _, pid := range doomed {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		// Their zombies, re-parented to ralph once their parents are gone
		// too, are reaped in the next round.
		if !waitGone(doomed, deadline) {
			break
		}
	}
	return killed
}

// stopFamily stops the groups and every process with the family's mark:
// SIGTERM first when grace is positive, then SIGKILL, in rounds until no
// live one is found. It is not their parent: init (or another subreaper)
// reaps them, and a zombie that is not reaped counts as gone.
func stopFamily(id string, groups []int, grace time.Duration) []Leftover {
	prefix := id + "."
	var stopped []Leftover
	seen := map[int]bool{}
	sig := syscall.SIGKILL
	if grace > 0 {
		sig = syscall.SIGTERM
	}
	for range maxRounds {
		found := findLive(func(p procInfo) bool {
			if slices.Contains(groups, p.pgrp) {
				return true
			}
			mark, _ := markOf(p.pid)
			return strings.HasPrefix(mark, prefix)
		})
		if len(found) == 0 {
			break
		}
		var pids []int
		for _, p := range found {
			if !seen[p.pid] && !slices.Contains(groups, p.pgrp) {
				// Members of the registered groups are the run's own
				// children and their groups, not leftovers.
				stopped = append(stopped, Leftover{Pid: p.pid, Command: cmdline(p.pid)})
			}
			seen[p.pid] = true
			if p.pgrp == p.pid {
				// It leads a group (the agent's): members that dropped the
				// mark go with it. The mark (or the registration) shows the
				// group is this family's, not a stranger's that reuses the
				// number.
				_ = syscall.Kill(-p.pid, sig)
			}
			_ = syscall.Kill(p.pid, sig)
			pids = append(pids, p.pid)
		}
		wait := time.Now().Add(sweepBound)
		if sig == syscall.SIGTERM {
			wait = time.Now().Add(grace)
		}
		waitGone(pids, wait)
		sig = syscall.SIGKILL
	}
	return stopped
}

// findMarked lists the live processes whose mark starts with prefix.
func findMarked(prefix string) []procInfo {
	return findLive(func(p procInfo) bool {
		mark, _ := markOf(p.pid)
		return strings.HasPrefix(mark, prefix)
	})
}

// findLive lists the live processes (zombies aside) that match, ralph's
// own process aside.
func findLive(match func(procInfo) bool) []procInfo {
	self := os.Getpid()
	var out []procInfo
	for _, pid := range allPids() {
		if pid == self {
			continue
		}
		if p, ok := readStat(pid); ok && p.state != 'Z' && match(p) {
			out = append(out, p)
		}
	}
	return out
}

// waitGone waits until every process in pids has exited (a zombie has),
// or deadline; it reports whether they all did. It waits on pidfds, which
// cannot mistake a reused pid for the process.
func waitGone(pids []int, deadline time.Time) bool {
	var fds []unix.PollFd
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // gone already (ESRCH), or no pidfds: nothing to wait on
		}
		defer unix.Close(fd)
		fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	}
	for len(fds) > 0 {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false
		}
		if n == 0 {
			continue // the deadline check above ends it
		}
		open := fds[:0]
		for _, p := range fds {
			if p.Revents == 0 {
				open = append(open, p)
			}
		}
		fds = open
	}
	return true
}

// procInfo is what /proc/PID/stat says of a process.
type procInfo struct {
	pid, ppid, pgrp int
	state           byte
}

func readStat(pid int) (procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, false
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 3 || fields[0] == "" {
		return procInfo{}, false
	}
	ppid, err1 := strconv.Atoi(fields[1])
	pgrp, err2 := strconv.Atoi(fields[2])
	if err1 != nil || err2 != nil {
		return procInfo{}, false
	}
	return procInfo{pid: pid, ppid: ppid, pgrp: pgrp, state: fields[0][0]}, true
}

// markOf reads pid's MarkerVar from the environment it was started with:
// "" when it has none or it cannot be read (another user's process, a
// zombie, one gone). empty says the environment is empty, as it is for a
// moment during an exec.
func markOf(pid int) (mark string, empty bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return "", false
	}
	if len(b) == 0 {
		return "", true
	}
	key := []byte(MarkerVar + "=")
	for len(b) > 0 {
		kv := b
		if i := bytes.IndexByte(b, 0); i >= 0 {
			kv, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if v, found := bytes.CutPrefix(kv, key); found {
			return string(v), false // the first, as getenv finds it
		}
	}
	return "", false
}

// cmdline is pid's command line for a report, shortened; its name from
// stat when it has none.
func cmdline(pid int) string {
	const maxLen = 80
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	s := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	if s == "" {
		stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if i, j := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')'); i >= 0 && j > i {
			s = "[" + string(stat[i+1:j]) + "]"
		}
	}
	if r := []rune(s); len(r) > maxLen {
		s = string(r[:maxLen-1]) + "…"
	}
	return s
}

func allPids() []int {
	entries, _ := os.ReadDir("/proc")
	pids := make([]int, 0, len(entries))
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procTree is who is whose child, from one scan of every process's
// /proc/PID/stat. (The kernel's /proc/PID/task/TID/children lists would
// be cheaper, but they skip entries while other children come and go,
// which under --parallel they do.)
type procTree struct {
	byParent map[int][]int
	info     map[int]procInfo
}

func newProcTree() *procTree {
	t := &procTree{byParent: map[int][]int{}, info: map[int]procInfo{}}
	for _, pid := range allPids() {
		if p, ok := readStat(pid); ok {
			t.byParent[p.ppid] = append(t.byParent[p.ppid], pid)
			t.info[pid] = p
		}
	}
	return t
}

func (t *procTree) children(pid int) []int { return t.byParent[pid] }

// descendants lists roots and everything below them, parents first.
func (t *procTree) descendants(roots []int) []int {
	seen := map[int]bool{}
	out := []int{}
	queue := append([]int(nil), roots...)
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		out = append(out, pid)
		queue = append(queue, t.children(pid)...)
	}
	return out
}

// strays reports whether ralph has a child proc does not supervise: an
// orphan re-parented to it, alive or a zombie. It reads the kernel's
// children lists of ralph's threads, which may skip an entry that comes or
// goes during the read; two reads that agree, with no thread added or
// removed between them, are taken as the truth, anything else as "maybe",
// which sends the caller to the full scan.
func (f *Family) strays() bool {
	first, ok := childPids()
	if !ok {
		return true
	}
	second, ok := childPids()
	if !ok || !slices.Equal(first, second) {
		return true
	}
	for _, pid := range first {
		if !f.isLive(pid) {
			return true
		}
	}
	return false
}

// childPids lists the children of every thread of ralph, sorted; ok is
// false where the kernel does not offer the lists.
func childPids() (pids []int, ok bool) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, false
	}
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if errors.Is(err, fs.ErrNotExist) {
			continue // the thread exited meanwhile
		}
		if err != nil {
			return nil, false
		}
		for field := range strings.FieldsSeq(string(b)) {
			pid, err := strconv.Atoi(field)
			if err != nil {
				return nil, false
			}
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids, true
}

// termMembers sends SIGTERM to the members of group pgid but its leader,
// for a stop that spares a supervisor (Launch.Supervisor). A process that
// joins the group meanwhile misses it; the group's SIGKILL after the
// grace does not.
func termMembers(pgid int) {
	for _, p := range findLive(func(p procInfo) bool { return p.pgrp == pgid && p.pid != pgid }) {
		_ = syscall.Kill(p.pid, syscall.SIGTERM)
	}
}

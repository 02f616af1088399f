package proc

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// StartTime is when process pid started, in clock ticks after boot
// (/proc/PID/stat's starttime): with the pid, it names one process, not
// another that was given the same pid later. ok is false when pid is
// gone (reaped) or cannot be read.
func StartTime(pid int) (start uint64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// pid (comm) state ppid ... starttime is the 22nd field, the 20th
	// after comm; comm may hold spaces and parens.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return 0, false
	}
	start, err = strconv.ParseUint(fields[19], 10, 64)
	return start, err == nil
}

// Gone reports whether the process that started at start with pid no
// longer runs: no such pid, a zombie (it holds nothing and runs nothing),
// or another process that got the pid since. known is false where that
// cannot be told.
func Gone(pid int, start uint64) (gone, known bool) {
	now, ok := StartTime(pid)
	if !ok || now != start {
		return true, true
	}
	p, ok := readStat(pid)
	return ok && p.state == 'Z', true
}

// RunningIn lists the processes named name (their comm, as ps shows it)
// whose working directory is dir or beneath it. known is false where
// that cannot be told. Processes of other users, whose directory cannot
// be read, are not listed.
func RunningIn(name, dir string) (pids []int, known bool) {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	for _, pid := range allPids() {
		comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if err != nil || strings.TrimSpace(string(comm)) != name {
			continue
		}
		if p, ok := readStat(pid); ok && p.state == 'Z' {
			continue
		}
		cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(dir, cwd); err == nil && filepath.IsLocal(rel) || cwd == dir {
			pids = append(pids, pid)
		}
	}
	return pids, true
}

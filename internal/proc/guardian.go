package proc

import (
	"bufio"
	"io"
	"strconv"
	"time"
)

// guardianGrace is how long the guardian waits, between SIGTERM and
// SIGKILL, for what ralph left when it died: enough for git to remove its
// lock files, short enough that an agent that ignores SIGTERM does not
// spend much longer.
const guardianGrace = time.Second

// Guardian is the work of a family's guardian process (FamilyOptions
// .GuardianArgs): it reads the groups ralph starts and ends from in (+PGID,
// -PGID, one a line) until EOF, which comes when ralph's process is gone,
// however it ended. Then it stops the groups still registered and every
// process that carries the family's mark (SIGTERM, a grace of a second,
// SIGKILL, until none is found) and returns what it stopped. The guardian
// process should ignore the terminal's signals, which are ralph's to
// handle, and exit once Guardian returns.
func Guardian(id string, in io.Reader) []Leftover {
	groups := map[int]bool{}
	r := bufio.NewReader(in)
	for {
		line, err := r.ReadString('\n')
		if len(line) > 1 && line[len(line)-1] == '\n' {
			if pgid, perr := strconv.Atoi(line[1 : len(line)-1]); perr == nil && pgid > 1 {
				switch line[0] {
				case '+':
					groups[pgid] = true
				case '-':
					delete(groups, pgid)
				}
			}
		}
		if err != nil {
			break // EOF, or an error that means the same: nobody writes any more
		}
	}
	pgids := make([]int, 0, len(groups))
	for g := range groups {
		pgids = append(pgids, g)
	}
	return stopFamily(id, pgids, guardianGrace)
}

// StopFamily stops what is left of the family with id: every process
// that carries its mark, and the process groups they lead, at once
// (SIGKILL). It is for a run that finds that the last one died without
// cleaning up (its guardian died with it): the mark, which holds the dead
// run's id, keeps it from touching a process that merely reuses a pid.
// It returns what it killed; off Linux, where marks cannot be read,
// nothing.
func StopFamily(id string) []Leftover {
	return stopFamily(id, nil, 0)
}

// Survivors lists the live processes that carry the mark of the family
// with id, for a status report; off Linux, none.
func Survivors(id string) []Leftover {
	var out []Leftover
	for _, p := range findMarked(id + ".") {
		out = append(out, Leftover{Pid: p.pid, Command: cmdline(p.pid)})
	}
	return out
}

package prompt

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/ralph-loop/ralph/internal/projectfs"
)

const (
	// DefaultProgressBytes bounds ReadProgress when maxBytes is 0 or less.
	DefaultProgressBytes = 16 << 10
	// RecentEntries is how many of the last progress entries ReadProgress
	// returns at most.
	RecentEntries = 3
)

// ReadProgress reads a progress log as snarktank's prompt has agents write
// it (progress.txt):
//
//	# Ralph Progress Log
//	Started: ...
//	---
//	## Codebase Patterns
//	- Use X for Y
//
//	## 2026-11-21 10:00 - US-001
//	- What was implemented
//	---
//	## 2026-11-21 11:00 - US-002
//	...
//
// patterns is the body of the Codebase Patterns section (a heading of any
// level, up to the next heading of the same or a higher level or a ---
// line). recent is the last RecentEntries entries, oldest first, joined by
// --- lines; entries are separated by --- lines or "## " headings, outside
// code fences. Together they stay within maxBytes (DefaultProgressBytes when
// 0 or less): patterns get at most half when there are entries, the newest
// entries the rest, and text that does not fit is cut on a line boundary
// and marked. A missing file is no progress, not an error.
//
// The agent writes the log, so it is read beneath root, the project: a
// log that leads out of it (a link to the user's SSH key) is an error
// wrapping projectfs.ErrOutside, and nothing of it reaches the prompt.
func ReadProgress(root projectfs.Root, name string, maxBytes int) (patterns, recent string, err error) {
	data, err := root.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("read progress: %w", err)
	}
	patterns, recent = progress(string(data), maxBytes)
	return patterns, recent, nil
}

// progress is ReadProgress on the file's text.
func progress(text string, maxBytes int) (patterns, recent string) {
	if maxBytes <= 0 {
		maxBytes = DefaultProgressBytes
	}
	p, entries := parseProgress(text)

	pCap := maxBytes
	if len(entries) > 0 {
		pCap = maxBytes / 2
	}
	patterns = trimBackLines(p, pCap)

	room := maxBytes - len(patterns)
	const sep = "\n---\n"
	var picked []string
	size := 0
	for i := len(entries) - 1; i >= 0 && len(picked) < RecentEntries; i-- {
		add := len(entries[i])
		if len(picked) > 0 {
			add += len(sep)
		}
		if size+add > room {
			if len(picked) == 0 {
				// Not even the newest entry fits: keep its beginning.
				if e := trimBackLines(entries[i], room); e != "" {
					picked = append(picked, e)
				}
			}
			break
		}
		picked = append(picked, entries[i])
		size += add
	}
	for i, j := 0, len(picked)-1; i < j; i, j = i+1, j-1 {
		picked[i], picked[j] = picked[j], picked[i]
	}
	return patterns, strings.Join(picked, sep)
}

// parseProgress splits a progress log into the Codebase Patterns body and
// the other entries, each trimmed, empty ones dropped, and the file's
// title block (a leading "# " heading block) left out.
func parseProgress(text string) (patterns string, entries []string) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var (
		cur        []string
		inFence    string // the fence that opened the current code block
		patLevel   int    // > 0 while inside the patterns section
		patLines   []string
		titleBlock = true // until the first block after a leading "# " one
	)
	flush := func() {
		e := strings.TrimSpace(strings.Join(cur, "\n"))
		cur = cur[:0]
		if e == "" {
			return
		}
		if titleBlock && strings.HasPrefix(e, "# ") {
			titleBlock = false
			return
		}
		titleBlock = false
		entries = append(entries, e)
	}
	for line := range strings.Lines(text) {
		line = strings.TrimSuffix(line, "\n")
		trim := strings.TrimSpace(line)
		if inFence != "" {
			if strings.HasPrefix(trim, inFence) && strings.Trim(trim, inFence[:1]) == "" {
				inFence = ""
			}
		} else if f := fenceOpen(trim); f != "" {
			inFence = f
		} else {
			level, title := heading(line)
			switch {
			case level > 0 && strings.EqualFold(title, "codebase patterns"):
				flush()
				patLevel = level
				continue
			case patLevel > 0 && (isRule(trim) || level > 0 && level <= patLevel):
				patLevel = 0
				if isRule(trim) {
					continue
				}
			case patLevel == 0 && isRule(trim):
				flush()
				continue
			case patLevel == 0 && level > 0 && level <= 2:
				flush()
			}
		}
		if patLevel > 0 {
			patLines = append(patLines, line)
		} else {
			cur = append(cur, line)
		}
	}
	flush()
	return strings.TrimSpace(strings.Join(patLines, "\n")), entries
}

// heading returns the level and text of a Markdown ATX heading line, or 0.
func heading(line string) (level int, title string) {
	for level < len(line) && line[level] == '#' {
		level++
	}
	if level == 0 || level > 6 || level == len(line) || line[level] != ' ' {
		return 0, ""
	}
	return level, strings.TrimSpace(strings.TrimRight(strings.TrimSpace(line[level:]), "#"))
}

// isRule reports whether a trimmed line is a --- separator.
func isRule(trim string) bool {
	return len(trim) >= 3 && strings.Trim(trim, "-") == ""
}

// fenceOpen returns the fence (``` or ~~~, three or more) a trimmed line
// opens, or "".
func fenceOpen(trim string) string {
	for _, c := range []string{"`", "~"} {
		n := len(trim) - len(strings.TrimLeft(trim, c))
		if n >= 3 {
			return strings.Repeat(c, n)
		}
	}
	return ""
}

// trimBackLines returns at most n bytes of s, keeping its beginning: it
// cuts after the last whole line that fits (inside the line when none does)
// and marks the cut.
func trimBackLines(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "\n[… trimmed …]"
	room := n - len(mark)
	if room <= 0 {
		return ""
	}
	if nl := strings.LastIndexByte(s[:room], '\n'); nl > 0 {
		return strings.TrimRight(s[:nl], " \t\n") + mark
	}
	if cut := trimBack(s, room); cut != "" {
		return cut + mark
	}
	return ""
}

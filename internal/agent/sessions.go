package agent

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The CLIs keep the sessions of every project in one store in their
// configuration directory, each in its own way; these tell which project
// a session file is of (Spec.OwnSession).

// sessionsIn returns an OwnSession for a CLI that keeps a project's
// sessions in a directory of its own under store: a file under store is
// a session of one of dirs when its first element below store is that
// directory's, as owns tells; a file elsewhere is not a session.
func sessionsIn(store string, owns func(root, dir, elem string) bool) func(root, rel string, _ io.Reader, dirs []string) bool {
	return func(root, rel string, _ io.Reader, dirs []string) bool {
		below, ok := strings.CutPrefix(rel, store+"/")
		if !ok {
			return true
		}
		elem, _, _ := strings.Cut(below, "/")
		for _, d := range dirs {
			if owns(root, d, elem) {
				return true
			}
		}
		return false
	}
}

// dashed is the name Qwen Code gives the directory of a project's
// sessions: the project's path with every character but an ASCII letter
// or digit made '-' (/home/u/my_app.v2 is -home-u-my-app-v2).
func dashed(_, dir, elem string) bool { return elem == dash(dir) }

// slashed is droid's: the project's path with each '/' made '-'
// (/home/u/my_app.v2 is -home-u-my_app.v2).
func slashed(_, dir, elem string) bool { return elem == strings.ReplaceAll(dir, "/", "-") }

// dash makes dir dashed as the CLIs do it in JavaScript, one '-' for
// each UTF-16 unit of a character that is not an ASCII letter or digit
// (two for a character beyond the Basic Multilingual Plane).
func dash(dir string) string {
	var b strings.Builder
	for _, r := range dir {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
			b.WriteRune(r)
		case r > 0xFFFF:
			b.WriteString("--")
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// claudeMaxName is the longest name Claude Code gives a project's
// directory whole: a longer one is cut there and followed by '-' and a
// hash of the path.
const claudeMaxName = 200

// claudeDashed is Claude Code's name for the directory of a project's
// sessions: dashed, or for a long path its first claudeMaxName
// characters, '-' and a hash ralph does not compute (any is taken).
func claudeDashed(_, dir, elem string) bool {
	d := dash(dir)
	if len(d) <= claudeMaxName {
		return elem == d
	}
	hash, ok := strings.CutPrefix(elem, d[:claudeMaxName]+"-")
	return ok && hash != "" && !strings.Contains(hash, "-")
}

// claudeSessionName and claudeSubagentName are the names of Claude
// Code's transcripts: projects/DIR/SESSION.jsonl, and a subagent's
// projects/DIR/SESSION/subagents/agent-ID.jsonl, SESSION a UUID.
var (
	claudeSessionName  = regexp.MustCompile(`^projects/([^/]+)/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$`)
	claudeSubagentName = regexp.MustCompile(`^projects/([^/]+)/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/subagents/agent-[0-9a-zA-Z_-]+\.jsonl$`)
)

// claudeSession is Claude Code's OwnSession: a file under projects/ is
// written back only when it has a transcript's exact shape, a name above
// in the directory of one of dirs (claudeDashed) whose first line is a
// transcript record, a JSON object with a type, of that session when it
// names one. Anything else the agent wrote there (a memory/notes.jsonl)
// is not a transcript.
func claudeSession(root, rel string, head io.Reader, dirs []string) bool {
	if !strings.HasPrefix(rel, "projects/") {
		return true
	}
	m := claudeSessionName.FindStringSubmatch(rel)
	if m == nil {
		m = claudeSubagentName.FindStringSubmatch(rel)
	}
	if m == nil || !slices.ContainsFunc(dirs, func(d string) bool { return claudeDashed(root, d, m[1]) }) {
		return false
	}
	var first struct {
		Type      string  `json:"type"`
		SessionID *string `json:"sessionId"`
	}
	line, err := bufio.NewReader(io.LimitReader(head, maxHeadLine)).ReadBytes('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	if json.Unmarshal(line, &first) != nil || first.Type == "" {
		return false
	}
	return first.SessionID == nil || *first.SessionID == m[2]
}

// maxHeadLine bounds the first line of a session file read to tell what
// it is.
const maxHeadLine = 1 << 20

// geminiSlug is Gemini CLI's name for the directory of a project's
// sessions (tmp/NAME/chats).
func geminiSlug(root, dir, elem string) bool {
	n := geminiName(root, dir)
	return n != "" && elem == n
}

// codexSession is an OwnSession for Codex, which keeps every project's
// sessions under sessions/YEAR/MONTH/DAY/: the first line of a session
// file, its session_meta record, names the directory it ran in.
func codexSession(_, rel string, head io.Reader, dirs []string) bool {
	if !strings.HasPrefix(rel, "sessions/") {
		return true
	}
	var first struct {
		Type    string `json:"type"`
		Payload struct {
			Cwd string `json:"cwd"`
		} `json:"payload"`
	}
	if err := json.NewDecoder(head).Decode(&first); err != nil || first.Type != "session_meta" {
		return false
	}
	return first.Payload.Cwd != "" && slices.Contains(dirs, first.Payload.Cwd)
}

// geminiName is the name Gemini CLI gives the directory of a project's
// sessions (tmp/NAME/chats): the one its registry, projects.json in
// root, has for the project; for a project it does not know yet, the
// first of the project's base name made a slug, then that slug followed
// by -1, -2, ..., that neither the registry nor an ownership marker
// (.project_root in tmp/NAME or history/NAME) gives another project, as
// the CLI picks it. "" when the registry cannot be read.
func geminiName(root, dir string) string {
	var reg struct {
		Projects map[string]string `json:"projects"`
	}
	switch b, err := os.ReadFile(filepath.Join(root, "projects.json")); {
	case os.IsNotExist(err):
	case err != nil:
		return ""
	default:
		if json.Unmarshal(b, &reg) != nil {
			return ""
		}
	}
	if s, ok := reg.Projects[dir]; ok {
		return s
	}
	taken := map[string]bool{}
	for _, s := range reg.Projects {
		taken[s] = true
	}
	base := geminiSlugify(filepath.Base(dir))
	for n := range 1000 {
		cand := base
		if n > 0 {
			cand += "-" + strconv.Itoa(n)
		}
		if taken[cand] {
			continue
		}
		owned := false
		for _, store := range []string{"tmp", "history"} {
			b, err := os.ReadFile(filepath.Join(root, store, cand, ".project_root"))
			if err == nil && strings.TrimSpace(string(b)) != dir || err != nil && !os.IsNotExist(err) {
				owned = true
			}
		}
		if !owned {
			return cand
		}
	}
	return ""
}

var notSlug = regexp.MustCompile(`[^a-z0-9]+`)

// geminiSlugify is Gemini CLI's slug of a name: lower case, each run of
// other characters than ASCII letters and digits one '-', none at either
// end; "project" when nothing is left.
func geminiSlugify(name string) string {
	s := strings.Trim(notSlug.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if s == "" {
		return "project"
	}
	return s
}

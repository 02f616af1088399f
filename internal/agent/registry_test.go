package agent

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/agenthome"
	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/egress"
)

// dialectNames are the command agent's output dialects, in order.
func dialectNames() []string {
	var names []string
	for _, d := range dialects() {
		names = append(names, d.name)
	}
	return names
}

// TestSpecs checks that every agent's facts are whole: a known CLI says
// how it is installed, where its login and its files are, and what it
// prints; the custom agent claims none of that.
func TestSpecs(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, s := range Specs() {
		t.Run(s.Name, func(t *testing.T) {
			if seen[s.Name] {
				t.Fatalf("%s is listed twice", s.Name)
			}
			seen[s.Name] = true
			a, err := s.New(Options{Command: "x"})
			if err != nil {
				t.Fatal(err)
			}
			if a.Name() != s.Name {
				t.Errorf("the adapter is called %q", a.Name())
			}
			if s.Custom {
				if s.Install != "" || s.Dialect != "" || s.ResolvesFileRefs ||
					len(s.ConfigDirs)+len(s.Hosts)+len(s.Scratch)+len(s.ReadOnly)+len(s.WriteBack) > 0 ||
					!cmp.Equal(s.Credentials, Credentials{}) {
					t.Errorf("a custom agent claims facts: %+v", s)
				}
				return
			}
			if s.Install == "" || s.Credentials.Login == "" || len(s.Credentials.EnvVars)+len(s.Credentials.Files) == 0 {
				t.Errorf("install or credentials missing: %+v", s)
			}
			if !slices.Contains(dialectNames(), s.Dialect) {
				t.Errorf("dialect %q is not one of %s", s.Dialect, dialectNames())
			}
			if len(s.ConfigDirs) == 0 {
				t.Error("no config dirs")
			}
			// A proxy that allows a list of hosts adds these: each must
			// read as an allow-hosts entry.
			if _, err := egress.Parse(s.Hosts); err != nil || len(s.Hosts) == 0 {
				t.Errorf("hosts %q: %v", s.Hosts, err)
			}
			for _, p := range slices.Concat(s.Credentials.Files, s.ConfigDirs) {
				env := []string{"HOME=/home/u", "XDG_DATA_HOME=/xdg/data", "XDG_CONFIG_HOME=/xdg/config",
					"XDG_CACHE_HOME=/xdg/cache", "XDG_STATE_HOME=/xdg/state", "CODEX_HOME=/codex", "CLAUDE_CONFIG_DIR=/claude"}
				if got := expandPath(p, env, "/home/u"); !strings.HasPrefix(got, "/") || got == "/home/u" {
					t.Errorf("%q is not a path under HOME or a variable (expands to %q)", p, got)
				}
			}
		})
	}
}

// TestSpecsCopyDeclarations checks what each agent declares of its
// per-run copy: every Scratch, ReadOnly and WriteBack path lies in its
// ConfigDirs and is written both ways a directory may be ($VAR and its
// default under HOME alike); a read-only directory is a plain path (the
// sandbox mounts it), holds nothing written back, and is not scratch;
// a credential file in ConfigDirs is written back (a refreshed login
// must outlive the copy), or the test says why not.
func TestSpecsCopyDeclarations(t *testing.T) {
	t.Parallel()
	// The credential files, by agent, that are not written back, and why.
	notWrittenBack := map[string]string{
		"copilot": "config.json holds the settings too (trusted folders, ...)",
		"cursor":  "~/.cursor/cli-config.json holds the permissions too",
		"kiro":    "data.sqlite3 is a database that holds the conversations and settings too",
	}
	for _, s := range Specs() {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			rels := map[string][]string{} // by config dir: its declarations, relative
			for _, p := range slices.Concat(s.Scratch, s.ReadOnly, s.WriteBack) {
				dir := slices.IndexFunc(s.ConfigDirs, func(d string) bool { return p == d || strings.HasPrefix(p, d+"/") })
				if dir < 0 {
					t.Errorf("%q is in none of the config dirs %q", p, s.ConfigDirs)
					continue
				}
				d := s.ConfigDirs[dir]
				rels[d] = append(rels[d], strings.TrimPrefix(strings.TrimPrefix(p, d), "/"))
			}
			// A directory that may be under a variable is declared next
			// to its default under HOME ("$CODEX_HOME", "~/.codex").
			for i := 0; i+1 < len(s.ConfigDirs); i++ {
				v, d := s.ConfigDirs[i], s.ConfigDirs[i+1]
				if strings.HasPrefix(v, "$") && strings.HasPrefix(d, "~/") {
					if diff := cmp.Diff(rels[v], rels[d]); diff != "" {
						t.Errorf("%s and %s are one directory, declared differently (-%s +%s):\n%s", v, d, v, d, diff)
					}
				}
			}
			for _, ro := range s.ReadOnly {
				if strings.ContainsAny(ro, "*?[") {
					t.Errorf("read-only %q is a pattern: the sandbox mounts a path", ro)
				}
				for _, wb := range s.WriteBack {
					if wb == ro || strings.HasPrefix(wb, ro+"/") {
						t.Errorf("%q is written back but lies in the read-only %q", wb, ro)
					}
				}
				if slices.Contains(s.Scratch, ro) {
					t.Errorf("%q is both scratch and read-only", ro)
				}
			}
			writtenBack := func(f string) bool {
				return slices.ContainsFunc(s.WriteBack, func(wb string) bool { return agenthome.Match(wb, f) })
			}
			var missing []string
			for _, f := range s.Credentials.Files {
				inConfig := slices.ContainsFunc(s.ConfigDirs, func(d string) bool { return strings.HasPrefix(f, d+"/") })
				if inConfig && !writtenBack(f) {
					missing = append(missing, f)
				}
			}
			if why, ok := notWrittenBack[s.Name]; ok {
				if len(missing) == 0 {
					t.Errorf("notWrittenBack says %q, but every credential file is written back", why)
				}
			} else if len(missing) > 0 {
				t.Errorf("credential files %q are not written back: a login the CLI refreshes in a run would be lost (or say why in notWrittenBack)", missing)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	if s, ok := Lookup("codex"); !ok || s.Name != "codex" {
		t.Errorf("Lookup(codex) = %+v, %v", s, ok)
	}
	if _, ok := Lookup("clod"); ok {
		t.Error("Lookup(clod) found an agent")
	}
	if ResolvesFileRefs("fake") {
		t.Error("an agent ralph does not know resolves @file references")
	}
	for _, s := range Specs() {
		if ResolvesFileRefs(s.Name) != s.ResolvesFileRefs {
			t.Errorf("ResolvesFileRefs(%s) is not its Spec's", s.Name)
		}
	}
}

// TestConfigMirrorsRegistry checks the lists config keeps by hand (it must
// not import this package) against the registry.
func TestConfigMirrorsRegistry(t *testing.T) {
	t.Parallel()
	if diff := cmp.Diff(dialectNames(), config.OutputNames()); diff != "" {
		t.Errorf("config.OutputNames() (-dialects +config):\n%s", diff)
	}
	var kinds []string
	for _, k := range patternKinds {
		kinds = append(kinds, string(k))
	}
	sorted := cmp.Transformer("sorted", func(s []string) []string { return slices.Sorted(slices.Values(s)) })
	if diff := cmp.Diff(kinds, config.ErrorKindNames(), sorted); diff != "" {
		t.Errorf("config.ErrorKindNames() (-agent +config):\n%s", diff)
	}
	if d := config.Defaults().Agent; !slices.Contains(Names(), d) {
		t.Errorf("the default agent %q is not known", d)
	}
	names := Names()
	want := "agent CLI to run: " + strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	for _, k := range config.Keys() {
		if k.Key == "agent" && k.Doc != want {
			t.Errorf("config's agent key says %q, want %q", k.Doc, want)
		}
	}
}

func TestTranscriptDecoder(t *testing.T) {
	t.Parallel()
	claudeLine := []byte(`{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s1"}`)
	for _, tt := range []struct {
		name, agent, output string
		head, line          []byte
		want                Result
	}{
		{"a known agent uses its adapter's", "kiro", "", []byte("\x1b[1mhello"), []byte("\x1b[1mhello\x1b[0m"),
			Result{FinalText: "hello", RawText: true}},
		{"the command agent its output", "command", "claude-stream-json", nil, claudeLine,
			Result{FinalText: "done", SessionID: "s1"}},
		{"the command agent, output unknown, JSON", "command", "xml", []byte("{"), claudeLine,
			Result{FinalText: "done", SessionID: "s1"}},
		{"an unknown agent, JSON", "demo", "", []byte(`{"type"`), claudeLine,
			Result{FinalText: "done", SessionID: "s1"}},
		{"an unknown agent, text", "demo", "", []byte("hello"), []byte("hello"),
			Result{FinalText: "hello", RawText: true}},
		{"an empty transcript", "", "", nil, []byte("hello"),
			Result{FinalText: "hello", RawText: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := TranscriptDecoder(tt.agent, tt.output, tt.head)
			d.Line(tt.line, func(Event) {})
			res := d.Finish()
			got := Result{FinalText: res.FinalText, SessionID: res.SessionID, RawText: res.RawText}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// docAgents returns the rows of docs/agents.md's agents table, by cell.
func docAgents(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile("../../docs/agents.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n| agent | argv | prompt | `@file` | decoded |\n|---|---|---|---|---|\n")
	if !ok {
		t.Fatal("docs/agents.md: no agents table (| agent | argv | prompt | `@file` | decoded |)")
	}
	var rows [][]string
	for line := range strings.Lines(table) {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), " | ")
		if len(cells) != 5 {
			t.Fatalf("docs/agents.md: agents table row with %d cells: %s", len(cells), line)
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	return rows
}

// documentedArgv writes an adapter's argv the way docs/agents.md does: the
// model flag in brackets, the prompt as PROMPT, a file in the scratch
// directory as FILE.
func documentedArgv(t *testing.T, a Adapter) string {
	t.Helper()
	req := Request{Prompt: "PROMPT", PromptFile: "PROMPT_FILE", ScratchDir: "/scratch"}
	plain, err := a.Invocation(req)
	if err != nil {
		t.Fatal(err)
	}
	req.Model = "M"
	withModel, err := a.Invocation(req)
	if err != nil {
		t.Fatal(err)
	}
	argv := withModel.Argv
	// The model flag and its value are the two words plain lacks.
	i := 0
	for i < len(plain.Argv) && plain.Argv[i] == argv[i] {
		i++
	}
	if len(argv) != len(plain.Argv)+2 || !slices.Equal(argv[i+2:], plain.Argv[i:]) {
		t.Fatalf("a model adds more than a flag and its value: %q, then %q", plain.Argv, argv)
	}
	var words []string
	for j := 0; j < len(argv); j++ {
		w := argv[j]
		switch {
		case j == i:
			w, j = "["+argv[j]+" "+argv[j+1]+"]", j+1
		case strings.HasPrefix(w, req.ScratchDir+"/"):
			w = "FILE"
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}

// TestDocsAgentsTable checks docs/agents.md's agents table against the
// registry: the same agents in the same order, each with its command
// line, the variables it sets, how the prompt is passed, whether @file
// references are left to the CLI, and the command agent's dialects.
func TestDocsAgentsTable(t *testing.T) {
	t.Parallel()
	codeSpanRE := regexp.MustCompile("`([^`]*)`")
	modelValueRE := regexp.MustCompile(`\[(\S+) [^\]]+\]`) // [-m PROVIDER/MODEL] reads as [-m M]
	rows := docAgents(t)
	var names []string
	for _, r := range rows {
		names = append(names, strings.Trim(r[0], "`"))
	}
	if diff := cmp.Diff(Names(), names); diff != "" {
		t.Fatalf("docs/agents.md agents table (-registry +docs):\n%s", diff)
	}
	for i, s := range Specs() {
		row := rows[i]
		opts := Options{Root: true}
		if s.Custom {
			opts.Command = "my-agent"
		}
		a, err := s.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		if !s.Custom {
			spans := codeSpanRE.FindAllStringSubmatch(row[1], -1)
			if len(spans) == 0 {
				t.Errorf("%s: argv cell holds no command line: %s", s.Name, row[1])
				continue
			}
			if got, want := modelValueRE.ReplaceAllString(spans[0][1], "[$1 M]"), documentedArgv(t, a); got != want {
				t.Errorf("%s: docs/agents.md says\n\t%s\nthe adapter runs\n\t%s", s.Name, got, want)
			}
			inv, _ := a.Invocation(Request{Prompt: "PROMPT"})
			for _, kv := range inv.EnvSet {
				if !strings.Contains(row[1], "`"+kv+"`") {
					t.Errorf("%s: docs/agents.md does not say it sets %s", s.Name, kv)
				}
			}
		}
		inv, _ := a.Invocation(Request{Prompt: "PROMPT"})
		if want := map[PromptMode]string{PromptStdin: "stdin", PromptArg: "argv"}[inv.Prompt]; !strings.HasPrefix(row[2], want) {
			t.Errorf("%s: docs/agents.md says the prompt goes in %q, the adapter passes it by %s", s.Name, row[2], inv.Prompt)
		}
		if want := map[bool]string{true: "read by the CLI", false: "rewritten to a path"}[s.ResolvesFileRefs]; row[3] != want {
			t.Errorf("%s: docs/agents.md says @file references are %q, want %q", s.Name, row[3], want)
		}
		if s.Custom {
			var got []string
			for _, m := range codeSpanRE.FindAllStringSubmatch(row[4], -1)[1:] {
				got = append(got, m[1])
			}
			if diff := cmp.Diff(dialectNames(), got); diff != "" {
				t.Errorf("%s: docs/agents.md's output dialects (-agent +docs):\n%s", s.Name, diff)
			}
		} else if s.Dialect == "claude-stream-json" && s.Name != "claude" && !strings.Contains(row[4], "Claude-shaped") {
			t.Errorf("%s: docs/agents.md does not say its output is Claude-shaped: %s", s.Name, row[4])
		}
	}
}

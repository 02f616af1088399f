package guard

import (
	"regexp"
	"strings"
)

// optionRows are the rows Options add in front of the table: the plan
// file, ralph's configuration, and what the gate commands run.
func optionRows(o Options) []row {
	var rows []row
	if p := cleanPath(o.PlanFile); p != "" {
		rows = append(rows, row{files: fileSet{"/" + p}, on: onChanged, rule: RulePlanChanged,
			why: "the plan file changed: ralph owns it", tool: "plan"})
	}
	cfg := o.ConfigFiles
	if cfg == nil {
		cfg = []string{"ralph.toml"}
	}
	if set := rooted(cfg); len(set) > 0 {
		rows = append(rows, row{files: set, on: onChanged, rule: RuleGateChanged,
			why: "ralph's configuration changed: it holds the gate commands", tool: "ralph.toml"})
	}
	files, targets, scripts := gateRefs(o.GateCommands)
	if set := rooted(files); len(set) > 0 {
		rows = append(rows, row{files: set, on: onChanged, rule: RuleGateChanged,
			why: "a file a gate command runs changed", tool: "gate"})
	}
	if len(targets) > 0 {
		rows = append(rows, row{files: fileSet{"Makefile", "makefile", "GNUmakefile", "*.mk"}, on: onChanged,
			scope: inTarget, re: regexp.MustCompile(`^(?:` + quoteAll(targets) + `)$`), rule: RuleGateChanged,
			why: "a Makefile target a gate command runs changed", tool: "Makefile"})
	}
	if len(scripts) > 0 {
		rows = append(rows, row{files: fileSet{"package.json"}, on: onChanged,
			scope: withKey, re: regexp.MustCompile(`"(?:pre|post)?(?:` + quoteAll(scripts) + `)"\s*:`), rule: RuleGateChanged,
			why: "a package.json script a gate command runs changed", tool: "package.json"})
	}
	return rows
}

func rooted(paths []string) fileSet {
	var set fileSet
	for _, p := range paths {
		if p = cleanPath(p); p != "" && !strings.HasPrefix(p, "../") && !strings.HasPrefix(p, "/") {
			set = append(set, "/"+p)
		}
	}
	return set
}

func quoteAll(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = regexp.QuoteMeta(w)
	}
	return strings.Join(q, "|")
}

// gateRefs reads gate commands for what they run: files named on the
// command line (scripts, config files), make targets, and package.json
// scripts (npm test, npm run X, yarn X, pnpm X, bun run X). It reads shell
// words, not the shell: quotes are dropped, and each command between
// ; && || | is read on its own.
func gateRefs(cmds []string) (files, targets, scripts []string) {
	for _, cmd := range cmds {
		for _, seg := range shellSep.Split(cmd, -1) {
			words := strings.Fields(seg)
			for i := range words {
				words[i] = strings.Trim(words[i], `"'`)
			}
			for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
				words = words[1:] // VAR=value before the program
			}
			if len(words) == 0 {
				continue
			}
			for _, w := range words {
				if _, v, ok := strings.Cut(w, "="); ok && strings.HasPrefix(w, "-") {
					if !strings.ContainsAny(v, "./") {
						continue // --max-warnings=0: a value, not a file
					}
					w = v
				}
				if looksLikeFile(w) {
					files = append(files, w)
				}
			}
			prog, args := baseName(words[0]), words[1:]
			switch prog {
			case "make", "gmake":
				targets = append(targets, makeTargets(args)...)
			case "npm", "pnpm", "yarn", "bun":
				if s := packageScript(prog, args); s != "" {
					scripts = append(scripts, s)
				}
			case "just":
				files = append(files, "justfile", "Justfile", ".justfile")
			case "task":
				files = append(files, "Taskfile.yml", "Taskfile.yaml")
			}
		}
	}
	return files, targets, scripts
}

var shellSep = regexp.MustCompile(`&&|\|\||[;|&()\n]`)

// looksLikeFile is a word that could be a file in the repository: no
// flag, no shell expansion or glob, not outside it.
func looksLikeFile(w string) bool {
	if w == "" || strings.HasPrefix(w, "-") || strings.ContainsAny(w, "*?[]{}$~`<>=") {
		return false
	}
	p := cleanPath(w)
	return p != "" && p != ".." && !strings.HasPrefix(p, "../") && !strings.HasPrefix(p, "/") && !strings.HasSuffix(w, "/")
}

// makeTargets are the targets on a make command line (flags, their values
// and VAR=value assignments left out).
func makeTargets(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-C" || a == "-f" || a == "-j" || a == "-o" || a == "-W" || a == "-I" || a == "--directory" || a == "--file":
			i++ // its value
		case strings.HasPrefix(a, "-"), strings.Contains(a, "="):
		default:
			out = append(out, a)
		}
	}
	return out
}

// packageScript is the package.json script an npm, pnpm, yarn or bun
// command runs, or "".
func packageScript(prog string, args []string) string {
	var words []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			words = append(words, a)
		}
	}
	if len(words) == 0 {
		return ""
	}
	switch words[0] {
	case "run", "run-script":
		if len(words) > 1 {
			return words[1]
		}
		return ""
	case "test", "t", "tst":
		if prog == "bun" {
			return "" // bun's own test runner, not a script
		}
		return "test"
	}
	if prog == "yarn" || prog == "pnpm" {
		switch words[0] {
		case "install", "add", "remove", "exec", "dlx", "x", "why", "up", "upgrade":
			return ""
		}
		return words[0] // yarn lint, pnpm lint
	}
	return ""
}

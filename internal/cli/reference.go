package cli

import (
	"bytes"
	"embed"
	"fmt"
	"slices"
	"strings"
	"text/template"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ralph-loop/ralph/internal/config"
)

// The reference pages docs/cli.md and docs/configuration.md are generated
// from the command tree and config's key table, so that they cannot drift
// from the code: `go generate ./internal/cli` (or `make docs`) writes them,
// and TestReferencePagesUpToDate fails when the committed ones differ.
// Their prose is in reference/*.md.tmpl; the tables come from here.
//
//go:generate go run ../../tools/gendocs -docs ../../docs

//go:embed reference/*.md.tmpl
var referenceTemplates embed.FS

// Root is ralph's command tree, for the tools that read it: the reference
// pages, man pages and completion scripts of a release (tools/gendocs).
func Root() *cobra.Command { return newRootCmd(defaultFactory()) }

// ReferencePages returns the generated pages of docs/ by file name.
func ReferencePages() (map[string][]byte, error) {
	root := Root()
	used := map[string]bool{}
	funcs := template.FuncMap{
		"commands":    func() string { return commandsReference(root) },
		"globalFlags": func() string { return flagTable(root.PersistentFlags()) },
		"keys": func(section string) (string, error) {
			return keyTable(section, used)
		},
	}
	pages := map[string][]byte{}
	for _, name := range []string{"cli.md", "configuration.md"} {
		t, err := template.New(name+".tmpl").Funcs(funcs).ParseFS(referenceTemplates, "reference/"+name+".tmpl")
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		if err := t.Execute(&b, nil); err != nil {
			return nil, err
		}
		pages[name] = b.Bytes()
	}
	for _, k := range config.Keys() {
		// agents and prices are tables of tables, in the template's prose.
		if !used[k.Key] && k.Type != "table" {
			return nil, fmt.Errorf("configuration.md.tmpl: key %s is in no table (add {{keys %q}})", k.Key, section(k.Key))
		}
	}
	return pages, nil
}

// section is the table a key is in: "review" for review.when, "" for a
// top-level key.
func section(key string) string {
	s, _, ok := strings.Cut(key, ".")
	if !ok {
		return ""
	}
	return s
}

// keyTable is the table of one section's keys: a key's name, type, default
// (as TOML), environment variable and meaning.
func keyTable(sect string, used map[string]bool) (string, error) {
	var b strings.Builder
	b.WriteString("| key | type | default | environment | meaning |\n|---|---|---|---|---|\n")
	n := 0
	for _, k := range config.Keys() {
		if section(k.Key) != sect || k.Type == "table" {
			continue
		}
		used[k.Key] = true
		n++
		def := ""
		if !slices.Contains([]string{`""`, "[]", "{}"}, k.Default) {
			def = code(k.Default)
		}
		doc := strings.TrimPrefix(k.Doc, "["+sect+"] ")
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", code(k.Key), k.Type, tableCell(def), code(k.Env), tableCell(doc))
	}
	if n == 0 {
		return "", fmt.Errorf("configuration.md.tmpl: no keys in section %q", sect)
	}
	return b.String(), nil
}

// commandsReference is every command, depth first in the order of --help:
// what it does, its usage, its help text and its own flags.
func commandsReference(root *cobra.Command) string {
	var b strings.Builder
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if !sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand() {
				continue
			}
			path := sub.CommandPath()
			fmt.Fprintf(&b, "## `%s`\n\n%s.\n\n```text\n%s\n```\n\n", path, sub.Short, sub.UseLine())
			if sub.Long != "" {
				fmt.Fprintf(&b, "```text\n%s\n```\n\n", strings.TrimSpace(sub.Long))
			}
			if fl := sub.NonInheritedFlags(); fl.HasAvailableFlags() && !onlyHelp(fl) {
				fmt.Fprintf(&b, "### `%s` flags\n\n%s\n", path, flagTable(fl))
			}
			walk(sub)
		}
	}
	walk(root)
	return strings.TrimSuffix(b.String(), "\n")
}

// onlyHelp says whether a command's only flag is --help.
func onlyHelp(fl *pflag.FlagSet) bool {
	only := true
	fl.VisitAll(func(f *pflag.Flag) { only = only && f.Name == "help" })
	return only
}

// flagTable is a table of flags, one row each: `-n,
// --max-iterations int`, the default, the meaning.
func flagTable(fl *pflag.FlagSet) string {
	var b strings.Builder
	b.WriteString("| flag | default | meaning |\n|---|---|---|\n")
	fl.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		name, usage := pflag.UnquoteUsage(f)
		flag := "--" + f.Name
		if f.Shorthand != "" {
			flag = "-" + f.Shorthand + ", " + flag
		}
		switch {
		case name != "" && f.NoOptDefVal != "":
			flag += "[=" + name + "]" // the value is optional: --serve, --remote
		case name != "":
			flag += " " + name
		}
		def := ""
		if !slices.Contains([]string{"", "0", "false", "[]", "0s"}, f.DefValue) {
			def = code(f.DefValue)
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", tableCell(code(flag)), tableCell(def), tableCell(usage))
	})
	return b.String()
}

// code puts s in backquotes, doubled when s holds one.
func code(s string) string {
	if strings.Contains(s, "`") {
		return "`` " + s + " ``"
	}
	return "`" + s + "`"
}

// tableCell escapes what would end a table cell.
func tableCell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

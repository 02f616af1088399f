// Command gendocs writes what is generated from ralph's commands and key
// table: the reference pages of docs/ (-docs DIR), and, for a release's
// archives and packages, man pages (-man DIR) and shell completion scripts
// (-completions DIR). `make docs` and goreleaser's before hooks run it.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra/doc"

	"github.com/ralph-loop/ralph/internal/cli"
)

func main() {
	docs := flag.String("docs", "", "write the reference pages (cli.md, configuration.md) to `DIR`")
	man := flag.String("man", "", "write man pages to `DIR`")
	completions := flag.String("completions", "", "write bash, zsh and fish completion scripts to `DIR`")
	flag.Parse()
	if err := run(*docs, *man, *completions); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

func run(docs, man, completions string) error {
	if docs != "" {
		pages, err := cli.ReferencePages()
		if err != nil {
			return err
		}
		for name, b := range pages {
			if err := os.WriteFile(filepath.Join(docs, name), b, 0o644); err != nil {
				return err
			}
		}
	}
	if man != "" {
		if err := os.MkdirAll(man, 0o755); err != nil {
			return err
		}
		root := cli.Root()
		root.DisableAutoGenTag = true // no date: two builds of one commit are alike
		header := &doc.GenManHeader{Title: "RALPH", Section: "1", Source: "ralph", Manual: "ralph manual"}
		if err := doc.GenManTree(root, header, man); err != nil {
			return err
		}
	}
	if completions != "" {
		return writeCompletions(completions)
	}
	return nil
}

// writeCompletions writes ralph.bash, _ralph (zsh) and ralph.fish, the
// names the shells look for.
func writeCompletions(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root := cli.Root()
	for name, gen := range map[string]func(*os.File) error{
		"ralph.bash": func(f *os.File) error { return root.GenBashCompletionV2(f, true) },
		"_ralph":     func(f *os.File) error { return root.GenZshCompletion(f) },
		"ralph.fish": func(f *os.File) error { return root.GenFishCompletion(f, true) },
	} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		err = gen(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

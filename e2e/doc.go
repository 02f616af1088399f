// Package e2e drives full `ralph run` loops with the real agent CLIs
// (Claude Code, Codex, Gemini CLI, OpenCode, Qwen Code, droid, Copilot)
// against the fake model server of internal/fakemodel on 127.0.0.1.
//
// The tests run only when RALPH_E2E_TOOLS names the directory the CLIs are
// installed in (e2e/agents, where .ci/agents.sh runs npm ci, or its
// node_modules/.bin); otherwise they skip, so `go test ./...` needs no
// CLIs and no network. Each run gets its own HOME and TMPDIR, a clean
// environment that points the CLI at the fake server and turns off its
// update checks and telemetry, and a deadline.
//
// TestReadme types README.md's "Five minutes with your own project" as it
// stands, read from the README, with the real Claude Code in ralph's
// default sandbox; TestReadmeCommands, which needs no CLI, fails when the
// README shows a command the journey does not know.
//
// The ralph serve tests (serve_*_test.go) drive the page in a real
// Chromium, headless, and measure the server's memory; they run only when
// RALPH_E2E_CHROMIUM names the browser, and need no agent CLI.
package e2e

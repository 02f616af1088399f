//go:build windows

// Command ralph does not build for Windows: it stops an agent by signalling
// its whole process group (SIGTERM, then SIGKILL) and sandboxes it with
// bubblewrap or sandbox-exec; Windows has neither. Run ralph in WSL 2, where
// it is Linux. The build fails here, with the reason as the error, rather
// than deep in internal/proc.
package main

func main() {
	ralph_does_not_build_for_Windows_it_needs_process_groups_and_a_sandbox_use_WSL_2_see_docs_platforms_md()
}

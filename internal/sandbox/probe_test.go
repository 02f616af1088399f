package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenRefusesABwrapTheAgentCanWrite: a bwrap found only in the
// project (a virtualenv's bin/ on PATH) is never the sandbox: it would
// run every child unconfined. The error says where it is.
func TestOpenRefusesABwrapTheAgentCanWrite(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	bin := filepath.Join(project, ".venv", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "bwrap"), []byte("#!/bin/sh\nexec \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Open(t.Context(), KindBwrap, Policy{Project: project}, []string{"PATH=" + bin})
	var se *Error
	if !errors.As(err, &se) || !strings.Contains(se.Reason, "which the agent can write") {
		t.Fatalf("Open with bwrap only in the project = %v; want an *Error saying the agent can write it", err)
	}
}

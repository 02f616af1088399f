package projectfs

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// TestKernelRefuses: where the kernel has openat2, it is what refuses a
// link out (EXDEV), not the walk behind it.
func TestKernelRefuses(t *testing.T) {
	t.Parallel()
	project, _ := tree(t)
	_, err := openat2(project, "out", unix.O_RDONLY, 0)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		t.Skipf("no openat2 here: %v", err)
	}
	if !errors.Is(err, unix.EXDEV) {
		t.Fatalf("openat2(out) = %v, want EXDEV", err)
	}
	f, err := openat2(project, "sub/uplink", unix.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("openat2(sub/uplink) = %v, want the plan", err)
	}
	_ = f.Close()
}

package session

import "testing"

func TestBadBranchName(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		bad  bool
	}{
		{"ralph/greeter", false},
		{"feature/US-001_x.y", false},
		{"@", true},
		{"-x", true},
		{"a//b", true},
		{"a/", true},
		{"/a", true},
		{"a.", true},
		{"a..b", true},
		{"a@{b", true},
		{"a b", true},
		{"a~1", true},
		{"a^", true},
		{"a:b", true},
		{"a?", true},
		{"a*", true},
		{"a[b", true},
		{`a\b`, true},
		{"a\x01", true},
		{"a/.hidden", true},
		{"a/b.lock", true},
	} {
		if got := badBranchName(tt.name) != ""; got != tt.bad {
			t.Errorf("badBranchName(%q) = %q, want bad %v", tt.name, badBranchName(tt.name), tt.bad)
		}
	}
}

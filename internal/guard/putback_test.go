package guard

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPutBack(t *testing.T) {
	t.Parallel()
	const makefileBefore = "build:\n\tgo build ./...\n\ntest:\n\tgo test ./...\n"
	const tomlBefore = "guard = \"strict\"\n[gates]\ncommands = [\"make test\"]\ntimeout = \"5m\"\n"
	tests := []struct {
		name       string
		file       string
		before     string
		hadBefore  bool
		after      string
		hadAfter   bool
		findings   []Finding
		want       string
		wantRemove bool
	}{
		{
			name: "the flagged hunk goes back, the other stays", file: "Makefile",
			before: makefileBefore, hadBefore: true, hadAfter: true,
			after:    "build:\n\tgo build -v ./...\n\ntest:\n\ttrue # tampered-gate\n",
			findings: []Finding{{Line: 5, Text: "+true # tampered-gate"}},
			want:     "build:\n\tgo build -v ./...\n\ntest:\n\tgo test ./...\n",
		},
		{
			name: "a removal goes back", file: "calc_test.go", hadBefore: true, hadAfter: true,
			before:   "func TestA(t *testing.T) {\n\tif f() != 1 {\n\t\tt.Fatal(1)\n\t}\n}\n",
			after:    "func TestA(t *testing.T) {\n\tif f() != 1 {\n\t}\n}\n// new helper\n",
			findings: []Finding{{Line: 3, Removed: true}},
			want:     "func TestA(t *testing.T) {\n\tif f() != 1 {\n\t\tt.Fatal(1)\n\t}\n}\n// new helper\n",
		},
		{
			name: "TOML: only the flagged value of a run of changed values", file: "ralph.toml",
			before: tomlBefore, hadBefore: true, hadAfter: true,
			after:    "guard = \"strict\"\n[gates]\ncommands = [\"true # tampered-gate\"]\ntimeout = \"10m\"\n",
			findings: []Finding{{Line: 3, Text: "+commands = [\"true # tampered-gate\"]"}},
			want:     "guard = \"strict\"\n[gates]\ncommands = [\"make test\"]\ntimeout = \"10m\"\n",
		},
		{
			name: "JSON: the flagged script back, the other kept", file: "package.json", hadBefore: true, hadAfter: true,
			before:   "{\n  \"scripts\": {\n    \"test\": \"jest\",\n    \"build\": \"tsc\"\n  }\n}\n",
			after:    "{\n  \"scripts\": {\n    \"test\": \"true\",\n    \"build\": \"tsc -p .\"\n  }\n}\n",
			findings: []Finding{{Line: 3}},
			want:     "{\n  \"scripts\": {\n    \"test\": \"jest\",\n    \"build\": \"tsc -p .\"\n  }\n}\n",
		},
		{
			name: "a whole-file finding: the file as it was", file: "calc.test.js", hadBefore: true, hadAfter: false,
			before: "test('adds')\n", findings: []Finding{{Line: 0}},
			want: "test('adds')\n",
		},
		{
			name: "a file the attempt made is removed", file: ".github/workflows/x.yml", hadAfter: true,
			after: "on: push\n", findings: []Finding{{Line: 1}}, wantRemove: true,
		},
		{
			name: "no final newline", file: "Makefile", hadBefore: true, hadAfter: true,
			before: "test:\n\tgo test", after: "test:\n\ttrue", findings: []Finding{{Line: 2}},
			want: "test:\n\tgo test",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, remove := PutBack(tt.file, []byte(tt.before), tt.hadBefore, []byte(tt.after), tt.hadAfter, tt.findings)
			if remove != tt.wantRemove {
				t.Fatalf("remove = %v, want %v", remove, tt.wantRemove)
			}
			if d := cmp.Diff(tt.want, string(got)); d != "" && !remove {
				t.Errorf("content (-want +got):\n%s", d)
			}
		})
	}
}

func FuzzPutBack(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nB\nc\nd\n", 2, false)
	f.Add("{\n\"x\": 1\n}", "{\n\"x\": 2\n}", 2, true)
	f.Fuzz(func(t *testing.T, before, after string, line int, removed bool) {
		got, remove := PutBack("f.toml", []byte(before), true, []byte(after), true, []Finding{{Line: line, Removed: removed}})
		if remove {
			t.Fatal("a file that was there is removed")
		}
		// A whole-file finding gives before; none that hits a change,
		// after.
		if line == 0 && string(got) != before {
			t.Fatalf("whole-file finding: got %q, want %q", got, before)
		}
		none, _ := PutBack("f", []byte(before), true, []byte(after), true, []Finding{{Line: 1 << 30}})
		if string(none) != after {
			t.Fatalf("nothing flagged: got %q, want %q", none, after)
		}
	})
}

package task

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzReadPRD checks that reading never panics, and that on anything that
// reads, setting each task done and open yields a file that reads again with
// exactly that task changed.
func FuzzReadPRD(f *testing.F) {
	for _, name := range []string{"ralph-tui-sample-prd.json", "ralph-tui-test-prd.json", "snarktank-prd.json.example"} {
		data := readFixture(f, name)
		f.Add(data)
		for _, l := range layouts {
			f.Add(l.fn(data))
		}
	}
	f.Add([]byte(`{"userStories":[{"id":"A"},{"id":"B","passes":null,"dependsOn":["A"]}]}`))
	f.Add([]byte(`{"userStories":[{"id":"A","passes":"true"}]}`))
	f.Add([]byte(`[{"passes": false}]`))

	f.Fuzz(func(t *testing.T, data []byte) {
		before, err := prdFormat{}.parse("prd.json", data)
		if err != nil {
			return
		}
		for _, task := range before.Tasks {
			for _, st := range []Status{StatusDone, StatusOpen, StatusFailed} {
				out, err := prdFormat{}.setStatus("prd.json", data, task.ID, st)
				if err != nil {
					t.Fatalf("setStatus(%q, %s): %v", task.ID, st, err)
				}
				after, err := prdFormat{}.parse("prd.json", out)
				if err != nil {
					t.Fatalf("setStatus(%q, %s) wrote an unreadable file: %v\n%s", task.ID, st, err, out)
				}
				want := clonePlan(before)
				if st != StatusFailed {
					setTask(want, task.ID, st)
				} else if !bytes.Equal(out, data) {
					t.Fatalf("setStatus(%q, failed) changed the file", task.ID)
				}
				if diff := cmp.Diff(want, after, ignoreLine); diff != "" {
					t.Fatalf("setStatus(%q, %s) (-want +got):\n%s", task.ID, st, diff)
				}
				if task.Status == st && !bytes.Equal(out, data) {
					t.Fatalf("setStatus(%q, %s) changed a file that already said so", task.ID, st)
				}
			}
		}
	})
}

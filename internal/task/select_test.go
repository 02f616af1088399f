package task

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// plan, openTask and with build plans tersely.
func plan(tasks ...Task) *Plan { return &Plan{Tasks: tasks} }

func openTask(id string, prio int, deps ...string) Task {
	return Task{ID: id, Priority: prio, DependsOn: deps, Status: StatusOpen}
}

func with(t Task, st Status) Task { t.Status = st; return t }

func skipIDs(ids ...string) func(Task) bool {
	return func(t Task) bool { return slices.Contains(ids, t.ID) }
}

func TestNext(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		plan *Plan
		skip func(Task) bool
		want string // "" for none
	}{
		{"lowest priority first", plan(openTask("A", 3), openTask("B", 1), openTask("C", 2)), nil, "B"},
		{"file order breaks ties", plan(openTask("A", 2), openTask("B", 1), openTask("C", 1)), nil, "B"},
		{"unset priority sorts last", plan(openTask("A", 0), openTask("B", 9)), nil, "B"},
		{"all unset: file order", plan(openTask("A", 0), openTask("B", 0)), nil, "A"},
		{"negative before positive", plan(openTask("A", 1), openTask("B", -1)), nil, "B"},
		{"done and failed are not open", plan(with(openTask("A", 1), StatusDone), with(openTask("B", 1), StatusFailed), openTask("C", 5)), nil, "C"},
		{"dependsOn must be done", plan(openTask("A", 2), openTask("B", 1, "A")), nil, "A"},
		{"done dependency releases", plan(with(openTask("A", 2), StatusDone), openTask("B", 1, "A"), openTask("C", 0)), nil, "B"},
		{"failed dependency blocks", plan(with(openTask("A", 2), StatusFailed), openTask("B", 1, "A")), nil, ""},
		{"unknown dependency blocks", plan(openTask("B", 1, "Z")), nil, ""},
		{"skip rejects", plan(openTask("A", 1), openTask("B", 2)), skipIDs("A"), "B"},
		{"skipped dependency still blocks", plan(openTask("A", 1), openTask("B", 2, "A")), skipIDs("A"), ""},
		{"nothing open", plan(with(openTask("A", 1), StatusDone)), nil, ""},
		{"empty plan", plan(), nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := tt.plan.Next(tt.skip)
			if ok != (tt.want != "") || got.ID != tt.want {
				t.Errorf("Next() = %q, %v; want %q", got.ID, ok, tt.want)
			}
		})
	}
}

// Next picks what the plain definition picks (lowest priority among the
// open tasks whose dependencies are done and that skip keeps, first in file
// order), on random plans big enough that dependency lookups go past the
// linear searches to the index, duplicate ids included.
func TestNextMatchesDefinition(t *testing.T) {
	t.Parallel()
	next := func(p *Plan, skip func(Task) bool) (Task, bool) {
		status := map[string]Status{}
		for _, t := range slices.Backward(p.Tasks) {
			status[t.ID] = t.Status // the first of duplicates wins
		}
		best := -1
		for i, t := range p.Tasks {
			ok := t.Status == StatusOpen && !skip(t)
			for _, d := range t.DependsOn {
				ok = ok && status[d] == StatusDone
			}
			if ok && (best < 0 || priorityKey(t.Priority) < priorityKey(p.Tasks[best].Priority)) {
				best = i
			}
		}
		if best < 0 {
			return Task{}, false
		}
		return p.Tasks[best], true
	}
	rng := rand.New(rand.NewPCG(1, 2))
	statuses := []Status{StatusOpen, StatusOpen, StatusDone, StatusFailed}
	for round := range 500 {
		n := 1 + rng.IntN(40)
		id := func() string { return fmt.Sprintf("T%d", rng.IntN(n+2)) } // some name no task
		p := &Plan{}
		for range n {
			tk := Task{ID: id(), Priority: rng.IntN(5) - 1, Status: statuses[rng.IntN(len(statuses))]}
			for range rng.IntN(4) {
				tk.DependsOn = append(tk.DependsOn, id())
			}
			p.Tasks = append(p.Tasks, tk)
		}
		skipped := id()
		skip := func(t Task) bool { return t.ID == skipped }
		want, wantOK := next(p, skip)
		got, ok := p.Next(skip)
		if ok != wantOK || !cmp.Equal(got, want) {
			t.Fatalf("round %d: Next() = %v, %v; want %v, %v\nplan: %+v", round, got, ok, want, wantOK, p.Tasks)
		}
	}
}

func TestNextOnFixture(t *testing.T) {
	t.Parallel()
	p := clonePlan(fixturePlans["ralph-tui-test-prd.json"])
	var order []string
	for {
		next, ok := p.Next(nil)
		if !ok {
			break
		}
		order = append(order, next.ID)
		setTask(p, next.ID, StatusDone)
	}
	// TEST-003 and TEST-004 share priority 2 (TEST-004's dependencies are
	// done by then): file order decides.
	want := []string{"TEST-001", "TEST-002", "TEST-003", "TEST-004", "TEST-005"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestBlocked(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		plan        *Plan
		failed      func(Task) bool
		wantBlocked []string
	}{
		{"all runnable", plan(openTask("A", 1), openTask("B", 2, "A")), nil, nil},
		{"done plan", plan(with(openTask("A", 1), StatusDone)), nil, nil},
		{"empty plan", plan(), nil, nil},
		{
			name:        "failed in the plan blocks its dependents, transitively",
			plan:        plan(with(openTask("A", 1), StatusFailed), openTask("B", 1, "A"), openTask("C", 1, "B"), openTask("D", 1)),
			wantBlocked: []string{"B", "C"},
		},
		{
			name:        "only failed and blocked left",
			plan:        plan(with(openTask("A", 1), StatusFailed), openTask("B", 1, "A"), with(openTask("C", 1), StatusDone)),
			wantBlocked: []string{"B"},
		},
		{
			name:        "failed in the runner's state (prd.json)",
			plan:        plan(openTask("A", 1), openTask("B", 1, "A"), with(openTask("C", 1), StatusDone)),
			failed:      skipIDs("A"),
			wantBlocked: []string{"B"},
		},
		{
			name:   "every open task failed",
			plan:   plan(openTask("A", 1), openTask("B", 1)),
			failed: skipIDs("A", "B"),
		},
		{
			name:        "a cycle and a missing id never run",
			plan:        plan(openTask("A", 1, "B"), openTask("B", 1, "A"), openTask("C", 1, "Z"), openTask("D", 1)),
			wantBlocked: []string{"A", "B", "C"},
		},
		{
			name: "waiting on an open task is not blocked",
			plan: plan(openTask("A", 1), openTask("B", 1, "A")),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, b := range tt.plan.Blocked(tt.failed) {
				got = append(got, b.ID)
			}
			if diff := cmp.Diff(tt.wantBlocked, got); diff != "" {
				t.Errorf("Blocked (-want +got):\n%s", diff)
			}
		})
	}
}

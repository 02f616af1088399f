package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"slices"
	"time"
)

// A plan's Validation Commands are gates: ralph runs them to decide that
// a task is done, and the agent can edit the plan. So the commands in
// force are not the file's but the ones the store records for the plan:
// the file's when ralph first reads it, none for a plan `ralph plan`'s
// agent wrote, and from then on only what `ralph trust PLAN` records. A
// run reads them once, at its start.

// Gates is the record of a plan's Validation Commands in force.
type Gates struct {
	Path string `json:"path"`
	// Commands are the commands in force; none for a plan whose own the
	// user has not approved (one `ralph plan`'s agent wrote).
	Commands   []string  `json:"commands"`
	RecordedAt time.Time `json:"recorded_at"`
	// By says who put them in force: "first read", "ralph plan",
	// "ralph trust".
	By string `json:"by"`
	// Routes are the agents and models the plan's tasks name, in force
	// as Commands are (routes.go); nil in a record of an older ralph,
	// which recorded none.
	Routes map[string]Route `json:"routes"`
}

// Who put a plan's commands in force.
const (
	ByFirstRead = "first read"
	ByPlan      = "ralph plan"
	ByTrust     = "ralph trust"
)

// gatesFile is where the Validation Commands of the plan key are kept:
// beside the approvals, under a name of their own.
func (s Store) gatesFile(key string) string {
	h := sha256.Sum256([]byte("validation commands\x00" + key))
	return filepath.Join(s.Dir, "gates-"+hex.EncodeToString(h[:16])+".json")
}

// PlanGates returns the Validation Commands in force for the plan at
// path; false when none were recorded.
func (s Store) PlanGates(path string) (Gates, bool, error) {
	if s.Dir == "" {
		return Gates{}, false, nil
	}
	key, err := Key(path)
	if err != nil {
		return Gates{}, false, err
	}
	var g Gates
	found, err := s.read(s.gatesFile(key), &g)
	if err != nil || !found || g.Path != key {
		return Gates{}, false, err
	}
	return g, true, nil
}

// SetPlanGates records cmds as the Validation Commands in force for the
// plan at path.
func (s Store) SetPlanGates(path string, cmds []string, by string, now time.Time) (Gates, error) {
	key, err := Key(path)
	if err != nil {
		return Gates{}, err
	}
	g := Gates{Path: key, Commands: slices.Clone(cmds), RecordedAt: now.UTC().Truncate(time.Second), By: by}
	if old, found, err := s.PlanGates(path); err == nil && found {
		g.Routes = old.Routes // the routes in force stay as they were
	}
	if g.Commands == nil {
		g.Commands = []string{}
	}
	return g, s.write(s.gatesFile(key), g)
}

// GatesInForce returns the Validation Commands in force for the plan at
// path, whose file says file: those recorded, else (a plan read for the
// first time) the file's, recorded now. Without a store the file's are
// in force, unrecorded. The record is returned when there is one.
func (s Store) GatesInForce(path string, file []string, now time.Time) ([]string, *Gates, error) {
	if s.Dir == "" {
		return file, nil, nil
	}
	g, found, err := s.PlanGates(path)
	if err != nil {
		return nil, nil, err
	}
	if !found {
		if g, err = s.SetPlanGates(path, file, ByFirstRead, now); err != nil {
			return nil, nil, err
		}
	}
	return g.Commands, &g, nil
}

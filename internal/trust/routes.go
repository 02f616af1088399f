package trust

import (
	"maps"
	"time"
)

// A plan names the agent and the model of a task, and the agent can edit
// the plan: it could hand a task to a costlier model, or to another of the
// agents the configuration allows. So, as for its Validation Commands
// (gates.go), the agents and models in force are the ones the store
// records for the plan: the file's when ralph first reads them, and from
// then on only what `ralph trust PLAN` records.

// Route is the agent and the model a task names ("" for none).
type Route struct {
	Agent string `json:"agent,omitempty"`
	Model string `json:"model,omitempty"`
}

// SetPlanRoutes records routes (task id to route) as the agents and
// models in force for the plan at path, keeping its Validation Commands.
func (s Store) SetPlanRoutes(path string, routes map[string]Route, by string, now time.Time) (Gates, error) {
	key, err := Key(path)
	if err != nil {
		return Gates{}, err
	}
	g, found, err := s.PlanGates(path)
	if err != nil {
		return Gates{}, err
	}
	if !found {
		g = Gates{Path: key, Commands: []string{}}
	}
	g.Routes = maps.Clone(routes)
	if g.Routes == nil {
		g.Routes = map[string]Route{}
	}
	g.RecordedAt, g.By = now.UTC().Truncate(time.Second), by
	return g, s.write(s.gatesFile(key), g)
}

// RoutesInForce returns the agents and models in force for the plan at
// path, whose file names file: those recorded, else (read for the first
// time) the file's, recorded now. Without a store the file's are in
// force, unrecorded. The record is returned when there is one.
func (s Store) RoutesInForce(path string, file map[string]Route, now time.Time) (map[string]Route, *Gates, error) {
	if s.Dir == "" {
		return file, nil, nil
	}
	g, found, err := s.PlanGates(path)
	if err != nil {
		return nil, nil, err
	}
	if !found || g.Routes == nil {
		if g, err = s.SetPlanRoutes(path, file, ByFirstRead, now); err != nil {
			return nil, nil, err
		}
	}
	return g.Routes, &g, nil
}

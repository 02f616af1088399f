package task

import (
	"errors"
	"strconv"
)

// Error is a problem in a plan file at a place a user can jump to.
// Validation returns every problem it finds, joined with errors.Join;
// errors.As finds the first.
type Error struct {
	File string
	// Line is 1-based; 0 when the problem has no single line.
	Line int
	// Field is the path of the offending value, jq style:
	// userStories[2].passes. Empty when the problem is not about one field.
	Field string
	Msg   string
}

// Error formats as FILE:LINE: FIELD: MSG, dropping the parts that are empty,
// so editors and terminals can link to the place.
func (e *Error) Error() string {
	s := e.File
	if e.Line > 0 {
		s += ":" + strconv.Itoa(e.Line)
	}
	if e.Field != "" {
		s += ": " + e.Field
	}
	return s + ": " + e.Msg
}

var (
	// ErrUnsupported is returned by Load for a file in none of the plan
	// formats ralph reads.
	ErrUnsupported = errors.New("unknown plan format")
	// ErrUnknownTask is returned when an id names no task in the plan.
	ErrUnknownTask = errors.New("no such task")
	// ErrNoPlan is returned by Discover when the directory has no plan file.
	ErrNoPlan = errors.New("no plan file found")
)

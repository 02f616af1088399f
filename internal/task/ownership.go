package task

import "fmt"

// Ownership says who marks a plan's tasks done (DESIGN §1). The loop acts
// on it, the prompt tells the agent, the config names it.
type Ownership string

const (
	// OwnerRunner means ralph gives the agent one named task and marks it done
	// once the agent's claim passes the checks; the agent may not edit
	// task statuses.
	OwnerRunner Ownership = "runner"
	// OwnerAgent means the agent picks a task and ticks it in the plan itself,
	// as snarktank's ralph.sh prompt asks; ralph re-reads the plan.
	OwnerAgent Ownership = "agent"
)

// ParseOwnership reads an ownership's name; "" is the default, runner.
func ParseOwnership(s string) (Ownership, error) {
	switch o := Ownership(s); o {
	case "":
		return OwnerRunner, nil
	case OwnerRunner, OwnerAgent:
		return o, nil
	}
	return "", fmt.Errorf("ownership %q: want runner or agent", s)
}

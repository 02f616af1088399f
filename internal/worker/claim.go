// Package worker lets many ralph processes, on many machines, work one
// plan together, coordinated only through a git remote they all push to:
// no server, no database, no scheduler of ralph's own. An engine that
// exists already (a Kubernetes Indexed Job, a CI matrix) starts them.
//
// A worker claims a task by creating a ref, refs/ralph/claims/<plan>/<task>,
// with a push that succeeds only if the ref does not exist yet (git's
// --force-with-lease with an empty expected value: the remote compares and
// swaps under its ref lock, so of two workers racing for one task exactly
// one wins). The ref holds a small commit whose message says who claimed
// the task, when, and until when the claim holds (its lease); the worker
// renews it by heartbeat while its agent works, and a claim whose lease
// ran out (a killed pod) may be taken over the same way, by a push that
// expects the stale claim. The task's result lands on the run branch as
// one commit, with the plan's status change, by rebasing onto the
// branch's head and pushing as a fast-forward, again and again while
// other workers land first: the branch is the ledger of what is done.
package worker

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// ClaimsPrefix is where claims live on the remote.
const ClaimsPrefix = "refs/ralph/claims/"

// Claim states.
const (
	// StateWorking: a worker holds the task until Expires.
	StateWorking = "working"
	// StateFailed: the task failed its attempts; no worker takes it again
	// until the claim is deleted (ralph status --remote says how).
	StateFailed = "failed"
)

// Claim is what a claim ref records.
type Claim struct {
	Task    string    `json:"task"`
	Worker  string    `json:"worker"`
	State   string    `json:"state"`
	Started time.Time `json:"started"`
	// Expires is the end of the lease; zero for a failed task, whose claim
	// stays.
	Expires time.Time `json:"expires,omitzero"`
	// Reason says why a task failed.
	Reason string `json:"reason,omitempty"`

	// Ref and Object are where the claim was read: the claim's ref on
	// the remote and the commit it points at.
	Ref    string `json:"-"`
	Object string `json:"-"`
}

// Live reports whether the claim holds at now: a working claim within its
// lease, or a failed task.
func (c Claim) Live(now time.Time) bool {
	return c.State == StateFailed || now.Before(c.Expires)
}

func (c Claim) encode() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // a struct of strings and times always encodes
	}
	return "ralph claim " + string(b)
}

// decodeClaim reads a claim commit's subject.
func decodeClaim(subject string) (Claim, error) {
	var c Claim
	body, ok := strings.CutPrefix(subject, "ralph claim ")
	if !ok {
		return c, fmt.Errorf("not a ralph claim: %q", subject)
	}
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		return c, fmt.Errorf("claim %q: %w", subject, err)
	}
	return c, nil
}

// PlanKey names a plan among the claims: the run branch and the plan
// file's path in the repository, each part made safe for a ref name.
func PlanKey(branch, planPath string) string {
	var parts []string
	for _, s := range []string{branch, planPath} {
		for p := range strings.SplitSeq(s, "/") {
			if p != "" {
				parts = append(parts, refPart(p))
			}
		}
	}
	return strings.Join(parts, "/")
}

// refPart makes s one component of a ref name: letters, digits, '-', '_'
// and '.', not starting with a dot, not ending in .lock, no "..".
func refPart(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			b[i] = '-'
		}
	}
	out := strings.ReplaceAll(string(b), "..", "--")
	out = strings.TrimPrefix(out, ".")
	if stem, ok := strings.CutSuffix(out, ".lock"); ok {
		out = stem + "-lock"
	}
	if out == "" {
		return "-"
	}
	return out
}

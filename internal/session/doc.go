// Package session assembles a run: from a loaded configuration, the
// project directory and a command's options it builds the whole of it
// (the plan or the tracker it comes from, the sandbox with the agents'
// homes and the egress proxy, the agent and the reviewer, the gates as
// trust leaves them, the store, the process family, the repository,
// write-back and the pull request) and hands the command line one object
// to run and close (Open, Run.Run, Run.Close). ralph run, --worker,
// --pr-feedback, --dry-run, ralph plan, ralph review, ralph demo, ralph pr
// and doctor's gate run all go through it; what differs between them is
// an option, not a copy.
//
// Every event of a run goes through one pipeline (events.go), declared
// there with the order of its consumers and what a consumer's failure
// does. Host is what the commands share: the streams, the environment,
// the global flags and the configuration this invocation approved.
package session

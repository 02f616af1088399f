// Package serve shows runs in a browser and lets a user steer them from
// anywhere: the HTTP server of `ralph serve` and `ralph run --serve` (one
// page, embedded, and a versioned JSON API with Server-Sent Events), and
// the control channel every `ralph run` serves in its project
// (.ralph/run.sock: its events and the verbs pause, resume, skip, stop and
// answer), through which a server in another process reaches the run.
//
// The loop never waits on it: events go through bounded queues, and a
// client that cannot keep up is dropped and told to resync (it fetches a
// fresh snapshot and reconnects). What is not live (finished runs, the
// history, transcripts) is read from the project's .ralph/ on disk.
package serve

#!/bin/sh
# ralph-worker: clone the repository the workers share and run one worker
# on it, until no task is left to claim. The image's entry point.
#
#   REPO_URL    the repository to clone, fetch from and push to (required;
#               put credentials in it, or in git's credential helper)
#   RUN_BRANCH  the branch to clone, which holds the plan (default: the
#               remote's default branch). The workers land on the plan's
#               branchName, which the first of them makes from this branch
#               when the remote has none yet, else on this branch.
#   WORK_DIR    where to clone (default: ~/work)
#
# Arguments go to `ralph run --worker` (the plan, --agent, --json, ...);
# ralph.toml and RALPH_* variables configure it as usual (RALPH_WORKER_ID,
# RALPH_WORKER_LEASE, RALPH_AGENT, ...). The exit code is ralph's: 0 the
# plan is done, 3 a limit stopped the worker, 4 only failed tasks are left,
# 1 an error (worth a retry), 130 stopped by a signal.
set -eu
: "${REPO_URL:?set REPO_URL to the repository the workers share}"
dir="${WORK_DIR:-$HOME/work}"
if [ -n "${RUN_BRANCH:-}" ]; then
	git clone --quiet --branch "$RUN_BRANCH" "$REPO_URL" "$dir"
else
	git clone --quiet "$REPO_URL" "$dir"
fi
cd "$dir"
# Nobody is here to approve the clone's ralph.toml (ralph trust): use it as
# committed (docs/trust.md says what that trusts). RALPH_TRUST=0 refuses.
export RALPH_TRUST="${RALPH_TRUST:-1}"
exec ralph run --worker --no-tui "$@"

#!/usr/bin/env bash
# CI: install the real agent CLIs at the versions pinned in
# e2e/agents/package.json (into e2e/agents/node_modules, nothing global),
# then run the end-to-end tests that drive full `ralph run` loops with each
# of them against the fake model server on 127.0.0.1.
#
#   .ci/agents.sh                          # everything
#   .ci/agents.sh -run 'TestAgents/codex'  # extra arguments go to go test
#   AGENTS_STEP=install .ci/agents.sh      # only the install (.ci/run names
#   AGENTS_STEP=test .ci/agents.sh         # a failed one), or only the tests
#
# npm's cache is the caller's npm_config_cache: .ci/run gives it one of the
# run's own, so that no package left on the machine stands in for one the
# registry no longer serves.
set -euo pipefail
step=${AGENTS_STEP:-all}
cd "$(dirname "$0")/.."

agents=e2e/agents

if [ "$step" != test ]; then
  echo "== node and npm"
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "agents.sh: node (>= 20) and npm are needed to install the agent CLIs" >&2
    exit 1
  fi
  node --version
  npm --version

  # The lock file is committed without download addresses (npm's
  # omit-lockfile-registry-resolved): refuse one that has them.
  if [ -f "$agents/package-lock.json" ] && grep -q '"resolved":' "$agents/package-lock.json"; then
    echo "agents.sh: $agents/package-lock.json has \"resolved\" download addresses; regenerate it with npm_config_omit_lockfile_registry_resolved=true" >&2
    exit 1
  fi

  echo "== install the agent CLIs"
  start=$SECONDS
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  log=$tmp/npm-ci.log
  if [ ! -f "$agents/package-lock.json" ]; then
    (cd "$agents" && npm install --no-audit --no-fund --omit-lockfile-registry-resolved)
  elif ! (cd "$agents" && npm ci --no-audit --no-fund 2>"$log"); then
    # npm ci wants a lock entry for every platform's binary package of
    # droid and OpenCode (darwin, win32, ...); a lock made through a registry
    # that lacks those has only this platform's. npm install follows the
    # lock for all it has and leaves the file as it is.
    echo "agents.sh: npm ci refused the lock file ($(grep -m1 -o 'Missing: .*' "$log" || tail -1 "$log")); npm install follows it instead" >&2
    (cd "$agents" && npm install --no-audit --no-fund --omit-lockfile-registry-resolved)
  fi
  echo "installed in $((SECONDS - start))s:"
  home=$tmp/home # --version writes settings: not into the real HOME
  mkdir -p "$home"
  for cli in claude codex gemini opencode qwen droid copilot; do
    bin="$agents/node_modules/.bin/$cli"
    if [ -x "$bin" ]; then
      printf '  %-9s %s\n' "$cli" "$(HOME="$home" TMPDIR="$home" timeout 60 "$bin" --version 2>/dev/null | head -1 || echo '(no version)')"
    else
      printf '  %-9s not installed\n' "$cli"
    fi
  done

fi
[ "$step" = install ] && exit 0

echo "== end-to-end tests with the real CLIs"
RALPH_E2E_TOOLS="$PWD/$agents" go test ./e2e/ -count=1 -v -timeout 25m "$@"

#!/usr/bin/env bash
# A snapshot release of one target, offline, and a look at what it made:
# the archive holds the binary, LICENSE, README, man pages and completions;
# there are checksums and deb, rpm and apk packages; the binary's version
# names the commit. `goreleaser check` validates the whole configuration
# (every target, the cask, the image) first. Run from the repository's top.
set -euo pipefail
goreleaser check
cfg="$(mktemp --suffix=.goreleaser.yaml)"
trap 'rm -f "$cfg"' EXIT
sed -e 's/^    goos: \[linux, darwin\]$/    goos: [linux]/' \
    -e 's/^    goarch: \[amd64, arm64\]$/    goarch: [amd64]/' .goreleaser.yaml > "$cfg"
grep -q 'goos: \[linux\]$' "$cfg" && grep -q 'goarch: \[amd64\]$' "$cfg" \
  || { echo "release-snapshot: .goreleaser.yaml's goos/goarch lines changed; update this script" >&2; exit 1; }
# goreleaser reads the commit only once it has read the remote's URL; a
# clone without a remote (CI's may be one) gets the project's, for this
# command only.
if [ -z "$(git remote)" ]; then
  export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=https://github.com/ralph-loop/ralph.git
fi
# No publishing, no image (no docker here), no cask (it wants the darwin
# archives this snapshot does not build).
goreleaser release --snapshot --clean --config "$cfg" --skip=publish,docker,homebrew,sign,sbom

archive="$(ls dist/ralph_*_linux_amd64.tar.gz)"
contents="$(tar -tzf "$archive")"
for want in ralph LICENSE README.md CHANGELOG.md man/ralph.1 man/ralph-run.1 \
  completions/ralph.bash completions/_ralph completions/ralph.fish; do
  grep -qx "$want" <<<"$contents" || { echo "release-snapshot: $archive has no $want" >&2; exit 1; }
done
test -s dist/checksums.txt
(cd dist && sha256sum --check --strict --ignore-missing checksums.txt)
for ext in deb rpm apk; do
  ls dist/*."$ext" >/dev/null || { echo "release-snapshot: no .$ext package" >&2; exit 1; }
done
dpkg-deb --field dist/*.deb Recommends | grep -q bubblewrap \
  || { echo "release-snapshot: the deb does not recommend bubblewrap" >&2; exit 1; }
version="$(tar -xzOf "$archive" ralph > dist/ralph-snapshot && chmod +x dist/ralph-snapshot && dist/ralph-snapshot --version)"
echo "$version"
grep -q "commit $(git rev-parse HEAD)" <<<"$version" \
  || { echo "release-snapshot: --version does not name the commit: $version" >&2; exit 1; }

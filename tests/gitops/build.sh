#!/usr/bin/env bash
# Build gitops-health (main.go: kstatus from sigs.k8s.io/cli-utils and Flux's fork,
# Argo CD's health Lua on gopher-lua) into a cache outside the work tree, and print
# the binary's path. Keyed by a digest of this directory's files, so a change
# builds anew and an unchanged tree is reused at once; concurrent callers wait on
# one lock. Everything but the final path goes to stderr.
#
#   FEEDBACKSTORE_GITOPS_CACHE  cache root (default: $XDG_CACHE_HOME or ~/.cache,
#                               then feedbackstore-webhook/gitops)
#   GO                          the go binary (default: `go` on PATH, then
#                               /usr/local/go/bin/go)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
go_bin="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
if ! "$go_bin" version >/dev/null 2>&1; then
	echo "gitops/build.sh: no Go toolchain (GO=${GO:-unset}, 'go' on PATH, /usr/local/go/bin/go): install Go $(sed -n 's/^go //p' "$here/go.mod") or newer, or set GO." >&2
	exit 3
fi

digest="$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" "$here/build.sh" | sha256sum | cut -c1-12)"
root="${FEEDBACKSTORE_GITOPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/feedbackstore-webhook/gitops}"
binary="$root/gitops-health-$digest"
mkdir -p "$root"
exec 9>"$root/.lock"
flock 9
if [ ! -x "$binary" ]; then
	echo "gitops/build.sh: building gitops-health into $binary" >&2
	started=$SECONDS
	staging="$(mktemp "$root/.build.XXXXXX")"
	trap 'rm -f "$staging"' EXIT
	# GOFLAGS from the caller (e.g. -mod=mod) would change what is built: pinned here.
	(cd "$here" && GOFLAGS='-mod=readonly -buildvcs=false' "$go_bin" build -trimpath -ldflags='-s -w' -o "$staging" .)
	mv "$staging" "$binary"
	trap - EXIT
	echo "gitops/build.sh: built in $((SECONDS - started)) s" >&2
fi
echo "$binary"

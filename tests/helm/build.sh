#!/usr/bin/env bash
# Build the real helm v4 command from its Go module (the `tool` in go.mod) into
# a cache outside the work tree, and print the path of the binary.
#
# The cache is keyed by helm's version and a digest of go.mod/go.sum and this
# script, so a new pin builds anew and an unchanged one is reused at once.
# Concurrent callers (pytest-xdist workers, CI) wait on one lock and share the
# result. Everything but the final path goes to stderr.
#
#   FEEDBACKSTORE_HELM_CACHE  cache root (default: $XDG_CACHE_HOME or ~/.cache,
#                             then feedbackstore-webhook/helm)
#   GO                        the go binary to build with (default: `go` on
#                             PATH, then /usr/local/go/bin/go)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

go_bin="${GO:-}"
if [ -z "$go_bin" ]; then
	go_bin="$(command -v go || true)"
	[ -n "$go_bin" ] || [ ! -x /usr/local/go/bin/go ] || go_bin=/usr/local/go/bin/go
fi
if [ -z "$go_bin" ] || ! "$go_bin" version >/dev/null 2>&1; then
	echo "build.sh: no Go toolchain found (GO=${GO:-unset}; looked for 'go' on PATH and /usr/local/go/bin/go)." >&2
	echo "build.sh: helm is built from its Go module: install Go $(sed -n 's/^go //p' "$here/go.mod") or newer, or set GO." >&2
	exit 3
fi

helm_version="$(sed -n 's/^\thelm.sh\/helm\/v4 \(v[^ ]*\).*/\1/p' "$here/go.mod" | head -n 1)"
digest="$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -c1-12)"
root="${FEEDBACKSTORE_HELM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/feedbackstore-webhook/helm}"
target="$root/helm-$helm_version-$digest"

mkdir -p "$root"
exec 9>"$root/.lock"
flock 9

if [ -x "$target/helm" ]; then
	echo "$target/helm"
	exit 0
fi

echo "build.sh: building helm $helm_version into $target (first build: a few minutes on 2 cores)" >&2
staging="$(mktemp -d "$root/.build.XXXXXX")"
trap 'rm -rf "$staging"' EXIT
started=$SECONDS
(
	cd "$here"
	# What helm's own Makefile sets: no cgo, no DWARF, the version stamped in
	# (without it `helm version` says v4.3 and charts' kubeVersion checks see
	# a development build).
	CGO_ENABLED=0 GOFLAGS='-mod=readonly -buildvcs=false' "$go_bin" build -trimpath \
		-ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=$helm_version -X helm.sh/helm/v4/internal/version.gitTreeState=clean" \
		-o "$staging/helm" helm.sh/helm/v4/cmd/helm
)
"$staging/helm" version --short >&2
rm -rf "$target"
mv "$staging" "$target"
trap - EXIT
echo "build.sh: built in $((SECONDS - started)) s; $(du -sh "$target" | cut -f1) in $target" >&2
echo "$target/helm"

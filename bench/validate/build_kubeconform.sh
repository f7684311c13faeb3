#!/usr/bin/env bash
# Build kubeconform (a benchmark tool, never a dependency of the product) from its
# Go module into a cache outside the tree, keyed by version, and print the binary's
# path. Everything else goes to stderr.
set -euo pipefail

version="v0.7.0"
root="${XDG_CACHE_HOME:-$HOME/.cache}/feedbackstore-webhook/bench-tools"
target="$root/kubeconform-$version"
mkdir -p "$root"
exec 9>"$root/.lock"
flock 9
if [ ! -x "$target/kubeconform" ]; then
	echo "build_kubeconform.sh: building kubeconform $version into $target" >&2
	staging="$(mktemp -d "$root/.build.XXXXXX")"
	trap 'rm -rf "$staging"' EXIT
	GOBIN="$staging" GOFLAGS='-trimpath' go install "github.com/yannh/kubeconform/cmd/kubeconform@$version" >&2
	rm -rf "$target"
	mv "$staging" "$target"
	trap - EXIT
fi
echo "$target/kubeconform"

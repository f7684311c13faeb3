#!/usr/bin/env bash
# Build the test control plane — kube-apiserver, kube-controller-manager and
# etcd from upstream Go modules — into a cache outside the work tree, and print
# the directory that holds the binaries.
#
# The cache is keyed by the Kubernetes version and a digest of go.mod/go.sum,
# so a new pin builds anew and an unchanged one is reused at once. Concurrent
# callers (pytest-xdist workers, two CI jobs) wait on one lock and share the
# result. Everything but the final directory name goes to stderr.
#
#   FEEDBACKSTORE_CONTROLPLANE_CACHE  cache root
#                                     (default: $XDG_CACHE_HOME or ~/.cache, then
#                                     feedbackstore-webhook/controlplane)
#   GO                                the go binary to build with (default: `go`
#                                     on PATH, then /usr/local/go/bin/go)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

go_bin="${GO:-}"
if [ -z "$go_bin" ]; then
	go_bin="$(command -v go || true)"
	[ -n "$go_bin" ] || [ ! -x /usr/local/go/bin/go ] || go_bin=/usr/local/go/bin/go
fi
if [ -z "$go_bin" ] || ! "$go_bin" version >/dev/null 2>&1; then
	echo "build.sh: no Go toolchain found (GO=${GO:-unset}; looked for 'go' on PATH and /usr/local/go/bin/go)." >&2
	echo "build.sh: kube-apiserver, kube-controller-manager and etcd are built from Go modules: install Go $(sed -n 's/^go //p' "$here/go.mod") or newer, or set GO." >&2
	exit 3
fi

kube_version="$(sed -n 's/^\tk8s.io\/kubernetes \(v[^ ]*\).*/\1/p' "$here/go.mod" | head -n 1)"
if [ -z "$kube_version" ]; then
	kube_version="$(sed -n 's/^require k8s.io\/kubernetes \(v[^ ]*\).*/\1/p' "$here/go.mod")"
fi
digest="$(cat "$here/go.mod" "$here/go.sum" "$here/cmd/etcd/main.go" "$here/build.sh" | sha256sum | cut -c1-12)"
root="${FEEDBACKSTORE_CONTROLPLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/feedbackstore-webhook/controlplane}"
target="$root/kubernetes-$kube_version-$digest"

mkdir -p "$root"
exec 9>"$root/.lock"
flock 9

if [ -x "$target/kube-apiserver" ] && [ -x "$target/kube-controller-manager" ] && [ -x "$target/etcd" ]; then
	echo "$target"
	exit 0
fi

echo "build.sh: building kube-apiserver, kube-controller-manager and etcd for Kubernetes $kube_version into $target (first build: ~8 minutes on 2 cores with the modules downloaded)" >&2
staging="$(mktemp -d "$root/.build.XXXXXX")"
trap 'rm -rf "$staging"' EXIT
started=$SECONDS
(
	cd "$here"
	# -trimpath and no DWARF: smaller binaries, same code. GOFLAGS from the
	# caller (e.g. -mod=mod) would change what is built, so it is pinned here.
	# The version stamps are what Kubernetes' own release build sets
	# (hack/lib/version.sh); without them /version says v0.0.0-master and
	# kubectl warns about a version skew that does not exist.
	minor="${kube_version#v1.}"
	minor="${minor%%.*}"
	stamps=""
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		stamps="$stamps -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
		stamps="$stamps -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
	done
	GOFLAGS='-mod=readonly -buildvcs=false' "$go_bin" build -trimpath -ldflags="-s -w$stamps" \
		-o "$staging/" k8s.io/kubernetes/cmd/kube-apiserver \
		k8s.io/kubernetes/cmd/kube-controller-manager ./cmd/etcd
)
"$staging/kube-apiserver" --version >&2
"$staging/kube-controller-manager" --version >&2
"$staging/etcd" --version | sed -n 1p >&2  # sed reads it all: `head` could SIGPIPE etcd
rm -rf "$target"
mv "$staging" "$target"
trap - EXIT
echo "build.sh: built in $((SECONDS - started)) s; $(du -sh "$target" | cut -f1) in $target" >&2
echo "$target"

#!/usr/bin/env bash
# Build the test node — kubelet, kube-proxy and kube-scheduler, and the pause
# image — from the same pinned Kubernetes module as the control plane
# (tests/node/module/go.mod: the control plane's tests/controlplane/go.mod with
# the node commands as its tools, every shared module at the same version), into
# a cache outside the work tree, and print the directory that holds them.
#
# Its own module, script and cache, so that the control plane's cache key
# (tests/controlplane/build.sh's digest) does not change: the cache here is keyed
# by the Kubernetes version and a digest of module/go.mod, module/go.sum and this
# script. Concurrent
# callers wait on one lock and share the result. Everything but the final
# directory name goes to stderr.
#
# The pause image: no registry is reachable, so the module's own
# build/pause/linux/pause.c is compiled with `gcc -static` and packed as a
# `docker save` archive (pause.tar) that `ctr images import` reads; its name is
# in the file `pause-image`.
#
#   FEEDBACKSTORE_NODE_CACHE  cache root (default: $XDG_CACHE_HOME or ~/.cache,
#                             then feedbackstore-webhook/node)
#   GO                        the go binary (default: `go` on PATH, then
#                             /usr/local/go/bin/go)
#   CC                        the C compiler for pause (default: gcc)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module="$here/module"

go_bin="${GO:-}"
if [ -z "$go_bin" ]; then
	go_bin="$(command -v go || true)"
	[ -n "$go_bin" ] || [ ! -x /usr/local/go/bin/go ] || go_bin=/usr/local/go/bin/go
fi
if [ -z "$go_bin" ] || ! "$go_bin" version >/dev/null 2>&1; then
	echo "node/build.sh: no Go toolchain found (GO=${GO:-unset}; looked for 'go' on PATH and /usr/local/go/bin/go)." >&2
	exit 3
fi
cc="${CC:-gcc}"
if ! command -v "$cc" >/dev/null 2>&1; then
	echo "node/build.sh: no C compiler '$cc' for the pause image (Debian: gcc)." >&2
	exit 3
fi

kube_version="$(sed -n 's/^\tk8s.io\/kubernetes \(v[^ ]*\).*/\1/p' "$module/go.mod" | head -n 1)"
if [ -z "$kube_version" ]; then
	kube_version="$(sed -n 's/^require k8s.io\/kubernetes \(v[^ ]*\).*/\1/p' "$module/go.mod")"
fi
digest="$(cat "$module/go.mod" "$module/go.sum" "$here/build.sh" | sha256sum | cut -c1-12)"
root="${FEEDBACKSTORE_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/feedbackstore-webhook/node}"
target="$root/kubernetes-$kube_version-$digest"
pause_image="feedbackstore.test/pause:$kube_version"

mkdir -p "$root"
exec 9>"$root/.lock"
flock 9

if [ -x "$target/kubelet" ] && [ -x "$target/kube-proxy" ] && [ -x "$target/kube-scheduler" ] && [ -s "$target/pause.tar" ]; then
	echo "$target"
	exit 0
fi

echo "node/build.sh: building kubelet, kube-proxy, kube-scheduler and pause for Kubernetes $kube_version into $target (~1 minute with the control plane's build cache warm, several minutes cold)" >&2
staging="$(mktemp -d "$root/.build.XXXXXX")"
trap 'rm -rf "$staging"' EXIT
started=$SECONDS
(
	cd "$module"
	# The same flags and version stamps as tests/controlplane/build.sh.
	minor="${kube_version#v1.}"
	minor="${minor%%.*}"
	stamps=""
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		stamps="$stamps -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
		stamps="$stamps -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
	done
	GOFLAGS='-mod=readonly -buildvcs=false' "$go_bin" build -trimpath -ldflags="-s -w$stamps" \
		-o "$staging/" k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy \
		k8s.io/kubernetes/cmd/kube-scheduler
)
"$staging/kubelet" --version >&2
"$staging/kube-proxy" --version >&2
"$staging/kube-scheduler" --version >&2

# pause: the module's source, static, as a one-layer image.
src="$(cd "$module" && GOFLAGS='-mod=readonly' "$go_bin" list -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause/linux/pause.c"
layer="$staging/layer"
mkdir -p "$layer"
"$cc" -Os -static -o "$layer/pause" -DVERSION="$kube_version" "$src"
strip "$layer/pause" 2>/dev/null || true
archive="$staging/archive"
mkdir -p "$archive"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$layer" -cf "$archive/layer.tar" pause
diff_id="$(sha256sum <"$archive/layer.tar" | cut -d' ' -f1)"
mkdir -p "$archive/$diff_id"
mv "$archive/layer.tar" "$archive/$diff_id/layer.tar"
printf '{"architecture":"amd64","os":"linux","created":"1970-01-01T00:00:00Z","config":{"Entrypoint":["/pause"],"User":"65535:65535"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
	"$diff_id" >"$archive/config.json"
config_id="$(sha256sum <"$archive/config.json" | cut -d' ' -f1)"
mv "$archive/config.json" "$archive/$config_id.json"
printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' \
	"$config_id" "$pause_image" "$diff_id" >"$archive/manifest.json"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$archive" -cf "$staging/pause.tar" .
echo "$pause_image" >"$staging/pause-image"
rm -rf "$layer" "$archive"

rm -rf "$target"
mv "$staging" "$target"
trap - EXIT
echo "node/build.sh: built in $((SECONDS - started)) s; $(du -sh "$target" | cut -f1) in $target" >&2
echo "$target"

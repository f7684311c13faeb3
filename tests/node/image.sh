#!/usr/bin/env bash
# Build the project's image from its unchanged Dockerfile and print the path of
# a `docker save` tarball of it (everything else goes to stderr).
#
# No registry is reachable here, so the Dockerfile's base (its PYTHON_IMAGE
# default) cannot be pulled: a stand-in of the same name is built from Debian
# bookworm packages with mmdebstrap (python3, venv, `python` on PATH, and the CA
# certificates this host trusts beyond Debian's bundle, so pip inside the build
# reaches the package index as the host does) and loaded with `docker import`.
# Like the real base it has pip and setuptools under /usr/local, installed by pip
# (from Debian's wheels) and not marked externally managed, so the Dockerfile's
# `pip uninstall` of them runs as it does on the real base.
#
# The result is cached by content: the digest of the Dockerfile, .dockerignore,
# pyproject.toml, README.md, every file under webhook/ and this script. An
# unchanged tree prints the cached tarball at once; the base is cached on its
# own (keyed by this script and the base's recipe and the host's extra CA certificates).
#
# A Docker daemon: the one DOCKER_HOST (or the default socket) names, or, if
# none answers, one this script starts (`--bridge=none --iptables=false`, own
# data root under the cache) and stops again before it exits.
#
#   FEEDBACKSTORE_IMAGE_CACHE  cache root (default: $XDG_CACHE_HOME or ~/.cache,
#                              then feedbackstore-webhook/image)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
root="${FEEDBACKSTORE_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/feedbackstore-webhook/image}"
docker="${DOCKER:-$(command -v /usr/bin/docker || command -v docker)}"
extra_ca=/usr/local/share/ca-certificates

# The image's name is the one the Deployments pull (imagePullPolicy: IfNotPresent).
image="$(sed -n 's/^ *image: *//p' "$repo/manifests/webhook/deployment.yaml" | head -n 1)"
base="$(sed -n 's/^ARG PYTHON_IMAGE=//p' "$repo/Dockerfile")"
if [ -z "$image" ] || [ -z "$base" ]; then
	echo "image.sh: cannot read the image or base name" >&2
	exit 2
fi

mkdir -p "$root"
exec 9>"$root/.lock"
flock 9

digest="$(
	cd "$repo"
	{
		for f in Dockerfile .dockerignore pyproject.toml README.md; do printf '%s\n' "$f"; done
		find webhook -type f ! -name '*.pyc' ! -path '*/__pycache__/*' | LC_ALL=C sort
	} | while read -r f; do printf '%s ' "$f"; sha256sum <"$f"; done
	sha256sum <"$here/image.sh"
)"
key="$(printf '%s' "$digest" | sha256sum | cut -c1-16)"
# The base's recipe: what mmdebstrap installs and its hooks (a change here builds a new base).
base_packages=python3,python3-venv,ca-certificates
# shellcheck disable=SC2016 # "$1" is mmdebstrap's, expanded by its hook shell
hooks=(--customize-hook='chroot "$1" ln -sf python3 /usr/bin/python'
	--customize-hook='rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED'
	--customize-hook='chroot "$1" sh -c "set -e; w=/usr/share/python-wheels; pip=\$(echo \$w/pip-*.whl); python3 \$pip/pip install --quiet --no-index --no-cache-dir \$pip \$w/setuptools-*.whl"')
if [ -d "$extra_ca" ]; then
	hooks+=(--customize-hook="mkdir -p \"\$1$extra_ca\" && cp -r $extra_ca/. \"\$1$extra_ca/\" && chroot \"\$1\" update-ca-certificates >/dev/null")
fi
base_key="$(
	{
		echo "bookworm minbase $base_packages docs-excluded ${hooks[*]}"
		[ ! -d "$extra_ca" ] || find "$extra_ca" -type f -print0 | LC_ALL=C sort -z | xargs -0 -r cat
	} | sha256sum | cut -c1-16
)"
out="$root/feedbackstore-webhook-$key.tar"
base_tar="$root/base-$base_key.tar"

if [ -s "$out" ]; then
	echo "$out"
	exit 0
fi

started_daemon=""
stop_daemon() {
	if [ -n "$started_daemon" ]; then
		kill "$started_daemon" 2>/dev/null || true
		wait "$started_daemon" 2>/dev/null || true
		# dockerd leaves its bind mount of the host's network namespace behind when it stops,
		# and a cache folder with a mount in it cannot be deleted ("Device or resource busy").
		for netns in "$run"/exec/netns/*; do
			if mountpoint -q "$netns"; then umount "$netns" || true; fi
		done
	fi
}
trap stop_daemon EXIT
if ! "$docker" info >/dev/null 2>&1; then
	command -v dockerd >/dev/null || { echo "image.sh: no Docker daemon answers and dockerd is not installed (Debian: docker.io)" >&2; exit 3; }
	run="$root/dockerd"
	mkdir -p "$run"
	export DOCKER_HOST="unix://$run/docker.sock"
	dockerd --host "$DOCKER_HOST" --data-root "$run/data" --exec-root "$run/exec" \
		--pidfile "$run/dockerd.pid" --bridge=none --iptables=false --ip-masq=false \
		>"$run/dockerd.log" 2>&1 &
	started_daemon=$!
	for _ in $(seq 1 100); do
		"$docker" info >/dev/null 2>&1 && break
		sleep 0.2
	done
	"$docker" info >/dev/null 2>&1 || { echo "image.sh: dockerd did not start; its log:" >&2; tail -n 20 "$run/dockerd.log" >&2; exit 3; }
fi

t0=$SECONDS
imported="$("$docker" image inspect --format '{{index .Config.Labels "feedbackstore.base-key"}}' "$base" 2>/dev/null || true)"
if [ "$imported" != "$base_key" ]; then
	if [ ! -s "$base_tar" ]; then
		command -v mmdebstrap >/dev/null || { echo "image.sh: mmdebstrap is not installed (Debian: mmdebstrap)" >&2; exit 3; }
		echo "image.sh: building the stand-in base $base from Debian bookworm (1-2 minutes)" >&2
		mmdebstrap --quiet --variant=minbase \
			--include="$base_packages" \
			--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
			"${hooks[@]}" bookworm "$base_tar.part.tar"
		mv "$base_tar.part.tar" "$base_tar"
		find "$root" -maxdepth 1 -name 'base-*.tar' ! -name "${base_tar##*/}" -delete
	fi
	"$docker" import --change "LABEL feedbackstore.base-key=$base_key" "$base_tar" "$base" >/dev/null
	echo "image.sh: base ready in $((SECONDS - t0)) s" >&2
fi

t1=$SECONDS
echo "image.sh: docker build -t $image (classic builder, host network)" >&2
DOCKER_BUILDKIT=0 "$docker" build --network host -t "$image" "$repo" >&2
"$docker" save -o "$out.part" "$image"
mv "$out.part" "$out"
size="$("$docker" image inspect --format '{{.Size}}' "$image")"
echo "image.sh: image built in $((SECONDS - t1)) s, $((size / 1000000)) MB; saved to $out" >&2
find "$root" -maxdepth 1 -name 'feedbackstore-webhook-*.tar' ! -name "${out##*/}" -delete
echo "$out"

# syntax=docker/dockerfile:1
# feedbackstore-webhook: one image for `serve` (admission webhook) and `status-writer`,
# and for CI users' `validate` (docker run --rm -i IMAGE validate -).
#
#   docker build -t ghcr.io/ctxmesh/feedbackstore-webhook:0.1.0 .
#
# The base is pinned by version; pin it by digest as well in your registry
# mirror (python:3.11.14-slim-bookworm@sha256:...) for byte-for-byte rebuilds.
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

# ---- builder: build the wheel, install it into a virtualenv, and lay out the runtime --
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY webhook ./webhook
# Every runtime dependency ships manylinux wheels, so no compiler is needed here
# either; the venv gets no pip of its own (nothing installs at run time).
RUN python -m pip wheel --no-cache-dir --no-deps --wheel-dir /wheels . \
 && python -m venv --without-pip /opt/venv \
 && python -m pip --python /opt/venv/bin/python install --no-cache-dir --compile /wheels/*.whl

# The runtime's whole file system, distroless-style, laid out under /rootfs: the
# interpreter the venv was made from (its python* entries, so the venv's symlinks
# resolve), the standard library without its tests, tooling and site-packages (the
# base's pip and setuptools stay behind), the venv without `kubernetes.aio` (the
# official client's asyncio copy of itself, which nothing here imports: a third of
# the image), every shared library that any of
# these loads (found by ldd, copied at the path the loader asks for), CA certificates,
# and a passwd/group naming the non-root user. No shell, no package manager, no pip.
# The same steps work on any Debian-based Python image, whatever its prefix.
WORKDIR /
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN set -eu; \
    root=/rootfs; \
    bindir="$(dirname "$(readlink /opt/venv/bin/python)")"; \
    stdlib="$(/opt/venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')"; \
    mkdir -p "$root/tmp" "$root/home/nonroot" "$root/etc/ssl/certs"; \
    chmod 1777 "$root/tmp"; \
    for dir in bin sbin lib lib32 lib64 libx32; do \
        if [ -L "/$dir" ]; then \
            target="$(readlink "/$dir")"; ln -s "$target" "$root/$dir"; mkdir -p "$root/${target#/}"; \
        fi; \
    done; \
    find "$bindir" -maxdepth 1 -name 'python*' ! -name '*-config' -exec cp -a --parents {} "$root/" \; ; \
    tar -C / -cf - \
        --exclude='__pycache__' --exclude='site-packages' --exclude='dist-packages' \
        --exclude='test' --exclude='tests' --exclude='idle_test' --exclude='idlelib' \
        --exclude='tkinter' --exclude='turtledemo' --exclude='ensurepip' --exclude='lib2to3' \
        --exclude='pydoc_data' --exclude='config-*' \
        "${stdlib#/}" | tar -C "$root" -xf -; \
    tar -C / -cf - --exclude='opt/venv/lib/python*/site-packages/kubernetes/aio' opt/venv \
      | tar -C "$root" -xf -; \
    find "$root" -type f \( -name '*.so' -o -name '*.so.*' -o -perm -u+x \) \
        -exec sh -c 'ldd "$@" 2>/dev/null; true' ldd {} + \
      | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (0x.*/\1/p' \
      | sort -u \
      | while read -r lib; do [ -e "$root$lib" ] || cp -L --parents "$lib" "$root/"; done; \
    cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"; \
    if [ -d /usr/lib/ssl ]; then cp -a --parents /usr/lib/ssl "$root/"; fi; \
    printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' \
        'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' \
        'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' >"$root/etc/passwd"; \
    printf '%s\n' 'root:x:0:' 'nobody:x:65534:' 'nonroot:x:65532:' >"$root/etc/group"; \
    chown 65532:65532 "$root/home/nonroot"; \
    /opt/venv/bin/python -m compileall -q -j 0 --invalidation-mode unchecked-hash \
        -s "$root" "$root$stdlib"

# ---- runtime: nothing but what the builder laid out, as a non-root numeric user ----
FROM scratch
LABEL org.opencontainers.image.title="feedbackstore-webhook" \
      org.opencontainers.image.description="Admission webhook and status writer for ctxmesh FeedbackStores" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=builder /rootfs /
ENV PATH=/opt/venv/bin \
    HOME=/home/nonroot \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# 65532 is the conventional "nonroot" uid/gid; numeric so Kubernetes' runAsNonRoot
# can verify it without reading /etc/passwd.
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["/opt/venv/bin/feedbackstore-webhook"]
CMD ["--help"]

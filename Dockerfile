# syntax=docker/dockerfile:1
# feedbackstore-webhook: one image for `serve` (admission webhook) and `status-writer`.
#
#   docker build -t ghcr.io/ctxmesh/feedbackstore-webhook:0.1.0 .
#
# The base is pinned by version; pin it by digest as well in your registry
# mirror (python:3.11.14-slim-bookworm@sha256:...) for byte-for-byte rebuilds.
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

# ---- builder: build the wheel and install it into a virtualenv -------------
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

# ---- runtime: the base image plus the venv, as a non-root numeric user -------
FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="feedbackstore-webhook" \
      org.opencontainers.image.description="Admission webhook and status writer for ctxmesh FeedbackStores" \
      org.opencontainers.image.licenses="Apache-2.0"
# Nothing installs at run time: the base's own pip and setuptools go too.
RUN python -m pip uninstall --quiet --yes pip setuptools wheel
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=builder /opt/venv /opt/venv
# 65532 is the conventional "nonroot" uid/gid; numeric so Kubernetes' runAsNonRoot
# can verify it without an /etc/passwd entry.
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["feedbackstore-webhook"]
CMD ["--help"]

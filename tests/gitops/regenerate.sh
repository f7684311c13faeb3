#!/usr/bin/env bash
# Write Argo CD's testdata for the FeedbackStore health.lua anew
# (argocd/resource_customizations/agents.ctxmesh.ai/FeedbackStore/testdata/*.yaml):
# each object as the real kube-apiserver holds it once the status writer has
# written, made by the cases of tests/kube/test_gitops_health_real.py, which then
# check them as usual. Review the diff before committing it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
FEEDBACKSTORE_WRITE_ARGOCD_TESTDATA=1 exec python -m pytest -n 0 -q -m kube \
	tests/kube/test_gitops_health_real.py -k test_health_as_the_gitops_tools_compute_it "$@"

"""Support for the admission webhook tests: reviews as kube-apiserver sends them, its checks on
the answer, kubectl's rendering of a denial, TLS material and running servers."""

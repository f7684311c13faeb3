"""Certificates for the webhook's TLS port: a throwaway CA and a serving certificate.

kube-apiserver only calls a webhook over TLS it can verify, so every install
path needs a CA bundle and a serving certificate whose SANs cover the Service's
DNS names. This package issues both (`issue`), writes them with private keys
mode 0600 (`files`), keeps or renews them (`reuse`, `renewal`; `dev` for
`serve --dev`), and renders the kustomize overlay that carries them into a
cluster (`kustomize`, `overlay`). What they default to (the shipped Service's
names, lifetimes, key type) is declared in `defaults`, which loads no
`cryptography`; so this package re-exports nothing, and importing
`webhook.certs.defaults` (as every command's parser does) stays cheap.
"""

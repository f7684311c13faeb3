"""Certificates for the webhook's TLS port: a throwaway CA and a serving certificate.

Re-exports nothing: every command's parser imports `defaults`, which must not load `cryptography`.
"""

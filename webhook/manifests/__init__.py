"""Generators for the Kubernetes manifests that derive from the rules (the CRD), and their YAML."""

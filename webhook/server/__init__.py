"""The HTTPS admission server: aiohttp app, TLS and certificate reload, probes, metrics.

Import the submodules you need (`webhook.server.run`, `.app`, `.config`...):
this package module stays empty so the CLI can read `config` without loading
aiohttp.
"""

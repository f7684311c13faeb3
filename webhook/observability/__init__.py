"""Logs and metrics of both processes (the webhook server and the status writer), set up once.

`logs`: stdlib logging, one JSON formatter, a QueueListener thread writing the lines.
`metrics`: prometheus-client's own metric objects, each component's in its registry.
"""

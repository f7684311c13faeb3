"""Logs and metrics of both processes (the webhook server and the status writer), set up once."""

"""Command-line adapters: argument parsing and exit codes around the pure core."""

"""Start-up: the worker started early, and the compiled-code caches kept per file."""

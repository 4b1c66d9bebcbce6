"""The contest server: users and tokens, the durable queue of uploaded submissions, the
worker slots that judge them, the HTTP API (popcorn-cli's protocol and ours) and the
client of `runner.py submit --server`. docs/server.md describes it."""

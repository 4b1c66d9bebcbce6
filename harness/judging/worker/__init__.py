"""The worker process and its channel to the judge: protocol, shared memory, buffers."""

"""Attack: start a child process (a fresh interpreter, in a session of its own) that tries
the same: rewrite databases, read the secret, write into the project, connect to a
listener. Contained: the sandbox holds every process the worker starts."""
import os
import socket
import subprocess
import sys

from _attack import attempt, find_databases, project_dir, read_secrets, report, rewrite


def child():
    for db in attempt("child: find databases", find_databases) or []:
        attempt(f"child: rewrite {db}", lambda db=db: rewrite(db))
        attempt(f"child: read the secret of {db}", lambda db=db: read_secrets(db))
    attempt("child: write into the project",
            lambda: open(os.path.join(project_dir(), "PLANTED_BY_CHILD"), "w").write("x"))
    attempt("child: connect", lambda: socket.create_connection(("127.0.0.1", int("__PORT__")), 3))
    report()


if sys.argv[1:] == ["child"]:
    child()
    sys.exit(0)
out = subprocess.run([sys.executable, os.path.abspath(__file__), "child"], capture_output=True,
                     text=True, start_new_session=True, timeout=120)
print(out.stdout + out.stderr[-3000:], flush=True)
escaped = [line for line in out.stdout.splitlines() if line.startswith("ESCAPED")]
print("CHILD_" + (escaped[-1] if escaped else "ESCAPED unknown"), flush=True)
report()

from task import input_t, output_t  # noqa: E402


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return a + b

"""Attack: open TCP connections (to a listener on this machine, the test's) and listen
on a port. Contained: Landlock refuses TCP connect and bind. The test writes the port."""
import socket

from _attack import attempt, report
from task import input_t, output_t

PORT = int("__PORT__")


def listen():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s.getsockname()


attempt("connect to a local listener", lambda: socket.create_connection(("127.0.0.1", PORT), 3))
attempt("bind a port", listen)
report()


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return a + b

"""A real `runner.py warm` host for tests (harness/execution/warm_host.py): the suite's own
(conftest.py: one per test process, started by the first command a test runs, so that the
commands and servers its tests start borrow their templates from it) and
test_warm_host.py's."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.execution.warm_host import ENV

_ROOT = Path(__file__).resolve().parent.parent


class Host:
    """`runner.py warm` on a socket of its own, in a new folder of the temporary folder (a
    socket's path is short), with the environment `env` (this process's where None);
    started without waiting for its imports unless `wait`."""

    def __init__(self, wait: bool = True, env: dict[str, str] | None = None) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="wh"))
        self.path = self.folder / "host" / "w.sock"
        self.log = self.folder / "host.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "runner.py", "warm", "--socket", str(self.path)], cwd=_ROOT,
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + 120
        while wait and "lent on" not in self.text():
            assert self.proc.poll() is None and time.monotonic() < deadline, self.text()
            time.sleep(0.1)

    def text(self) -> str:
        return self.log.read_text()

    def env(self, **more: str) -> dict[str, str]:
        """Variables of a command that uses this host."""
        return {ENV: str(self.path), **more}

    def stop(self) -> None:
        """End the host (its socket goes with it) and remove its folder."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)

"""Drives an interactive REPL (ours or Python Hermes') through a pseudo-terminal.

Both REPLs refuse or degrade without a terminal, so the driver gives them one (120x40),
answers cursor-position queries (prompt_toolkit asks for them), and reads the screen output
as text with escape sequences removed. A turn is typed as a line and Enter; it is finished
when the mock model's final text for that turn ("ack <N> done") has appeared on the screen.
"""

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time

ANSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78DEHMc]")
CPR_QUERY = b"\x1b[6n"


class ReplError(RuntimeError):
    """The REPL did not show what was expected in time (message includes the screen tail)."""


class Repl:
    def __init__(self, argv, env, cwd, rows=40, cols=120):
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd,
            start_new_session=True, close_fds=True,
        )
        os.close(slave)
        self.master = master
        self.raw = bytearray()
        self.text = ""
        self.rows = rows

    @property
    def pid(self):
        return self.proc.pid

    def _pump(self, timeout):
        """Reads what is available within `timeout` s; returns True when bytes arrived."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return False
        try:
            chunk = os.read(self.master, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            if self.proc.poll() is not None:
                raise ReplError(f"REPL exited with {self.proc.returncode}: {self.tail()}")
            return False
        if CPR_QUERY in chunk:
            for _ in range(chunk.count(CPR_QUERY)):
                os.write(self.master, f"\x1b[{self.rows};1R".encode())
        self.raw += chunk
        self.text += ANSI.sub(b"", chunk).decode("utf-8", "replace")
        return True

    def tail(self, n=600):
        return self.text[-n:].replace("\r", "")

    def wait_for(self, needle, start, timeout):
        """Waits until `needle` appears in the screen text after offset `start`; returns
        (perf_counter time when it was seen, offset just past it)."""
        deadline = time.monotonic() + timeout
        while (at := self.text.find(needle, start)) < 0:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ReplError(f"no {needle!r} within {timeout} s; screen ends: {self.tail()!r}")
            self._pump(min(left, 0.5))
        return time.perf_counter(), at + len(needle)

    def settle(self, quiet=0.3, limit=5.0):
        """Reads until no output for `quiet` s (or `limit` s in total have passed)."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if not self._pump(quiet):
                return

    def send_line(self, line):
        os.write(self.master, line.encode() + b"\r")
        return time.perf_counter()

    def close(self, quit_line="/quit"):
        if self.proc.poll() is None:
            try:
                self.send_line(quit_line)
                end = time.monotonic() + 10
                while self.proc.poll() is None and time.monotonic() < end:
                    try:
                        self._pump(0.2)
                    except ReplError:
                        break
            except OSError:
                pass
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        os.close(self.master)

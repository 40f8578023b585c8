"""A short Python program run in a process of its own, for what only a whole process
shows: how it exits, what a fork inherits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

# Far past a cold start on a busy machine; a program that waits forever fails the test
# on the timeout instead of hanging it.
EXIT_SECONDS = 120


def run_python(program: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``program`` with ``args`` (``sys.argv[1:]``), ResourceWarnings shown; its
    output and exit status. Timed out, it is killed with every process it forked."""
    command = [sys.executable, "-W", "always::ResourceWarning", "-c", program, *args]
    # A session of its own, so that a timeout kills a forked child with its parent.
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    ) as running:
        try:
            stdout, stderr = running.communicate(timeout=EXIT_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(running.pid, signal.SIGKILL)
            running.communicate()
            raise
    return subprocess.CompletedProcess(command, running.returncode, stdout, stderr)

"""`inject` commands forked from one process that has imported the CLI and litellm already, for tests that start
(and SIGKILL) many invocations: each is a real process in its own session running `main`, but none pays litellm's
import again (seconds each, tens of seconds on a loaded machine).

Run as a script: reads JSON requests on stdin, one a line, and answers each with one JSON line on stdout:
`{"run": [args...], "stderr": PATH}` -> the child's pid; `{"poll": PID}` -> its exit code (as often as asked), or
null while it runs.
`ForkedCli` is the test's side.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def _child(args: list[str], stderr: str) -> None:
    """In the forked child: its own session (the caller kills its process group), output to files, then `main`."""
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.dup2(os.open(stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
    from injector.cli import main

    code = 1
    try:
        main(args, prog_name="inject")
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve() -> None:
    from injector.cli import main  # noqa: F401 - imported once, here, for every child
    from injector.engines.model_info import import_litellm

    import_litellm()
    print(json.dumps("ready"), flush=True)
    ended: dict[int, int] = {}
    for line in sys.stdin:
        request = json.loads(line)
        if "run" in request:
            pid = os.fork()
            if pid == 0:
                _child(request["run"], request["stderr"])
            answer: Any = pid
        else:
            pid = request["poll"]
            if pid not in ended:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    ended[pid] = os.waitstatus_to_exitcode(status)
            answer = ended.get(pid)
        print(json.dumps(answer), flush=True)


class ForkedCli:
    """The test's side: `start(args, stderr)` gives a pid (its process group's id too), `poll(pid)` its exit code
    or None; `close()` ends the server."""

    def __init__(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen([sys.executable, __file__], env=env, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parent)
        assert self._ask(None) == "ready"

    def _ask(self, request: dict[str, Any] | None) -> Any:
        assert self.process.stdin is not None and self.process.stdout is not None
        if request is not None:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def start(self, args: list[str], stderr: Path) -> int:
        return int(self._ask({"run": args, "stderr": str(stderr)}))

    def poll(self, pid: int) -> int | None:
        return self._ask({"poll": pid})

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


if __name__ == "__main__":
    serve()

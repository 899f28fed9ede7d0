"""`recsys serve` processes for the tests, forked from one interpreter that has imported the
service once, instead of each a fresh interpreter that imports it again.

Every server a test starts used to pay about 3-4 s of CPU to import torch, numba, FastAPI and
the service before it read its model; the suite starts dozens, on 2 cores shared by 3 test
processes. Here each test process starts one "zygote" (this file run as a script) that imports
all of it and waits. A server is a child forked from it that then does what the console script
does: `sys.argv = ["recsys", "serve", ...]`, the test's environment, working folder and log file
as stdout and stderr, a session of its own when asked, then `cli.main.main()`. It is a real
process on a real port: it reads its settings, loads its model, spawns its workers and training
processes (fresh interpreters, as always) and dies by its signals as one started from the
console script does. What it shares with its siblings is only the imported, never-run code:
the zygote computes nothing, so no thread pool of torch, numba or OpenBLAS is in use when it
forks (Python's `random` is reseeded in each child).

The zygote reaps its children and writes each one's exit status to a file; `ForkedProcess`
reads it, with the part of `subprocess.Popen`'s interface the tests use (pid, poll, wait,
send_signal, terminate, kill, returncode).

TESTS_EXEC_SERVERS=1 in the environment starts every server from the console script instead;
tests/system/test_server.py's own first test always does.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# what a fresh `recsys serve` imports before it reads its model, and what its first-start
# training and its workers' supervisor import
PRELOAD = ("torch", "numba", "uvicorn", "fastapi", "cli.main", "cli.serve", "api.main", "api.server",
           "recsys.recommender", "training.train")
_READY_TIMEOUT_S = 180.0
_REAP_INTERVAL_S = 0.05


class ForkedProcess:
    """A child of the zygote, as the tests use a `subprocess.Popen`."""

    def __init__(self, pid: int, args: list[str], status_file: Path):
        self.pid, self.args, self._status = pid, args, status_file
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and self._status.is_file():
            self.returncode = int(self._status.read_text())
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            time.sleep(0.02)
        return int(self.returncode)  # type: ignore[arg-type]

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Zygote:
    """The zygote of this test process, started on first use."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="recsys-zygote-"))
        self._log = open(self.folder / "zygote.log", "wb")  # noqa: SIM115 (open while it runs)
        self.proc = subprocess.Popen([sys.executable, __file__, str(self.folder)], stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT,
                                     cwd=str(Path(__file__).resolve().parents[1]))
        deadline = time.monotonic() + _READY_TIMEOUT_S
        while not (self.folder / "ready").is_file():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the test zygote did not start: {(self.folder / 'zygote.log').read_text()[-2000:]}")
            time.sleep(0.05)

    def popen(self, args: list[str], env: dict[str, str], log: Path, new_session: bool = False,
              cwd: Path | None = None, err: Path | None = None) -> ForkedProcess:
        """`args` (the console script's path first) as a forked child, stdout to `log`, stderr
        there too unless to `err`."""
        argv = [str(a) for a in args]
        request = {"argv": argv, "env": env, "log": str(log), "session": new_session,
                   "cwd": str(cwd or Path.cwd()), "err": str(err or log)}
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(str(self.folder / "sock"))
            s.sendall(json.dumps(request).encode() + b"\n")
            pid = int(s.makefile().readline())
        return ForkedProcess(pid, argv, self.folder / f"{pid}.status")

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()
        shutil.rmtree(self.folder, ignore_errors=True)


_zygote: list[Zygote] = []


def _executed() -> bool:
    return os.environ.get("TESTS_EXEC_SERVERS") == "1"


def _the_zygote() -> Zygote:
    if not _zygote:
        _zygote.append(Zygote())
    return _zygote[0]


def popen(args: list[str], env: dict[str, str], log: Path, new_session: bool = False,
          exec_script: bool = False) -> subprocess.Popen | ForkedProcess:
    """`args` started with stdout and stderr to `log`: forked from this test process's zygote,
    or executed when `exec_script` or TESTS_EXEC_SERVERS=1."""
    if exec_script or _executed():
        with open(log, "wb") as fh:
            return subprocess.Popen(args, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=new_session)
    return _the_zygote().popen(args, env, log, new_session)


def run(module: str, args: list[str], env: dict[str, str], cwd: Path | None = None,
        timeout: float = 600) -> subprocess.CompletedProcess:
    """`python -m MODULE ARGS` to its end, as `subprocess.run(..., capture_output=True, text=True)`
    returns it: forked from this test process's zygote (sys.argv as `-m` sets it), or executed
    when TESTS_EXEC_SERVERS=1."""
    if _executed():
        return subprocess.run([sys.executable, "-m", module, *args], env=env, cwd=cwd, capture_output=True,
                              text=True, timeout=timeout)
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, f"no module {module}"
    argv = [spec.origin, *args]
    with tempfile.TemporaryDirectory(prefix="recsys-run-") as folder:
        out, err = Path(folder, "stdout"), Path(folder, "stderr")
        proc = _the_zygote().popen(argv, env, out, cwd=cwd, err=err)
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
        return subprocess.CompletedProcess(argv, code, out.read_text(errors="replace"),
                                           err.read_text(errors="replace"))


def close() -> None:
    """Stop this test process's zygote (its children are their tests' to stop)."""
    while _zygote:
        _zygote.pop().close()


# ---- the zygote itself ---------------------------------------------------------------------


def _reap(folder: Path) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        tmp = folder / f"{pid}.status.tmp"
        tmp.write_text(str(os.waitstatus_to_exitcode(status)))
        tmp.replace(folder / f"{pid}.status")


def _serve(folder: Path) -> dict | None:
    """Fork a child per request until the test process is gone: in the parent None at the end,
    in a child its request (the child returns out of the loop, so nothing of it runs there)."""
    for name in PRELOAD:
        importlib.import_module(name)
    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(folder / "sock"))
    listener.listen(16)
    listener.settimeout(_REAP_INTERVAL_S)
    (folder / "ready").write_text(str(os.getpid()))
    while os.getppid() == parent:
        _reap(folder)
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        with conn:
            conn.settimeout(10)
            request = json.loads(conn.makefile().readline())
            started_r, started_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                listener.close()
                os.close(started_r)
                _prepare(request)
                os.close(started_w)
                return request
            os.close(started_w)
            # its pid only once it has its session and files (as Popen returns after the exec):
            # a killpg right after the start must reach it (EOF also when it failed)
            os.read(started_r, 1)
            os.close(started_r)
            conn.sendall(f"{pid}\n".encode())
    return None


def _prepare(request: dict) -> None:
    """In the forked child, before its parent answers: the session, files, folder and
    environment the console script would have started with."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the zygote's own handler is not its
    if request["session"]:
        os.setsid()
    null = os.open(os.devnull, os.O_RDONLY)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    out = os.open(request["log"], flags, 0o644)
    err = out if request["err"] == request["log"] else os.open(request["err"], flags, 0o644)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    for fd in {null, out, err}:
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = request["argv"]


def _become(request: dict) -> None:
    """In the forked child: what the console script runs."""
    import types

    sys.modules["__main__"] = types.ModuleType("__main__")  # spawned workers import no main module
    from cli.main import main

    sys.exit(main())


if __name__ == "__main__":
    # run as a script, sys.path[0] is tests/, whose api/ would shadow the service's package
    sys.path[0] = str(Path(__file__).resolve().parents[1])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    req = _serve(Path(sys.argv[1]))
    if req is not None:
        _become(req)

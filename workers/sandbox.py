"""The scorer sandbox: plugin scorers run in a pool of pre-started child processes.

Why pre-started children fed through pipes (see FIELD_NOTES, "Killing a hung Python call"): a
ProcessPoolExecutor cannot kill a hung worker, billiard's timeout is only precise to about a
second, and a fresh process per call costs 2-50 ms. Here a call takes an idle child from a queue,
writes one request frame, and polls the child's stdout until the deadline; on expiry the child's
process group is SIGKILLed and a replacement starts in a background thread while the other warm
children keep serving. Each child runs with resource limits, a clean environment and only the
standard library loaded (workers/sandbox_child.py).

This contains crashes, hangs and runaway memory or CPU of trusted-but-buggy plugin code; it is not
a security boundary against hostile code (no seccomp, no filesystem or network isolation), which
is why only modules under the allowed prefixes may be loaded at all.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import math
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workers.sandbox_child import HEADER, encode_frame, write_all

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CHILD_SCRIPT = Path(__file__).resolve().parent / "sandbox_child.py"

DEFAULT_TIMEOUT_MS = 5000
# A child that took this long to start is broken, not slow.
_START_TIMEOUT_S = 10.0
# How long a call waits for an idle child; every busy child frees itself by its own deadline.
_ACQUIRE_TIMEOUT_S = 30.0
_START_ATTEMPTS = 3
# Retire a child once it has used this share of its RLIMIT_CPU, so that any one call still has
# at least half the budget and a CPU-limit kill always points at the scorer that caused it.
_CPU_RETIRE_SHARE = 0.5
_MAX_REPR_CHARS = 80
_MIN_MEMORY_BYTES = 64 * 2**20


@dataclass
class ScoreOutcome:
    score: float | None
    details: dict[str, Any] | None
    error: str | None


class ScorerError(Exception):
    """An entrypoint that cannot be used; `reason` is fit to show the admin who registered it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def resolve_timeout_ms(requested: int | None, cap: int) -> int:
    """The scorer timeout to use: the default when none was asked for, kept within 1..cap."""
    if cap < 1:
        raise ValueError(f"timeout cap must be at least 1 ms, got {cap}")
    wanted = DEFAULT_TIMEOUT_MS if requested is None else int(requested)
    return min(max(wanted, 1), cap)


class _CallFailed(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Timeout(Exception):
    pass


class _EndOfStream(Exception):
    pass


class _FrameTooLarge(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


def _read_frame(fd: int, buffer: bytearray, deadline: float, max_bytes: int) -> bytes:
    """Reads one frame from `fd` by the monotonic `deadline`, keeping any bytes beyond it in
    `buffer`. The size check comes from the header alone, so an oversized answer is refused
    before its body is read."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    body_size: int | None = None
    while True:
        if body_size is None and len(buffer) >= HEADER.size:
            (body_size,) = HEADER.unpack_from(buffer)
            if body_size > max_bytes:
                raise _FrameTooLarge(body_size)
        if body_size is not None and len(buffer) >= HEADER.size + body_size:
            frame = bytes(buffer[HEADER.size : HEADER.size + body_size])
            del buffer[: HEADER.size + body_size]
            return frame
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _Timeout
        if not poller.poll(math.ceil(remaining * 1000)):
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            raise _EndOfStream
        buffer += chunk


def _describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "scorer process stopped answering"
    if returncode < 0:
        number = -returncode
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "unknown"
        if number == signal.SIGXCPU:
            return f"scorer process exceeded its CPU time limit (signal {number}, {name})"
        return f"scorer process died (signal {number}, {name})"
    return f"scorer process exited with status {returncode}"


def _short_repr(value: object) -> str:
    text = repr(value)
    if len(text) > _MAX_REPR_CHARS:
        text = text[: _MAX_REPR_CHARS - 3] + "..."
    return text


def _json_type_name(value: object) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _outcome_from_result(result: object) -> ScoreOutcome:
    if not isinstance(result, dict):
        return ScoreOutcome(
            None, None, f"scorer returned {_json_type_name(result)}, expected an object"
        )
    if "score" not in result:
        return ScoreOutcome(None, None, "scorer result has no 'score'")
    raw = result["score"]
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return ScoreOutcome(None, None, f"score is not a number: {_short_repr(raw)}")
    try:
        value = float(raw)
    except OverflowError:
        return ScoreOutcome(None, None, "score is not a finite number: integer too large")
    if not math.isfinite(value):
        return ScoreOutcome(None, None, f"score is not a finite number: {value}")
    details = result.get("details")
    if not isinstance(details, dict):
        details = None
    if value < 0:
        details = {**(details or {}), "raw_score": value}
        value = 0.0
    # Adding 0.0 turns -0.0 into 0.0, which nobody wants to see on a leaderboard.
    return ScoreOutcome(value + 0.0, details, None)


def _describe_child_error(response: dict[str, Any]) -> str:
    error = str(response.get("error", "unknown error"))
    kind = response.get("kind")
    if kind == "raised":
        return f"scorer raised {error}"
    if kind == "load":
        return f"cannot load scorer: {error}"
    if kind == "request":
        return f"invalid scoring request: {error}"
    return error


def _clean_environment() -> dict[str, str]:
    """Only what an interpreter needs: the worker's environment holds database URLs, API keys and
    admin tokens, none of which a plugin may see. PYTHONHASHSEED is fixed so a plugin iterating a
    set of strings gives the same score in every child."""
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "PYTHONPATH": str(PROJECT_ROOT),
        "PYTHONHASHSEED": "0",
    }


class _Child:
    __slots__ = ("buffer", "calls", "cpu_seconds", "disposed", "process")

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.buffer = bytearray()
        self.calls = 0
        self.cpu_seconds = 0.0
        self.disposed = False

    @property
    def request_fd(self) -> int:
        assert self.process.stdin is not None
        return self.process.stdin.fileno()

    @property
    def response_fd(self) -> int:
        assert self.process.stdout is not None
        return self.process.stdout.fileno()

    def has_exited(self) -> bool:
        """Like `Popen.poll()` but leaves the exited child unreaped: until it is reaped its pid
        cannot be reused, so a later `kill_group` can never hit a stranger."""
        try:
            status = os.waitid(os.P_PID, self.process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return status is not None

    def wait_for_exit_unreaped(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        pause = 0.0005
        while not self.has_exited() and time.monotonic() < deadline:
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def kill_group(self) -> None:
        # The child leads its own session, so this also reaches processes a plugin started.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)


class ScorerSandbox:
    """Runs scorer plugins in `pool_size` pre-started child processes. Thread-safe."""

    def __init__(
        self,
        *,
        pool_size: int = 2,
        memory_bytes: int = 512 * 2**20,
        cpu_seconds: int = 30,
        file_size_bytes: int = 2**20,
        max_result_bytes: int = 65536,
        allowed_modules: tuple[str, ...] = ("scorers.",),
        max_calls_per_child: int = 10_000,
    ) -> None:
        if pool_size < 1:
            raise ValueError(f"pool_size must be at least 1, got {pool_size}")
        if memory_bytes < _MIN_MEMORY_BYTES:
            # Below this an interpreter starts but cannot even map a C extension, so every call
            # would fail with a baffling ImportError.
            raise ValueError(
                f"memory_bytes must be at least {_MIN_MEMORY_BYTES} (64 MiB), got {memory_bytes}"
            )
        if cpu_seconds < 1:
            raise ValueError(f"cpu_seconds must be at least 1, got {cpu_seconds}")
        if max_calls_per_child < 1:
            raise ValueError(f"max_calls_per_child must be at least 1, got {max_calls_per_child}")
        prefixes = tuple(prefix.strip() for prefix in allowed_modules if prefix.strip())
        if not prefixes:
            raise ValueError("allowed_modules must name at least one module prefix")
        self._pool_size = pool_size
        self._memory_bytes = memory_bytes
        self._cpu_seconds = cpu_seconds
        self._file_size_bytes = file_size_bytes
        self._max_result_bytes = max_result_bytes
        self._allowed_modules = prefixes
        self._max_calls_per_child = max_calls_per_child
        self._owner_pid = os.getpid()
        self._lock = threading.Lock()
        self._idle: queue.Queue[_Child | None] = queue.Queue()
        self._children: set[_Child] = set()
        self._live = 0  # idle + busy + starting, so replacements are never over-counted
        self._closed = False
        self._request_ids = itertools.count(1)
        self._start_initial_pool()

    # -- public API -------------------------------------------------------------------------

    def check(self, entrypoint: str, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> None:
        """Raises ScorerError unless `entrypoint` names an allowed class with a callable score.

        The prefix check happens here, before any child imports anything."""
        problem = self._entrypoint_problem(entrypoint)
        if problem is not None:
            raise ScorerError(problem)
        try:
            response = self._exchange({"op": "check", "entrypoint": entrypoint}, timeout_ms)
        except _CallFailed as failure:
            raise ScorerError(failure.reason) from None
        if not response.get("ok"):
            raise ScorerError(_describe_child_error(response))

    def score(
        self,
        entrypoint: str,
        metrics: dict[str, Any],
        config: dict[str, Any],
        ctx: dict[str, Any],
        timeout_ms: int,
    ) -> ScoreOutcome:
        """Never raises for anything the scorer does: a failure is `score=None` and a reason."""
        problem = self._entrypoint_problem(entrypoint)
        if problem is not None:
            return ScoreOutcome(None, None, problem)
        timeout_ms = max(1, int(timeout_ms))
        request = {
            "op": "score",
            "entrypoint": entrypoint,
            "metrics": metrics,
            "config": config,
            # The scorer is told the timeout it really runs under.
            "ctx": {**ctx, "timeout_ms": timeout_ms},
        }
        try:
            response = self._exchange(request, timeout_ms)
        except _CallFailed as failure:
            return ScoreOutcome(None, None, failure.reason)
        if not response.get("ok"):
            return ScoreOutcome(None, None, _describe_child_error(response))
        return _outcome_from_result(response.get("result"))

    def close(self) -> None:
        """Kills every child. Calls in flight end with an error outcome; later calls raise."""
        if os.getpid() != self._owner_pid:
            # Inherited through fork: these children belong to the parent process.
            return
        with self._lock:
            if self._closed:
                return
            self._closed = True
            # Killed under the lock: a child is only reaped after `disposed` is set under this
            # lock, so none of these pids can have been reused yet.
            for child in self._children:
                if not child.disposed:
                    child.kill_group()
        while True:
            try:
                idle_child = self._idle.get_nowait()
            except queue.Empty:
                break
            if idle_child is not None:
                self._dispose(idle_child)
        # Wakes every caller waiting for a child: each one puts it back for the next.
        self._idle.put(None)

    def __enter__(self) -> ScorerSandbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- entrypoints ------------------------------------------------------------------------

    def _entrypoint_problem(self, entrypoint: str) -> str | None:
        module_name, colon, class_name = entrypoint.partition(":")
        well_formed = (
            colon == ":"
            and class_name.isidentifier()
            and all(part.isidentifier() for part in module_name.split("."))
        )
        if not well_formed:
            return f"malformed entrypoint {entrypoint!r}: expected 'module.path:ClassName'"
        if not self._module_allowed(module_name):
            allowed = ", ".join(self._allowed_modules)
            return f"entrypoint {entrypoint!r} is outside the allowed modules ({allowed})"
        return None

    def _module_allowed(self, module_name: str) -> bool:
        for prefix in self._allowed_modules:
            # "scorers" and "scorers." both mean the package and what is under it, never a
            # sibling such as "scorers_evil".
            package = prefix.rstrip(".")
            if module_name == package or module_name.startswith(package + "."):
                return True
        return False

    # -- one request/response with a child --------------------------------------------------

    def _exchange(self, request: dict[str, Any], timeout_ms: int) -> dict[str, Any]:
        request_id = next(self._request_ids)
        frame = encode_frame({**request, "id": request_id})
        child = self._acquire_and_send(frame)
        deadline = time.monotonic() + timeout_ms / 1000
        try:
            body = _read_frame(child.response_fd, child.buffer, deadline, self._max_result_bytes)
        except _Timeout:
            self._dispose(child)
            raise _CallFailed(f"timed out after {timeout_ms} ms") from None
        except _FrameTooLarge as too_large:
            self._dispose(child)
            raise _CallFailed(
                f"result too large ({too_large.size} bytes, limit {self._max_result_bytes})"
            ) from None
        except (_EndOfStream, OSError):
            returncode = self._dispose(child, wait_for_exit=True)
            if self._closed:
                raise _CallFailed("scorer sandbox was closed during the call") from None
            raise _CallFailed(_describe_exit(returncode)) from None
        try:
            response = json.loads(body)
        except ValueError:
            response = None
        if not isinstance(response, dict) or response.get("id") != request_id:
            self._dispose(child)
            raise _CallFailed("scorer process sent an unreadable answer")
        child.calls += 1
        cpu_seconds = response.get("cpu_s")
        if isinstance(cpu_seconds, int | float):
            child.cpu_seconds = float(cpu_seconds)
        if self._should_retire(child, response):
            self._dispose(child)
        else:
            self._release(child)
        return response

    def _acquire_and_send(self, frame: bytes) -> _Child:
        # A child can die while idle (OOM killer, an operator's kill). That is not the fault of
        # the call about to use it, so such a child is replaced and another one is tried.
        for _ in range(self._pool_size + 2):
            child = self._acquire()
            if child.has_exited():
                self._dispose(child)
                continue
            try:
                write_all(child.request_fd, frame)
            except OSError:
                self._dispose(child)
                continue
            return child
        raise _CallFailed("no scorer process could be reached")

    def _acquire(self) -> _Child:
        self._ensure_pool()
        try:
            child = self._idle.get(timeout=_ACQUIRE_TIMEOUT_S)
        except queue.Empty:
            raise _CallFailed(
                f"no scorer process became available within {_ACQUIRE_TIMEOUT_S:.0f} s"
            ) from None
        if child is None:
            self._idle.put(None)
            raise RuntimeError("the scorer sandbox is closed")
        return child

    def _release(self, child: _Child) -> None:
        with self._lock:
            if not self._closed:
                self._idle.put(child)
                return
        self._dispose(child)

    def _should_retire(self, child: _Child, response: dict[str, Any]) -> bool:
        return (
            bool(response.get("retire"))
            or child.calls >= self._max_calls_per_child
            or child.cpu_seconds >= self._cpu_seconds * _CPU_RETIRE_SHARE
        )

    # -- starting, replacing and stopping children ------------------------------------------

    def _dispose(self, child: _Child, *, wait_for_exit: bool = False) -> int | None:
        """Kills and reaps `child`, then starts its replacement. Returns its exit status.

        With `wait_for_exit`, a child that is already on its way out (its pipe hit end of file)
        gets a moment to exit by itself, so its own status or signal is reported rather than the
        SIGKILL sent here."""
        with self._lock:
            if child.disposed:
                return child.process.returncode
            child.disposed = True
            self._children.discard(child)
            self._live -= 1
        if wait_for_exit:
            child.wait_for_exit_unreaped(timeout=1.0)
        child.kill_group()
        child.process.wait()
        for pipe in (child.process.stdin, child.process.stdout):
            if pipe is not None:
                pipe.close()
        self._ensure_pool()
        return child.process.returncode

    def _ensure_pool(self) -> None:
        with self._lock:
            if self._closed:
                return
            missing = self._pool_size - self._live
            self._live += max(missing, 0)
        for _ in range(missing):
            # Started off the calling thread: the caller returns at once and the other warm
            # children serve the next calls while this one boots (~50 ms).
            threading.Thread(
                target=self._start_replacement, name="scorer-sandbox-start", daemon=True
            ).start()

    def _start_replacement(self) -> None:
        for attempt in range(_START_ATTEMPTS):
            try:
                child = self._spawn()
                self._await_ready(child, time.monotonic() + _START_TIMEOUT_S)
            except _CallFailed:
                time.sleep(0.2 * (attempt + 1))
                continue
            with self._lock:
                if not self._closed:
                    self._children.add(child)
                    self._idle.put(child)
                    return
            self._reap_unregistered(child)
            return
        # Give the slot back: the next call's _ensure_pool tries again rather than this thread
        # spinning on a start that keeps failing.
        with self._lock:
            self._live -= 1

    def _start_initial_pool(self) -> None:
        """Starts the first children in parallel and waits for all of them, so a sandbox that
        cannot start (for example a memory limit too small for an interpreter) fails here."""
        deadline = time.monotonic() + _START_TIMEOUT_S
        started: list[_Child] = []
        try:
            for _ in range(self._pool_size):
                started.append(self._spawn())
            for child in started:
                self._await_ready(child, deadline)
        except _CallFailed as failure:
            for child in started:
                self._reap_unregistered(child)
            raise RuntimeError(f"scorer sandbox could not start: {failure.reason}") from None
        with self._lock:
            self._children.update(started)
            self._live = len(started)
        for child in started:
            self._idle.put(child)

    def _spawn(self) -> _Child:
        command = [
            sys.executable,
            # -s: no user site-packages. -P: neither the script's folder (workers/) nor the
            # working directory go on sys.path; PYTHONPATH supplies the project root for
            # `scorers.*`. Not -I: it would also ignore PYTHONPATH and PYTHONHASHSEED.
            "-s",
            "-P",
            str(CHILD_SCRIPT),
            str(self._memory_bytes),
            str(self._cpu_seconds),
            str(self._file_size_bytes),
            str(self._max_result_bytes),
        ]
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                # Nothing drains stderr, so it must not be a pipe a chatty plugin could fill.
                stderr=subprocess.DEVNULL,
                cwd=PROJECT_ROOT,
                env=_clean_environment(),
                # Its own session: killpg reaches whatever a plugin starts, and the terminal's
                # Ctrl-C reaches the worker only, which then closes the pool in order.
                start_new_session=True,
                close_fds=True,
                bufsize=0,
            )
        except OSError as exc:
            raise _CallFailed(f"cannot start a scorer process: {exc}") from None
        return _Child(process)

    def _await_ready(self, child: _Child, deadline: float) -> None:
        try:
            body = _read_frame(child.response_fd, child.buffer, deadline, self._max_result_bytes)
            ready = json.loads(body)
        except _Timeout:
            self._reap_unregistered(child)
            raise _CallFailed("scorer process did not start in time") from None
        except (_EndOfStream, _FrameTooLarge, OSError, ValueError):
            returncode = self._reap_unregistered(child)
            raise _CallFailed(f"scorer process failed to start ({returncode=})") from None
        if not (isinstance(ready, dict) and ready.get("ready") is True):
            self._reap_unregistered(child)
            raise _CallFailed("scorer process sent an unexpected greeting")

    def _reap_unregistered(self, child: _Child) -> int | None:
        """For a child not (yet) in the pool's books: no replacement, no count change."""
        child.kill_group()
        child.process.wait()
        for pipe in (child.process.stdin, child.process.stdout):
            if pipe is not None:
                pipe.close()
        return child.process.returncode

    # -- diagnostics ------------------------------------------------------------------------

    def _child_modules(self, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> list[str]:
        """`sorted(sys.modules)` of one child, so tests can check what a child has loaded."""
        response = self._exchange({"op": "_modules"}, timeout_ms)
        modules = response.get("result")
        if not (response.get("ok") and isinstance(modules, list)):
            raise RuntimeError(f"unexpected diagnostic answer: {response!r}")
        return [str(name) for name in modules]


_shared_sandbox: ScorerSandbox | None = None
_shared_lock = threading.Lock()


def _settings_from_environment() -> tuple[tuple[str, ...], int]:
    # Read directly rather than through app.config: a worker that only scores should not need
    # the service's settings (and their required secrets) to build the sandbox.
    raw_modules = os.environ.get("GAUNTLET_SCORER_ALLOWED_MODULES", "scorers.")
    modules = tuple(part.strip() for part in raw_modules.split(",") if part.strip())
    raw_pool_size = os.environ.get("GAUNTLET_SCORER_POOL_SIZE", "2")
    try:
        pool_size = int(raw_pool_size)
    except ValueError:
        pool_size = 0
    if pool_size < 1:
        raise ValueError(
            f"GAUNTLET_SCORER_POOL_SIZE must be a positive integer, got {raw_pool_size!r}"
        )
    return modules or ("scorers.",), pool_size


def get_sandbox() -> ScorerSandbox:
    """The process-wide sandbox, started on first use and closed at interpreter exit."""
    global _shared_sandbox
    with _shared_lock:
        if _shared_sandbox is None:
            allowed_modules, pool_size = _settings_from_environment()
            sandbox = ScorerSandbox(pool_size=pool_size, allowed_modules=allowed_modules)
            atexit.register(sandbox.close)
            _shared_sandbox = sandbox
        return _shared_sandbox


def _forget_shared_sandbox_after_fork() -> None:
    # A forked Celery worker inherits the object but not the pipes' sole ownership nor the
    # threads; it starts its own pool on first use (close() ignores the inherited one).
    global _shared_sandbox, _shared_lock
    _shared_sandbox = None
    _shared_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_shared_sandbox_after_fork)

"""The scorer sandbox: plugin scorers run in a pool of pre-started, isolated processes.

Why pre-started processes fed through pipes: a ProcessPoolExecutor cannot kill a hung worker,
billiard's timeout is only precise to about a second, and a fresh sandbox per call costs tens of
milliseconds (bench/README.md). Here a call takes an idle process, writes one request frame, and
polls the answer until the deadline; on expiry the whole sandbox is killed and a replacement
starts in the background while the other warm processes keep serving.

Plugin code is treated as hostile. Each process starts through bubblewrap from a scrubbed
environment into its own PID, network, IPC and UTS namespaces, sees only read-only Python and
plugin code and a private /tmp, runs as an unprivileged uid, under resource limits
(./launch.py, ./child.py; docs/sandbox.md says what that does and
does not isolate, and what the weaker fallback without bubblewrap gives up). The parent trusts
nothing a process says beyond a bounded, shape-checked answer:

- a process serves one tenant: a process that scored for one tenant is replaced rather than
  handed another tenant's metrics, and a registration check uses a fresh process and retires it;
- after each call the parent itself counts the processes and threads in the sandbox; anything
  left running (a daemon thread, a forked or `setsid` child) retires the sandbox, and killing a
  sandbox kills its PID namespace's init, which takes every descendant with it;
- answers are size-capped frames with an unguessable request id, `details` is reduced to bounded
  JSON data (app/scoring/sandbox/details.py) and reasons are cut to a readable length.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import math
import os
import secrets
import select
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from app.scoring.sandbox import launch as sandbox_launch
from app.scoring.sandbox.child import HEADER, canonical_entrypoint, encode_frame, write_all
from app.scoring.sandbox.details import bound_details, bound_text
from app.scoring.sandbox.launch import (
    IsolationSetting,
    SandboxUnavailable,
    child_environment,
    choose_launcher,
)

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
# Reasons come partly from the plugin's process (an exception's text): shown, so kept short.
_MAX_REASON_CHARS = 1000
_MIN_MEMORY_BYTES = 64 * 2**20
_MAX_INFO_BYTES = 4096
# After its init is killed, a PID namespace is gone within milliseconds; past this, something
# is wrong with the machine and the parent stops waiting (the kill still stands).
_SANDBOX_EXIT_WAIT_S = 2.0


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


class SandboxRefused(ScorerError):
    """Plugin scoring is refused on this machine: the sandbox the settings require cannot run."""


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


def _read_to_end(fd: int, deadline: float, max_bytes: int) -> bytes:
    """Everything written to `fd` until its writer closes it, by `deadline`."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    data = bytearray()
    while len(data) <= max_bytes:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _Timeout
        if not poller.poll(math.ceil(remaining * 1000)):
            continue
        chunk = os.read(fd, 1 << 12)
        if not chunk:
            return bytes(data)
        data += chunk
    raise _FrameTooLarge(len(data))


def _wait_readable(fd: int, timeout: float) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(math.ceil(timeout * 1000)))


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


def _reason(text: str) -> str:
    return bound_text(text, _MAX_REASON_CHARS)


def _outcome_from_result(result: object) -> ScoreOutcome:
    if not isinstance(result, dict):
        return ScoreOutcome(
            None, None, f"scorer returned {_json_type_name(result)}, expected an object"
        )
    if "score" not in result:
        return ScoreOutcome(None, None, "scorer result has no 'score'")
    raw = result["score"]
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return ScoreOutcome(None, None, _reason(f"score is not a number: {_short_repr(raw)}"))
    try:
        value = float(raw)
    except OverflowError:
        return ScoreOutcome(None, None, "score is not a finite number: integer too large")
    if not math.isfinite(value):
        return ScoreOutcome(None, None, f"score is not a finite number: {value}")
    details = bound_details(result.get("details"))
    if value < 0:
        details = {**(details or {}), "raw_score": value}
        value = 0.0
    # Adding 0.0 turns -0.0 into 0.0, which nobody wants to see on a leaderboard.
    return ScoreOutcome(value + 0.0, details, None)


def _describe_child_error(response: dict[str, Any]) -> str:
    error = str(response.get("error", "unknown error"))
    kind = response.get("kind")
    if kind == "raised":
        return _reason(f"scorer raised {error}")
    if kind == "load":
        return _reason(f"cannot load scorer: {error}")
    if kind == "request":
        return _reason(f"invalid scoring request: {error}")
    return _reason(error)


class _Child:
    """One sandboxed scorer process. With bubblewrap, `process` is bwrap itself and `init_pid`
    the host pid of the sandbox's PID-namespace init (bwrap's child), which `init_pidfd` holds
    so that a kill can never reach a reused pid; `sandbox_pid` is the interpreter's pid as seen
    inside its namespace. Without bubblewrap, `process` is the interpreter."""

    __slots__ = (
        "buffer",
        "calls",
        "cpu_seconds",
        "disposed",
        "info_fd",
        "init_pid",
        "init_pidfd",
        "proc_fd",
        "process",
        "sandbox_pid",
        "tasks_fd",
        "tenant",
    )

    def __init__(self, process: subprocess.Popen[bytes], info_fd: int | None) -> None:
        self.process = process
        self.info_fd = info_fd
        self.init_pid: int | None = None
        self.init_pidfd: int | None = None
        self.sandbox_pid: int | None = None
        # The sandbox's own /proc and its interpreter's task list, held open: counting what
        # runs in the sandbox after every call then costs tens of microseconds.
        self.proc_fd: int | None = None
        self.tasks_fd: int | None = None
        # The tenant whose calls this process has served: it serves no other.
        self.tenant: str | None = None
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

    def kill_sandbox(self) -> None:
        """Kills the PID namespace's init; the kernel then kills every process in the
        namespace, `setsid` and double-forked ones included."""
        if self.init_pidfd is not None:
            with contextlib.suppress(ProcessLookupError, OSError):
                signal.pidfd_send_signal(self.init_pidfd, signal.SIGKILL)

    def kill_group(self) -> None:
        # The child leads its own session, so this also reaches processes in its group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def kill(self) -> None:
        """Sends the kill without waiting: to the sandbox's init (bwrap then exits by itself
        and reaps it), or without a namespace to the process group."""
        if self.init_pidfd is not None:
            self.kill_sandbox()
        else:
            self.kill_group()

    def terminate(self) -> None:
        """Kills everything this child is and started (as far as the isolation allows), and
        reaps it. With bubblewrap, once the init's pidfd reports its exit the kernel has already
        killed and waited for every other process of the namespace."""
        if self.init_pidfd is not None:
            self.kill_sandbox()
            _wait_readable(self.init_pidfd, _SANDBOX_EXIT_WAIT_S)
            # bwrap reaps its init and exits by itself; killing it first would orphan the init.
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=_SANDBOX_EXIT_WAIT_S)
        if self.process.returncode is None:
            self.kill_group()
            self.process.wait()
        self.close_descriptors()

    def close_descriptors(self) -> None:
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()
        for name in ("info_fd", "init_pidfd", "proc_fd", "tasks_fd"):
            fd = getattr(self, name)
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
                setattr(self, name, None)

    def strays(self) -> str | None:
        """What is running in the sandbox besides the interpreter's main thread (extra
        processes or threads), or None. Looked up by the parent, never asked of the child."""
        if self.proc_fd is not None and self.tasks_fd is not None:
            return self._strays_in_namespace(self.proc_fd, self.tasks_fd)
        return _strays_of_process(self.process.pid)

    def open_namespace_proc(self) -> None:
        """Opens the sandbox's own /proc, reached through its root: it lists exactly the
        processes of the sandbox's PID namespace, and a plugin without privileges can neither
        remount nor replace it."""
        proc = f"/proc/{self.init_pid}/root/proc"
        self.proc_fd = os.open(proc, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self.tasks_fd = os.open(
            f"{proc}/{self.sandbox_pid}/task", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
        )

    def _strays_in_namespace(self, proc_fd: int, tasks_fd: int) -> str | None:
        try:
            pids = {name for name in os.listdir(proc_fd) if name.isdigit()}
            expected = {"1", str(self.sandbox_pid)}
            if pids != expected:
                return f"{len(pids - expected)} other process(es) left running"
            threads = len(os.listdir(tasks_fd))
        except OSError as exc:
            return f"sandbox processes cannot be counted ({exc.strerror})"
        if threads > 1:
            return f"{threads - 1} thread(s) left running"
        return None


def _strays_of_process(pid: int) -> str | None:
    """Without a PID namespace: the process's other threads and its direct children. A child
    that detached and was re-parented elsewhere is out of sight (docs/sandbox.md)."""
    try:
        threads = len(os.listdir(f"/proc/{pid}/task"))
    except OSError as exc:
        return f"scorer process cannot be inspected ({exc.strerror})"
    if threads > 1:
        return f"{threads - 1} thread(s) left running"
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and fields[1] == str(pid).encode():
            return "a child process left running"
    return None


class ScorerSandbox:
    """Runs scorer plugins in `pool_size` pre-started sandboxed processes. Thread-safe.

    `isolation`: "bubblewrap" (the default) refuses to start without it (SandboxUnavailable);
    "process" is the weaker sandbox; "auto" takes bubblewrap when it works here."""

    def __init__(
        self,
        *,
        pool_size: int = 2,
        memory_bytes: int = 512 * 2**20,
        cpu_seconds: int = 30,
        file_size_bytes: int = 2**20,
        max_processes: int = 16,
        max_open_files: int = 64,
        max_result_bytes: int = 65536,
        allowed_modules: tuple[str, ...] = ("scorers.",),
        max_calls_per_child: int = 10_000,
        isolation: IsolationSetting = "bubblewrap",
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
        if max_processes < 2:
            raise ValueError(f"max_processes must be at least 2, got {max_processes}")
        if max_open_files < 16:
            raise ValueError(f"max_open_files must be at least 16, got {max_open_files}")
        if max_calls_per_child < 1:
            raise ValueError(f"max_calls_per_child must be at least 1, got {max_calls_per_child}")
        prefixes = tuple(prefix.strip() for prefix in allowed_modules if prefix.strip())
        if not prefixes:
            raise ValueError("allowed_modules must name at least one module prefix")
        self._pool_size = pool_size
        self._cpu_seconds = cpu_seconds
        self._max_result_bytes = max_result_bytes
        self._allowed_modules = prefixes
        self._max_calls_per_child = max_calls_per_child
        self._child_config: dict[str, object] = {
            "memory_bytes": memory_bytes,
            "cpu_seconds": cpu_seconds,
            "file_size_bytes": file_size_bytes,
            "max_processes": max_processes,
            "max_open_files": max_open_files,
            "max_result_bytes": max_result_bytes,
        }
        self.launcher, self.weaker_because = choose_launcher(
            isolation, prefixes, sandbox_launch.CHILD_SCRIPT
        )
        self._owner_pid = os.getpid()
        self._lock = threading.Lock()
        self._idle_changed = threading.Condition(self._lock)
        self._idle: list[_Child] = []
        self._children: set[_Child] = set()
        self._live = 0  # idle + busy + starting, so replacements are never over-counted
        self._closed = False
        # bwrap's --die-with-parent fires when the *thread* that started it ends, so every
        # sandbox is started from this one thread, which lives as long as the pool.
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scorer-spawn")
        self._start_initial_pool()

    # -- public API -------------------------------------------------------------------------

    @property
    def isolation(self) -> str:
        return self.launcher.isolation

    def check(self, entrypoint: str, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> None:
        """Raises ScorerError unless `entrypoint` names an allowed class with a callable score.

        The prefix check happens here, before any child imports anything; the import happens
        in a fresh sandboxed process that is retired afterwards, whatever the module did."""
        problem = self._entrypoint_problem(entrypoint)
        if problem is not None:
            raise ScorerError(problem)
        try:
            response = self._exchange(
                {"op": "check", "entrypoint": entrypoint}, timeout_ms, tenant=None, retire=True
            )
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
            response = self._exchange(request, timeout_ms, tenant=str(ctx.get("tenant_id", "")))
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
                    child.kill()
            idle, self._idle = self._idle, []
            # Wakes every caller waiting for a child: each one finds the pool closed.
            self._idle_changed.notify_all()
        for idle_child in idle:
            self._dispose(idle_child)
        self._spawner.shutdown(wait=False)

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
            return _reason(f"malformed entrypoint {entrypoint!r}: expected 'module.path:ClassName'")
        # The seed's `services.scorers.` names the same files as `scorers.`.
        if not self._module_allowed(canonical_entrypoint(entrypoint).partition(":")[0]):
            allowed = ", ".join(self._allowed_modules)
            return _reason(f"entrypoint {entrypoint!r} is outside the allowed modules ({allowed})")
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

    def _exchange(
        self,
        request: dict[str, Any],
        timeout_ms: int,
        *,
        tenant: str | None,
        retire: bool = False,
    ) -> dict[str, Any]:
        # Unguessable, so bytes a plugin writes to the pipe on its own can never pass for the
        # answer to a later call.
        request_id = secrets.token_hex(16)
        frame = encode_frame({**request, "id": request_id})
        child = self._acquire_and_send(frame, tenant)
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
        except (ValueError, RecursionError):
            response = None
        if not isinstance(response, dict) or response.get("id") != request_id or child.buffer:
            self._dispose(child)
            raise _CallFailed("scorer process sent an unreadable answer")
        child.calls += 1
        cpu_seconds = response.get("cpu_s")
        if isinstance(cpu_seconds, int | float) and math.isfinite(cpu_seconds):
            child.cpu_seconds = float(cpu_seconds)
        if retire or self._should_retire(child, response):
            self._dispose(child)
        else:
            self._release(child)
        return response

    def _acquire_and_send(self, frame: bytes, tenant: str | None) -> _Child:
        # A child can die while idle (OOM killer, an operator's kill). That is not the fault of
        # the call about to use it, so such a child is replaced and another one is tried.
        for _ in range(self._pool_size + 2):
            child = self._acquire(tenant)
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

    def _acquire(self, tenant: str | None) -> _Child:
        """An idle child that is fresh or has served only `tenant` (None: fresh only). When
        only other tenants' children are idle, one of them is replaced by a fresh one."""
        deadline = time.monotonic() + _ACQUIRE_TIMEOUT_S
        while True:
            # Again after every wake-up: a replacement that failed to start gave its slot back.
            self._ensure_pool()
            with self._idle_changed:
                if self._closed:
                    raise RuntimeError("the scorer sandbox is closed")
                child = self._take_idle(tenant)
                if child is not None:
                    return child
                stale = next((c for c in self._idle if c.tenant != tenant), None)
                if stale is None:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise _CallFailed(
                            f"no scorer process became available within {_ACQUIRE_TIMEOUT_S:.0f} s"
                        )
                    self._idle_changed.wait(remaining)
                    continue
                self._idle.remove(stale)
            self._dispose(stale)

    def _take_idle(self, tenant: str | None) -> _Child | None:
        """Under the lock: a warm child of this tenant first (its imports are done), else a
        fresh one, which becomes this tenant's."""
        chosen = None
        if tenant is not None:
            chosen = next((c for c in self._idle if c.tenant == tenant), None)
        if chosen is None:
            chosen = next((c for c in self._idle if c.tenant is None), None)
        if chosen is not None:
            self._idle.remove(chosen)
            chosen.tenant = tenant
        return chosen

    def _release(self, child: _Child) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(child)
                self._idle_changed.notify()
                return
        self._dispose(child)

    def _should_retire(self, child: _Child, response: dict[str, Any]) -> bool:
        return (
            bool(response.get("retire"))
            or child.calls >= self._max_calls_per_child
            or child.cpu_seconds >= self._cpu_seconds * _CPU_RETIRE_SHARE
            or child.strays() is not None
        )

    # -- starting, replacing and stopping children ------------------------------------------

    def _dispose(self, child: _Child, *, wait_for_exit: bool = False) -> int | None:
        """Kills and reaps `child` (its whole sandbox), then starts its replacement. Returns
        its exit status, with a death by signal as a negative number.

        With `wait_for_exit`, a child that is already on its way out (its pipe hit end of file)
        gets a moment to exit by itself, so its own status or signal is reported rather than the
        SIGKILL sent here."""
        with self._lock:
            if child.disposed:
                return self._exit_status(child)
            child.disposed = True
            self._children.discard(child)
            self._live -= 1
        if wait_for_exit:
            child.wait_for_exit_unreaped(timeout=1.0)
        child.terminate()
        self._ensure_pool()
        return self._exit_status(child)

    def _exit_status(self, child: _Child) -> int | None:
        returncode = child.process.returncode
        # bwrap passes on a death by signal N as the exit status 128 + N.
        bubblewrap = self.launcher.isolation == "bubblewrap"
        if bubblewrap and returncode is not None and 128 < returncode <= 128 + 64:
            return -(returncode - 128)
        return returncode

    def _ensure_pool(self) -> None:
        with self._lock:
            if self._closed:
                return
            missing = self._pool_size - self._live
            self._live += max(missing, 0)
        for _ in range(missing):
            # Started off the calling thread: the caller returns at once and the other warm
            # children serve the next calls while this one boots.
            threading.Thread(
                target=self._start_replacement, name="scorer-sandbox-start", daemon=True
            ).start()

    def _start_replacement(self) -> None:
        for attempt in range(_START_ATTEMPTS):
            try:
                child = self._spawn()
                self._await_ready(child, time.monotonic() + _START_TIMEOUT_S)
            except _CallFailed:
                if self._closed:
                    break
                time.sleep(0.2 * (attempt + 1))
                continue
            with self._lock:
                if not self._closed:
                    self._children.add(child)
                    self._idle.append(child)
                    self._idle_changed.notify()
                    return
            self._reap_unregistered(child)
            return
        # Give the slot back: the next call's _ensure_pool tries again rather than this thread
        # spinning on a start that keeps failing; callers waiting for a child are woken too.
        with self._lock:
            self._live -= 1
            self._idle_changed.notify_all()

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
            self._spawner.shutdown(wait=False)
            raise RuntimeError(f"scorer sandbox could not start: {failure.reason}") from None
        with self._lock:
            self._children.update(started)
            self._live = len(started)
            self._idle.extend(started)

    def _spawn(self) -> _Child:
        try:
            return self._spawner.submit(self._start_process).result()
        except RuntimeError:  # the spawner was shut down: the pool is closing
            raise _CallFailed("scorer sandbox is closed") from None

    def _start_process(self) -> _Child:
        """Runs on the spawner thread (see __init__)."""
        info_read: int | None = None
        info_write: int | None = None
        if self.launcher.isolation == "bubblewrap":
            info_read, info_write = os.pipe()
        try:
            process = subprocess.Popen(
                self.launcher.command(self._child_config, info_write),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                # Nothing drains stderr, so it must not be a pipe a chatty plugin could fill.
                stderr=subprocess.DEVNULL,
                cwd="/",
                # bwrap clears the environment again inside; the fallback relies on this one.
                env=child_environment(),
                # Its own session: killpg reaches whatever stays in its group, and the
                # terminal's Ctrl-C reaches the worker only, which then closes the pool in order.
                start_new_session=True,
                close_fds=True,
                pass_fds=() if info_write is None else (info_write,),
                bufsize=0,
            )
        except OSError as exc:
            if info_read is not None:
                os.close(info_read)
            raise _CallFailed(f"cannot start a scorer process: {exc}") from None
        finally:
            if info_write is not None:
                os.close(info_write)
        return _Child(process, info_read)

    def _await_ready(self, child: _Child, deadline: float) -> None:
        try:
            if child.info_fd is not None:
                self._attach_namespace(child, deadline)
            body = _read_frame(child.response_fd, child.buffer, deadline, self._max_result_bytes)
            ready = json.loads(body)
        except _Timeout:
            self._reap_unregistered(child)
            raise _CallFailed("scorer process did not start in time") from None
        except (_EndOfStream, _FrameTooLarge, OSError, ValueError, KeyError, TypeError):
            returncode = self._reap_unregistered(child)
            raise _CallFailed(f"scorer process failed to start ({returncode=})") from None
        if not (isinstance(ready, dict) and ready.get("ready") is True):
            self._reap_unregistered(child)
            raise _CallFailed("scorer process sent an unexpected greeting")
        # Sent before any plugin code ran, so still the truth.
        child.sandbox_pid = int(ready["pid"])
        if child.init_pid is not None:
            try:
                child.open_namespace_proc()
            except OSError as exc:
                self._reap_unregistered(child)
                raise _CallFailed(f"sandbox's /proc cannot be opened ({exc.strerror})") from None

    def _attach_namespace(self, child: _Child, deadline: float) -> None:
        """Reads bwrap's info (the host pid of the sandbox's init) and holds a pidfd to it."""
        assert child.info_fd is not None
        info = json.loads(_read_to_end(child.info_fd, deadline, _MAX_INFO_BYTES))
        os.close(child.info_fd)
        child.info_fd = None
        init_pid = int(info["child-pid"])
        child.init_pidfd = os.pidfd_open(init_pid)
        # The pidfd pins the process; check it is bwrap's child, not a stranger with a reused
        # pid (possible only if the init already died, which this start then reports).
        with open(f"/proc/{init_pid}/stat", "rb") as stat:
            parent_pid = int(stat.read().rsplit(b")", 1)[1].split()[1])
        if parent_pid != child.process.pid:
            raise ValueError("sandbox init is not bwrap's child")
        child.init_pid = init_pid

    def _reap_unregistered(self, child: _Child) -> int | None:
        """For a child not (yet) in the pool's books: no replacement, no count change."""
        child.terminate()
        return child.process.returncode

    # -- diagnostics ------------------------------------------------------------------------

    def _child_modules(
        self, timeout_ms: int = DEFAULT_TIMEOUT_MS, *, tenant: str | None = None
    ) -> list[str]:
        """`sorted(sys.modules)` of one child (of `tenant`, or a fresh one), for tests."""
        response = self._exchange({"op": "_modules"}, timeout_ms, tenant=tenant)
        modules = response.get("result")
        if not (response.get("ok") and isinstance(modules, list)):
            raise RuntimeError(f"unexpected diagnostic answer: {response!r}")
        return [str(name) for name in modules]


class RefusedSandbox:
    """Stands in for the sandbox where plugin scoring is refused: every call says why."""

    isolation = "refused"

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def check(self, entrypoint: str, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> None:
        raise SandboxRefused(self.reason)

    def score(
        self,
        entrypoint: str,
        metrics: dict[str, Any],
        config: dict[str, Any],
        ctx: dict[str, Any],
        timeout_ms: int,
    ) -> ScoreOutcome:
        return ScoreOutcome(None, None, self.reason)

    def close(self) -> None:
        pass


Sandbox = ScorerSandbox | RefusedSandbox


def refusal_reason(setting: IsolationSetting, problem: str) -> str:
    if setting == "bubblewrap":
        remedy = (
            "install bubblewrap, or set GAUNTLET_SCORER_SANDBOX=process to accept a weaker sandbox"
        )
    else:
        remedy = "install bubblewrap"
    return (
        f"plugin scoring is refused: no scorer sandbox can start here ({problem}); "
        f"{remedy} (docs/sandbox.md)"
    )


@dataclass(frozen=True)
class SandboxSettings:
    isolation: IsolationSetting = "bubblewrap"
    allowed_modules: tuple[str, ...] = ("scorers.",)
    pool_size: int = 2


def describe_isolation(settings: SandboxSettings) -> tuple[str, str]:
    """(level, message) for the start-up log: what isolates scorer plugins on this machine.
    `level` is "info", "warning" (a weaker sandbox) or "error" (plugin scoring refused)."""
    try:
        launcher, weaker_because = choose_launcher(
            settings.isolation, settings.allowed_modules, sandbox_launch.CHILD_SCRIPT
        )
    except SandboxUnavailable as unavailable:
        return "error", "scorer sandbox: " + refusal_reason(settings.isolation, str(unavailable))
    if launcher.isolation == "bubblewrap":
        return "info", f"scorer sandbox: {launcher.describe()}"
    why = (
        f"bubblewrap is unavailable ({weaker_because}), so GAUNTLET_SCORER_SANDBOX=auto fell back"
        if weaker_because is not None
        else "chosen by GAUNTLET_SCORER_SANDBOX=process"
    )
    return "warning", f"scorer sandbox: {launcher.describe()}; {why} (docs/sandbox.md)"


_shared_sandbox: Sandbox | None = None
_shared_lock = threading.Lock()


def get_sandbox(settings: SandboxSettings) -> Sandbox:
    """The process-wide sandbox, started on first use (with the first caller's settings) and
    closed at interpreter exit; a RefusedSandbox when the settings cannot be met here."""
    global _shared_sandbox
    with _shared_lock:
        if _shared_sandbox is None:
            try:
                sandbox: Sandbox = ScorerSandbox(
                    pool_size=settings.pool_size,
                    allowed_modules=settings.allowed_modules,
                    isolation=settings.isolation,
                )
            except SandboxUnavailable as unavailable:
                sandbox = RefusedSandbox(refusal_reason(settings.isolation, str(unavailable)))
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

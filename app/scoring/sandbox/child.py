"""One scorer sandbox process: loads scorer plugins and answers the parent (./pool.py).

The parent starts this file as a script, not as `-m app.scoring.sandbox.child`, so that no
package of the service (`app/__init__.py` and below) is ever imported here. Only the standard
library and `scorers.protocol` may be imported: the test suite checks that no web, database,
queue or model library ends up in a child's `sys.modules`.

Protocol: frames of a 4-byte big-endian length followed by that many bytes of UTF-8 JSON. The
child sends one "ready" frame once its limits are in force, then answers each request with exactly
one frame carrying the request's `id`.

Once a plugin is loaded, everything in this process is the plugin's to change (this code
included), so the parent believes nothing it says beyond the shape-checked answer: it counts the
sandbox's processes itself, bounds the answer, and kills the whole sandbox when in doubt.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import operator
import os
import resource
import struct
import sys
import time
import types
from typing import Any

import scorers
import scorers.protocol
from scorers.protocol import AttemptMetrics, ScoringContext

HEADER = struct.Struct(">I")
MAX_ERROR_CHARS = 500
_PR_SET_NO_NEW_PRIVS = 38


def _json_default(value: object) -> object:
    # Plugins written for the original protocol's TypedDicts may put the metrics or the context
    # they were given into `details`: those are dicts there, so they are here.
    if isinstance(value, AttemptMetrics | ScoringContext):
        return dict(value)
    # Scorers often compute with numpy; its integer and float scalars are numbers to us.
    if hasattr(value, "__index__"):
        return operator.index(value)
    if hasattr(value, "__float__"):
        return float(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def encode_frame(payload: object) -> bytes:
    body = json.dumps(payload, separators=(",", ":"), default=_json_default).encode()
    return HEADER.pack(len(body)) + body


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def describe_exception(exc: BaseException) -> str:
    try:
        text = f"{type(exc).__name__}: {exc}"
    except Exception:  # a hostile __str__ must not take the child down with it
        text = type(exc).__name__
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS - 3] + "..."
    return text


# The seed's names: its scorers import their types from `services.challenge_scorer_protocol` and
# are registered as `services.scorers.<module>:<Class>`. Here `services.scorers` is another name
# for the `scorers` package and that module another name for `scorers.protocol`, so a seed scorer
# file copied into scorers/ runs unchanged (scorers/README.md, "Scorers written for the seed").
SEED_SCORERS_PACKAGE = "services.scorers"
SEED_PROTOCOL_MODULE = "services.challenge_scorer_protocol"


def canonical_entrypoint(entrypoint: str) -> str:
    """The entrypoint under Gauntlet's own name: `services.scorers.x:C` is `scorers.x:C`. Every
    check (allowed prefixes, which plugin a flat `scoring_entrypoint` names) compares these."""
    module, colon, class_name = entrypoint.partition(":")
    if module == SEED_SCORERS_PACKAGE or module.startswith(SEED_SCORERS_PACKAGE + "."):
        module = "scorers" + module[len(SEED_SCORERS_PACKAGE) :]
    return module + colon + class_name


def install_seed_names() -> None:
    """Makes the seed's module names importable in this process as aliases, not copies: the
    seed's `AttemptMetrics` is the very class this child passes to plugins."""
    package = types.ModuleType("services", "The seed's package names, aliased to Gauntlet's.")
    package.__path__ = []  # a package with no folder: only the aliases below are in it
    sys.modules["services"] = package
    sys.modules[SEED_PROTOCOL_MODULE] = scorers.protocol
    sys.modules[SEED_SCORERS_PACKAGE] = scorers
    package.challenge_scorer_protocol = scorers.protocol  # type: ignore[attr-defined]
    package.scorers = scorers  # type: ignore[attr-defined]


class _LoadError(Exception):
    pass


class _Child:
    def __init__(self, request_fd: int, response_fd: int, max_result_bytes: int) -> None:
        self.request_fd = request_fd
        self.response_fd = response_fd
        self.max_result_bytes = max_result_bytes
        self.instances: dict[str, Any] = {}

    def serve(self) -> int:
        self.send({"ok": True, "ready": True, "pid": os.getpid()})
        while True:
            request = self.receive()
            if request is None:
                return 0
            self.send(self.handle(request))

    def receive(self) -> dict[str, Any] | None:
        header = self._read_exactly(HEADER.size)
        if header is None:
            return None
        (size,) = HEADER.unpack(header)
        body = self._read_exactly(size)
        if body is None:
            return None
        request: dict[str, Any] = json.loads(body)
        return request

    def _read_exactly(self, size: int) -> bytes | None:
        chunks = bytearray()
        while len(chunks) < size:
            chunk = os.read(self.request_fd, size - len(chunks))
            if not chunk:
                return None
            chunks += chunk
        return bytes(chunks)

    def send(self, response: dict[str, Any]) -> None:
        response["cpu_s"] = time.process_time()
        try:
            frame = encode_frame(response)
        except (TypeError, ValueError, OverflowError, RecursionError) as exc:
            frame = encode_frame(
                {
                    "id": response.get("id"),
                    "ok": False,
                    "kind": "result",
                    "error": f"result is not JSON-serializable: {describe_exception(exc)}",
                    "cpu_s": response["cpu_s"],
                }
            )
        if len(frame) - HEADER.size > self.max_result_bytes:
            # The parent refuses oversized frames too, but only by killing this process; a
            # short error frame keeps the warm child.
            frame = encode_frame(
                {
                    "id": response.get("id"),
                    "ok": False,
                    "kind": "result",
                    "error": (
                        f"result too large ({len(frame) - HEADER.size} bytes, "
                        f"limit {self.max_result_bytes})"
                    ),
                    "cpu_s": response["cpu_s"],
                }
            )
        write_all(self.response_fd, frame)

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        response = self._dispatch(request)
        response["id"] = request.get("id")
        return response

    def _dispatch(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        try:
            if op == "check":
                self.load(str(request["entrypoint"]))
                return {"ok": True}
            if op == "score":
                return self.score(request)
            if op == "_modules":
                return {"ok": True, "result": sorted(sys.modules)}
        except _LoadError as exc:
            return {"ok": False, "kind": "load", "error": str(exc)}
        except Exception as exc:
            return {"ok": False, "kind": "request", "error": describe_exception(exc)}
        return {"ok": False, "kind": "request", "error": f"unknown op {op!r}"}

    def load(self, entrypoint: str) -> Any:
        instance = self.instances.get(entrypoint)
        if instance is not None:
            return instance
        module_name, _, class_name = canonical_entrypoint(entrypoint).partition(":")
        try:
            module = importlib.import_module(module_name)
        except (Exception, SystemExit) as exc:
            raise _LoadError(f"cannot import {module_name!r}: {describe_exception(exc)}") from None
        scorer_class = getattr(module, class_name, None)
        if not isinstance(scorer_class, type):
            raise _LoadError(f"{module_name!r} has no class {class_name!r}")
        try:
            instance = scorer_class()
        except Exception as exc:
            raise _LoadError(
                f"cannot instantiate {entrypoint}: {describe_exception(exc)}"
            ) from None
        if not callable(getattr(instance, "score", None)):
            raise _LoadError(f"{entrypoint} has no callable score method")
        self.instances[entrypoint] = instance
        return instance

    def score(self, request: dict[str, Any]) -> dict[str, Any]:
        instance = self.load(str(request["entrypoint"]))
        try:
            metrics = AttemptMetrics.from_dict(request["metrics"])
            ctx = ScoringContext.from_dict(request["ctx"])
            config = request["config"]
        except Exception as exc:
            return {"ok": False, "kind": "request", "error": describe_exception(exc)}
        try:
            result = instance.score(metrics, config, ctx)
        except Exception as exc:
            # After a MemoryError or a blown stack the heap may be fragmented or half-updated:
            # answer, then let the parent replace this process.
            retire = isinstance(exc, MemoryError | RecursionError)
            return {
                "ok": False,
                "kind": "raised",
                "error": describe_exception(exc),
                "retire": retire,
            }
        return {"ok": True, "result": result}


def apply_limits(
    memory_bytes: int,
    cpu_seconds: int,
    file_size_bytes: int,
    max_processes: int,
    max_open_files: int,
) -> None:
    """Soft and hard limits are set together so a plugin cannot raise them again. RLIMIT_CPU
    keeps a 2 s gap so SIGXCPU comes first and the parent can name the cause; the kernel's
    SIGKILL at the hard limit is the backstop. RLIMIT_NPROC counts the processes and threads of
    this process's uid (in the sandbox, its own), so a fork bomb is refused, not served."""
    limits = [
        (resource.RLIMIT_AS, memory_bytes, memory_bytes),
        (resource.RLIMIT_CPU, cpu_seconds, cpu_seconds + 2),
        (resource.RLIMIT_CORE, 0, 0),
        (resource.RLIMIT_FSIZE, file_size_bytes, file_size_bytes),
        (resource.RLIMIT_NPROC, max_processes, max_processes),
        (resource.RLIMIT_NOFILE, max_open_files, max_open_files),
    ]
    for kind, soft, hard in limits:
        _, current_hard = resource.getrlimit(kind)
        if current_hard != resource.RLIM_INFINITY:
            hard = min(hard, current_hard)
            soft = min(soft, hard)
        resource.setrlimit(kind, (soft, hard))


def forbid_new_privileges() -> None:
    """No program this process starts can gain privileges (setuid binaries, file capabilities).
    bubblewrap sets this already; the weaker process sandbox relies on this call."""
    if not sys.platform.startswith("linux"):
        return  # the embedded mode on another system: no such flag there
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")


def take_protocol_pipes() -> tuple[int, int]:
    """Moves the pipes to private descriptors and points fds 0 and 1 at /dev/null, so a plugin's
    print() or input() cannot corrupt or steal a frame. `os.dup` descriptors are not inheritable,
    so processes a plugin starts do not hold the pipes open either."""
    request_fd = os.dup(0)
    response_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    return request_fd, response_fd


def main(argv: list[str]) -> int:
    config = json.loads(argv[1])
    forbid_new_privileges()
    apply_limits(
        int(config["memory_bytes"]),
        int(config["cpu_seconds"]),
        int(config["file_size_bytes"]),
        int(config["max_processes"]),
        int(config["max_open_files"]),
    )
    request_fd, response_fd = take_protocol_pipes()
    install_seed_names()
    return _Child(request_fd, response_fd, int(config["max_result_bytes"])).serve()


if __name__ == "__main__":
    sys.exit(main(sys.argv))

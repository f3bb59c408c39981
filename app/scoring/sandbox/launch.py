"""How a scorer process starts: inside bubblewrap, or (the weaker fallback) as a plain child.

With bubblewrap (`bwrap`, the sandbox Flatpak uses) every scorer process gets its own PID,
network, IPC and UTS namespaces, a root filesystem holding only read-only Python and the plugin
code plus a small private /tmp, a scrubbed environment, and an unprivileged uid:

- when the service runs as root, bwrap runs privileged (no user namespace: a user namespace
  created by root would map the sandbox's uid to root on the host, where RLIMIT_NPROC is not
  enforced), and a tiny bootstrap drops to a uid of its own before the interpreter that loads
  plugins starts. Each sandbox draws its uid from the range systemd keeps for dynamic users, so
  the process-count limit counts that sandbox's processes and nobody else's;
- otherwise bwrap runs unprivileged in a user namespace of its own (uid 65534 inside, nested
  user namespaces disabled), where the process-count limit is counted per namespace.

Without bubblewrap the fallback ("process") is the same interpreter with the same resource
limits and scrubbed environment, in its own session, dropped to a uid of its own when the
service runs as root; nothing else is isolated (see docs/sandbox.md).
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from app.scoring.sandbox.child import HEADER

Isolation = Literal["bubblewrap", "process"]
IsolationSetting = Literal["auto", "bubblewrap", "process"]
ISOLATION_SETTINGS: tuple[IsolationSetting, ...] = ("auto", "bubblewrap", "process")

PROJECT_ROOT = Path(__file__).resolve().parents[3]  # app/scoring/sandbox/launch.py
CHILD_SCRIPT = Path(__file__).resolve().parent / "child.py"

# systemd's range for dynamic service users: no account owns these uids, and they fit in the
# 16 bits a user-namespaced container usually maps.
SANDBOX_UIDS = range(61184, 65520)
# The uid a scorer sees inside its user namespace when the service is not root.
NAMESPACED_UID = 65534
SANDBOX_TMP = "/tmp"
# Where bubblewrap mounts the child script: alone at the root, so that no folder of the
# service's code (it lives in app/scoring/sandbox/) is visible inside.
SANDBOX_CHILD = "/scorer_child.py"
_PROBE_TIMEOUT_S = 15.0
# Host directories a program may need besides /usr. On merged-/usr systems they are symlinks.
_SYSTEM_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Files the dynamic loader and the C library read if present; no secrets in either.
_SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/localtime")

# Runs as root for a few milliseconds in `-I -S` mode (no site, no .pth files, no environment),
# so nothing but this code runs before the uid is dropped. No-new-privileges first, so that
# nothing started later can regain privileges through a setuid program.
_DROP_PRIVILEGES = (
    "import ctypes, os, sys\n"
    "uid = int(sys.argv[1])\n"
    "if ctypes.CDLL(None, use_errno=True).prctl(38, 1, 0, 0, 0) != 0:\n"
    "    raise OSError(ctypes.get_errno(), 'PR_SET_NO_NEW_PRIVS failed')\n"
    "os.setgroups([])\n"
    "os.setresgid(uid, uid, uid)\n"
    "os.setresuid(uid, uid, uid)\n"
    "try:\n"
    "    os.execv(sys.argv[2], sys.argv[2:])\n"
    "except OSError as exc:\n"
    "    sys.exit(f'cannot run {sys.argv[2]} as uid {uid}: {exc.strerror} '\n"
    "             '(the interpreter must be readable by unprivileged users)')\n"
)


class SandboxUnavailable(Exception):
    """The sandbox the settings ask for cannot be provided on this machine."""


def child_environment() -> dict[str, str]:
    """Everything a scorer process's environment holds. The worker's own environment holds
    database URLs, API keys and admin tokens, none of which a plugin may see. PYTHONHASHSEED is
    fixed so a plugin iterating a set of strings gives the same score in every process."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": SANDBOX_TMP,
        "PYTHONPATH": str(PROJECT_ROOT),
        "PYTHONHASHSEED": "0",
        # The code is mounted read-only: do not even try to write bytecode caches.
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def _is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _python_roots() -> list[str]:
    """The interpreter's installation and the virtual environment (both as named and as
    resolved, since a venv's `bin/python` is a symlink into the base installation)."""
    roots: list[str] = []
    for prefix in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix):
        for candidate in (os.path.abspath(prefix), os.path.realpath(prefix)):
            if candidate not in roots:
                roots.append(candidate)
    return roots


def _module_paths(module_prefixes: Sequence[str], search_root: Path) -> list[str]:
    """Files and folders under `search_root` that importing the allowed modules needs: each
    package's `__init__.py` on the way down, then the module file or package folder. Found
    without importing anything, so no plugin code runs in the service to find it."""
    paths: list[str] = []
    for prefix in ("scorers.protocol", *module_prefixes):
        parts = [part for part in prefix.strip().rstrip(".").split(".") if part]
        if not parts or not all(part.isidentifier() for part in parts):
            continue
        folder = search_root
        for part in parts[:-1]:
            folder = folder / part
            init = folder / "__init__.py"
            if init.is_file():
                paths.append(str(init))
        target = folder / parts[-1]
        if target.is_dir():
            paths.append(str(target))
        elif target.with_suffix(".py").is_file():
            paths.append(str(target.with_suffix(".py")))
    return paths


@dataclass(frozen=True)
class Launcher:
    """Builds the command that starts one scorer process, and says what it isolates."""

    isolation: Isolation
    module_prefixes: tuple[str, ...]
    child_script: Path = CHILD_SCRIPT
    bwrap: str | None = None
    tmp_bytes: int = 16 * 2**20
    running_as_root: bool = field(default_factory=lambda: os.geteuid() == 0)

    def command(self, child_config: Mapping[str, object], info_fd: int | None) -> list[str]:
        """The argv of one scorer process; `info_fd` receives bwrap's JSON with the host pid
        of the sandbox's init process."""
        interpreter = [
            sys.executable,
            # -s: no user site-packages. -P: neither the script's folder nor the
            # working directory go on sys.path; PYTHONPATH supplies the project root for
            # `scorers.*`. Not -I: it would also ignore PYTHONPATH and PYTHONHASHSEED.
            "-s",
            "-P",
            SANDBOX_CHILD if self.isolation == "bubblewrap" else str(self.child_script),
            json.dumps(child_config, separators=(",", ":")),
        ]
        if self.running_as_root:
            uid = secrets.choice(SANDBOX_UIDS)
            interpreter = [
                sys.executable,
                "-I",
                "-S",
                "-c",
                _DROP_PRIVILEGES,
                str(uid),
                *interpreter,
            ]
        if self.isolation == "process":
            return interpreter
        assert self.bwrap is not None
        return [self.bwrap, *self._bwrap_options(info_fd), "--", *interpreter]

    def _bwrap_options(self, info_fd: int | None) -> list[str]:
        options = [
            "--unshare-pid",
            "--unshare-net",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--hostname",
            "scorer",
            # Killed with the thread that started it; its init's death kills the namespace.
            "--die-with-parent",
            # No controlling terminal to push keystrokes into (TIOCSTI).
            "--new-session",
            "--clearenv",
        ]
        if not self.running_as_root:
            options += [
                "--unshare-user",
                "--disable-userns",
                "--uid",
                str(NAMESPACED_UID),
                "--gid",
                str(NAMESPACED_UID),
            ]
        for name, value in child_environment().items():
            options += ["--setenv", name, value]
        options += ["--ro-bind", "/usr", "/usr"]
        for directory in _SYSTEM_DIRS:
            if os.path.islink(directory):
                options += ["--symlink", os.readlink(directory), directory]
            elif os.path.isdir(directory):
                options += ["--ro-bind", directory, directory]
        for path in _SYSTEM_FILES:
            options += ["--ro-bind-try", path, path]
        options += ["--proc", "/proc", "--dev", "/dev"]
        options += ["--perms", "1777", "--size", str(self.tmp_bytes), "--tmpfs", SANDBOX_TMP]
        binds = self._binds()
        # bwrap creates missing parents of a mount point with mode 0700, which the sandbox's
        # unprivileged uid could not traverse.
        for folder in self._parents_to_create(binds):
            options += ["--perms", "0755", "--dir", folder]
        for path in binds:
            options += ["--ro-bind", path, path]
        options += ["--ro-bind", str(self.child_script), SANDBOX_CHILD]
        options += ["--chdir", SANDBOX_TMP]
        if info_fd is not None:
            options += ["--info-fd", str(info_fd)]
        return options

    def _binds(self) -> list[str]:
        binds: list[str] = []
        candidates = [
            *_python_roots(),
            *_module_paths(self.module_prefixes, PROJECT_ROOT),
        ]
        for path in candidates:
            if not os.path.exists(path) or _is_within(path, "/usr"):
                continue
            if any(_is_within(path, bound) for bound in binds):
                continue
            binds = [bound for bound in binds if not _is_within(bound, path)] + [path]
        return binds

    @staticmethod
    def _parents_to_create(binds: list[str]) -> list[str]:
        parents: set[str] = set()
        for path in binds:
            parent = os.path.dirname(path)
            while parent not in ("/", "") and parent not in _SYSTEM_DIRS:
                if not any(_is_within(parent, bound) for bound in binds):
                    parents.add(parent)
                parent = os.path.dirname(parent)
        return sorted(parents, key=lambda folder: (folder.count("/"), folder))

    def describe(self) -> str:
        """One line for the start-up log: what a scorer process is isolated from."""
        user = (
            f"a uid of its own from {SANDBOX_UIDS.start}-{SANDBOX_UIDS.stop - 1}"
            if self.running_as_root
            else f"uid {NAMESPACED_UID} in a user namespace (the service's uid outside)"
        )
        if self.isolation == "bubblewrap":
            return (
                f"bubblewrap ({self.bwrap}): own PID, network, IPC and UTS namespaces; "
                "read-only Python and plugin code, private /tmp, no data dir; "
                f"runs as {user}; process, memory, CPU, file-size and descriptor limits"
            )
        user = user if self.running_as_root else "the service's own uid"
        return (
            "process only (WEAKER): a separate interpreter with a scrubbed environment and "
            f"resource limits, running as {user}; it shares the host's network, filesystem "
            "and process table, so a plugin can reach the database and anything else the "
            "machine can"
        )


def _probe(launcher: Launcher) -> str | None:
    """Starts one scorer process exactly as the pool will, and waits for its greeting.
    Returns None when it works, else what went wrong (bwrap's own message included)."""

    config = {
        "memory_bytes": 512 * 2**20,
        "cpu_seconds": 10,
        "file_size_bytes": 2**20,
        "max_processes": 16,
        "max_open_files": 64,
        "max_result_bytes": 65536,
    }
    try:
        completed = subprocess.run(
            launcher.command(config, None),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=child_environment(),
            cwd="/",
            timeout=_PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"a test sandbox could not run: {exc}"
    greeted = len(completed.stdout) > HEADER.size and b'"ready":true' in completed.stdout
    if completed.returncode == 0 and greeted:
        return None
    message = completed.stderr.decode(errors="replace").strip().splitlines()
    detail = message[-1] if message else f"exit status {completed.returncode}"
    return f"a test sandbox failed: {detail[:300]}"


def _has_pidfd() -> bool:
    """Sandboxes are killed through a pidfd of their init (never a pid that could be reused)."""
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    return True


@functools.lru_cache(maxsize=16)
def choose_launcher(
    setting: IsolationSetting, module_prefixes: tuple[str, ...], child_script: Path = CHILD_SCRIPT
) -> tuple[Launcher, str | None]:
    """The launcher the setting asks for, and why it is weaker than asked, if it is.

    `bubblewrap` insists (SandboxUnavailable when bwrap cannot run here), `process` takes the
    weaker sandbox knowingly, `auto` uses bubblewrap when it works and falls back with a reason
    otherwise. Each candidate is probed with a real sandbox, once per process."""
    if setting not in ISOLATION_SETTINGS:
        raise ValueError(
            f"unknown scorer sandbox {setting!r}; expected one of {ISOLATION_SETTINGS}"
        )
    if setting != "process":
        bwrap = shutil.which("bwrap")
        problem: str | None
        if bwrap is None:
            problem = "bubblewrap (bwrap) is not installed"
        elif not sys.platform.startswith("linux"):
            problem = "bubblewrap needs Linux"
        elif not _has_pidfd():
            problem = "this kernel has no pidfd_open (Linux 5.3 or later is needed)"
        else:
            launcher = Launcher("bubblewrap", module_prefixes, child_script, bwrap=bwrap)
            problem = _probe(launcher)
            if problem is None:
                return launcher, None
        if setting == "bubblewrap":
            raise SandboxUnavailable(problem)
    fallback = Launcher("process", module_prefixes, child_script)
    fallback_problem = _probe(fallback)
    if fallback_problem is not None:
        if setting == "process":
            raise SandboxUnavailable(f"the process sandbox cannot start: {fallback_problem}")
        raise SandboxUnavailable(
            f"{problem}, and the process sandbox cannot start either: {fallback_problem}"
        )
    return fallback, None if setting == "process" else problem

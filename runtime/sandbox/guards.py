"""The isolation layers applied in the worker and in each job process.

Each function returns whether its layer is active, so a run can record exactly
what protected it. Order matters and is fixed by `child.run_job`: kernel layers
first (they hold even if Python-level tricks succeed), the audit hook last.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys

_CLONE_NEWNET = 0x40000000
_CLONE_NEWUSER = 0x10000000
_PR_SET_PDEATHSIG = 1

# Loaded once in the worker, before any job process exists: job processes call
# it before the audit hook (which forbids ctypes) is installed.
libc = ctypes.CDLL(None, use_errno=True)


def enter_network_namespace() -> bool:
    """Move this process (and every later child) into an empty network namespace.

    Only a down loopback exists there, so connect() fails in the kernel whatever
    Python does. Root can do it directly; other users may via a user namespace.
    """
    for flags in (_CLONE_NEWNET, _CLONE_NEWUSER | _CLONE_NEWNET):
        if libc.unshare(flags) == 0:
            return True
    return False


def started_with_only(names: set[str]) -> bool:
    """Whether this process was exec'd with no environment variable outside `names`.

    Read from /proc/self/environ, which keeps the environment a process started with
    (job processes, forks of the worker, show the worker's); changing os.environ later
    does not change it.
    """
    try:
        with open("/proc/self/environ", "rb") as environ:
            entries = environ.read().split(b"\0")
    except OSError:
        return False
    return {entry.split(b"=", 1)[0].decode(errors="replace") for entry in entries if entry} <= names


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (no orphans)."""
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def drop_privileges(uid: int) -> bool:
    """Become `uid` with no groups and no capabilities (only possible from root).

    Under a non-root uid the kernel enforces RLIMIT_NPROC, refuses writes to
    files the uid does not own (the warehouse) and signals to other uids.
    """
    if os.geteuid() != 0:
        return False
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    return os.geteuid() == uid


def _address_space_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def apply_rlimits(limits) -> dict[str, bool]:
    """Set the kernel resource limits; returns layer -> active."""
    layers = {}

    def _set(name: str, which: int, soft: int, hard: int) -> None:
        try:
            resource.setrlimit(which, (soft, hard))
            layers[name] = True
        except (ValueError, OSError):
            layers[name] = False

    # RLIMIT_AS counts the image inherited from the worker (libraries, DuckDB's
    # arenas), so the budget is headroom above what is already mapped.
    memory = _address_space_bytes() + limits.memory_mb * (1 << 20)
    _set("rlimit_memory", resource.RLIMIT_AS, memory, memory)
    # A reused process's CPU time adds up over its jobs: the limit covers them all,
    # and the worker holds each job to its own share.
    cpu_s = int(limits.cpu_s) * limits.jobs_per_process
    _set("rlimit_cpu", resource.RLIMIT_CPU, cpu_s, cpu_s + 1)
    file_bytes = int(limits.max_file_mb) << 20
    _set("rlimit_fsize", resource.RLIMIT_FSIZE, file_bytes, file_bytes)
    highest_fd = max(int(fd) for fd in os.listdir("/proc/self/fd"))
    nofile = max(int(limits.max_open_files), highest_fd + 8)
    _set("rlimit_nofile", resource.RLIMIT_NOFILE, nofile, nofile)
    _set("rlimit_nproc", resource.RLIMIT_NPROC, 0, 0)
    # The kernel ignores RLIMIT_NPROC for root: it only forbids forks for others.
    layers["rlimit_nproc"] = layers["rlimit_nproc"] and os.geteuid() != 0 and os.getuid() != 0
    # Writes past RLIMIT_FSIZE then fail with EFBIG instead of killing the job.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    return layers


class Violation(PermissionError):
    """Raised by the audit hook; the job is reported as a SecurityViolation even if caught."""


# Audit events refused outright, by exact name or by prefix.
_BLOCKED_PREFIXES = (
    "socket.", "ctypes.", "subprocess.", "os.exec", "os.spawn", "os.posix_spawn",
    "os.fork", "os.forkpty", "os.system", "os.kill", "os.killpg", "os.startfile",
    "signal.", "pty.", "fcntl.", "resource.", "sys.addaudithook", "sys.settrace",
    "sys.setprofile", "sys._current_frames", "gc.get_", "_thread.start_new_thread",
    "os.chdir", "os.chroot", "os.symlink", "os.link", "os.mkfifo", "os.mknod",
    "os.chown", "os.lchown", "os.chflags", "os.setxattr", "os.removexattr",
    "mmap.", "urllib.", "http.", "ftplib.", "smtplib.", "poplib.", "imaplib.",
    "nntplib.", "telnetlib.", "webbrowser.", "syslog.", "sqlite3.", "_posixsubprocess.",
    "shutil.chown", "os.add_dll_directory", "cpython._PySys_ClearAuditHooks",
)
# Events whose string/path arguments must lie inside the private temp dir.
_WRITE_EVENTS = frozenset({
    "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.utime", "os.truncate",
    "shutil.rmtree", "shutil.copyfile", "shutil.copymode", "shutil.copystat",
    "shutil.copytree", "shutil.move", "shutil.make_archive", "shutil.unpack_archive",
    "tempfile.mkstemp", "tempfile.mkdtemp",
})
# Events that read a path: inside the temp dir or the interpreter's own files.
_READ_EVENTS = frozenset({"os.listdir", "os.scandir", "glob.glob", "os.listxattr", "os.getxattr"})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _inside(path, roots: tuple[str, ...]) -> bool:
    if isinstance(path, int):  # an already-open descriptor: the kernel checked it at open time
        return True
    try:
        path = os.fsdecode(os.fspath(path))
    except TypeError:
        return False
    full = os.path.normpath(os.path.join(os.getcwd(), path)) if not path.startswith("/") else os.path.normpath(path)
    return any(full == root or full.startswith(root + "/") for root in roots)


def install_audit_hook(temp_dir: str, read_roots: tuple[str, ...], violations: list) -> bool:
    """Install a hook refusing network, processes, signals, ctypes and file access outside bounds.

    CPython audit hooks are not a security boundary on their own (native code,
    e.g. DuckDB, never raises audit events); they are the second layer behind
    the kernel ones. `violations` records each refused event for the report.
    """
    write_roots = (temp_dir,)
    read_roots = tuple(read_roots) + write_roots
    blocked, write_events, read_events = _BLOCKED_PREFIXES, _WRITE_EVENTS, _READ_EVENTS

    def refuse(event: str, detail: str = "") -> None:
        message = f"`{event}` is not allowed in the sandbox" + (f" ({detail})" if detail else "")
        violations.append(message)
        raise Violation(message)

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = args
            if path is None:
                return
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or bool((flags or 0) & _WRITE_FLAGS)
            if not _inside(path, write_roots if writing else read_roots):
                refuse("open", f"{'write' if writing else 'read'} {path!s:.80}")
        elif event.startswith(blocked):
            refuse(event)
        elif event in write_events:
            for arg in args:
                if isinstance(arg, (str, bytes, os.PathLike)) and not _inside(arg, write_roots):
                    refuse(event, f"{arg!s:.80}")
        elif event in read_events:
            if args and isinstance(args[0], (str, bytes, os.PathLike)) and not _inside(args[0], read_roots):
                refuse(event, f"{args[0]!s:.80}")

    sys.addaudithook(hook)
    return True


def interpreter_read_roots() -> tuple[str, ...]:
    """Directories agent code may read: the interpreter's stdlib and installed packages."""
    import site
    import sysconfig

    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sysconfig.get_paths()["stdlib"]}
    roots.update(site.getsitepackages())
    roots.update(("/dev/null", "/dev/urandom", "/usr/share/zoneinfo", "/etc/localtime"))
    return tuple(sorted(os.path.realpath(r) for r in roots) + sorted(roots))

"""The build cache's layout in a --cache-dir, and the hand-over of sandboxed candidates' builds
(the trusted side: kcv.sandbox calls publish and restore; the workers' side, which keys and
fills the entries, is kcv.worker.buildcache, docs/08_audit.md §6 "Builds").

    builds/<key>/                    one entry per role, code text and toolchain
    builds/<key>/kcv-build.json      written once a load of the key succeeded
    candidates/<source>/<key>/       sandboxed candidates' entries, published by kcv

Sandboxed candidates build into their kernel's scratch, which dies with the kernel. So that a
re-run, another shape or another row of the same candidate code builds nothing, kcv (outside
the sandbox) publishes the scratch's finished entries when the kernel ends (publish) and copies
them into the next scratch of the same code before its sandbox starts (restore), at the same
path inside, mtimes kept, so ninja sees them up to date. Published entries are filed under the
SHA-256 of the candidate's own code text, computed by kcv, whatever the candidate wrote: a
candidate that plants a poisoned artefact in its scratch reaches only later runs of its own
code text, never another candidate or a reference. Only regular files travel (no links), read
through directory descriptors without following links, up to PUBLISH_LIMIT bytes per entry
and PUBLISH_ENTRIES entries per kernel.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tempfile

MARKER = "kcv-build.json"
PUBLISH_LIMIT = 1 << 30  # bytes of one published entry
PUBLISH_ENTRIES = 4  # entries one scratch may publish (a kernel's loads share one toolchain)
_KEY = re.compile(r"^[0-9a-f]{32}$")


def source_key(code: str) -> str:
    """The directory published entries of this candidate code text live under."""
    return hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def entry_dir(cache_dir: str, build_key: str) -> str:
    return os.path.join(cache_dir, "builds", build_key)


def is_built(entry: str) -> bool:
    return os.path.isfile(os.path.join(entry, MARKER))


class _TooLarge(Exception):
    pass


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _copy_tree(src_fd: int, dst: str, budget: list) -> None:
    """Copies the regular files and directories under the open directory `src_fd` into `dst`
    (created), mtimes kept; links and special files are left out. Every name is opened
    relative to its directory's descriptor without following links, so a tree changed while it
    is copied cannot lead the copy outside it. budget[0]: bytes left; _TooLarge past it."""
    os.makedirs(dst, exist_ok=True)
    for entry in os.scandir(src_fd):
        st = os.stat(entry.name, dir_fd=src_fd, follow_symlinks=False)
        out = os.path.join(dst, entry.name)
        if stat.S_ISDIR(st.st_mode):
            fd = os.open(entry.name, _DIR_FLAGS, dir_fd=src_fd)
            try:
                _copy_tree(fd, out, budget)
            finally:
                os.close(fd)
        elif stat.S_ISREG(st.st_mode):
            fd = os.open(entry.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=src_fd)
            with os.fdopen(fd, "rb") as f, open(out, "wb") as g:
                while chunk := f.read(1 << 20):
                    budget[0] -= len(chunk)
                    if budget[0] < 0:
                        raise _TooLarge(out)
                    g.write(chunk)
                st = os.fstat(f.fileno())
            os.chmod(out, stat.S_IMODE(st.st_mode) & 0o755 | 0o600)
            os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns))


def _copy_entry(parent: str, name: str, dst: str, limit: int, finished: bool) -> bool:
    """Copies `parent`/`name` into `dst` (see _copy_tree); with `finished`, only when it holds a
    kcv-build.json that is a regular file. False when it is not copied."""
    top = os.open(parent, _DIR_FLAGS)
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=top)
    finally:
        os.close(top)
    try:
        if finished:
            try:
                marker = os.stat(MARKER, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return False
            if not stat.S_ISREG(marker.st_mode):
                return False
        _copy_tree(fd, dst, [limit])
        return True
    finally:
        os.close(fd)


def publish(scratch: str, cache_dir: str, code: str, limit: int = PUBLISH_LIMIT) -> list:
    """Files each finished entry of a sandboxed candidate's `scratch` (its builds/<key> with a
    kcv-build.json) under cache_dir/candidates/<source_key(code)>/<key>, unless one is there:
    copied into a private directory, then renamed into place. Returns the keys published."""
    builds = os.path.join(scratch, "builds")
    try:
        names = sorted(os.listdir(builds)) if not os.path.islink(builds) else []
    except OSError:
        return []
    home = os.path.join(cache_dir, "candidates", source_key(code))
    done = []
    for k in names:
        if len(done) == PUBLISH_ENTRIES:
            break
        if not _KEY.match(k) or os.path.exists(os.path.join(home, k)):
            continue
        os.makedirs(home, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".publish-", dir=home)
        try:
            if _copy_entry(builds, k, tmp, limit, finished=True):
                os.rename(tmp, os.path.join(home, k))  # fails if another kernel published first
                done.append(k)
                continue
        except (OSError, _TooLarge):
            pass
        shutil.rmtree(tmp, ignore_errors=True)
    return done


def restore(cache_dir: str, code: str, scratch: str) -> list:
    """Copies the published entries of candidate code `code` into `scratch`/builds (where the
    candidate's load looks for them). Returns the keys restored."""
    home = os.path.join(cache_dir, "candidates", source_key(code))
    try:
        names = sorted(os.listdir(home))
    except OSError:
        return []
    done = []
    for k in names:
        if not _KEY.match(k):
            continue
        dst = os.path.join(scratch, "builds", k)
        try:
            _copy_entry(home, k, dst, PUBLISH_LIMIT, finished=False)
            done.append(k)
        except (OSError, _TooLarge):
            shutil.rmtree(dst, ignore_errors=True)
    return done

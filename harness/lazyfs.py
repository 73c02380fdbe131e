"""A data directory that can lose what was never fsynced (`--nemesis
lose-unfsynced`), and that can fill up (`--nemesis disk-full`).

A SIGKILL keeps the kernel's page cache, so a node that acknowledges before
it fsyncs is never caught by killing it. This FUSE filesystem (libfuse3
through mfusepy, mounted over a node's data directory) plays the page cache
instead: file data written through it stays in this process's memory until
the file is fsynced, and writing `lose` to the control file `CONTROL` drops
every write not fsynced yet, as a power loss would (Jepsen's lazyfs does the
same for its databases). The nemesis kills the node first, so nothing is in
flight when the writes go. Writing `full` makes it a full disk: a write or
truncation that would add a byte fails with ENOSPC (overwriting what a file
holds still works, as on a disk whose blocks are allocated) until `space`.

What it holds back is file data and sizes (writes and truncations); the
names in a directory (create, rename, unlink, mkdir) reach the backing
directory at once, as a journaling filesystem's metadata would. Reads see
what was written, fsynced or not. The kernel keeps no write-back cache of it
(every write reaches this process at once), caches no attributes or names,
and drops what it cached of a file's pages whenever the file is opened, so a
node started after the loss reads only what survived. Pages are cached
between opens (no `direct_io`) so that a node can map its files into memory,
as etcd's bbolt does with its database. File locks are the kernel's own.

    python -m harness.lazyfs --backing DIR --mount DIR
"""

from __future__ import annotations

import argparse
import errno
import os
import stat
import sys
import threading

import mfusepy

from harness.ownership import RUN_ENV, mount_source

PAGE = 4096
FALLOC_FL_KEEP_SIZE = 0x01
CONTROL = "/.splitbrain-lose"
# The name libfuse gives a file unlinked while a handle to it is still open (until that handle is released).
HIDDEN = ".fuse_hidden"
STAT_FIELDS = ("st_mode", "st_nlink", "st_size", "st_uid", "st_gid", "st_ino", "st_blocks")


class Unsynced:
    """A file's writes not fsynced yet: dirty pages, its size as written, and
    the lowest size it was truncated to since its last fsync (bytes of the
    backing file from there on are gone, unless written again)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.cut = size
        self.pages: dict[int, bytearray] = {}


class LazyFS(mfusepy.Operations):
    use_ns = True

    def __init__(self, backing: str) -> None:
        self.backing = os.path.realpath(backing)
        self.mutex = threading.RLock()
        self.unsynced: dict[str, Unsynced] = {}
        self.full = False

    def _path(self, path: str) -> str:
        return os.path.join(self.backing, path.lstrip("/"))

    def lose(self) -> None:
        """A power loss: every write not fsynced is gone."""
        with self.mutex:
            self.unsynced.clear()

    def control(self, command: bytes) -> None:
        """`lose`, `full` or `space`, written to `CONTROL`."""
        command = command.strip()
        with self.mutex:
            if command == b"lose":
                self.lose()
            elif command in (b"full", b"space"):
                self.full = command == b"full"
            else:
                raise mfusepy.FuseOSError(errno.EINVAL)

    def _pending(self, path: str, fh: int | None) -> Unsynced:
        """The file's writes not fsynced yet (none so far: its size as the backing file has it)."""
        pending = self.unsynced.get(path)
        if pending is None:
            size = os.fstat(fh).st_size if fh is not None else os.lstat(self._path(path)).st_size
            pending = self.unsynced[path] = Unsynced(size)
        return pending

    def _room(self, pending: Unsynced, end: int) -> None:
        """A full disk takes no byte past a file's end."""
        if self.full and end > pending.size:
            raise mfusepy.FuseOSError(errno.ENOSPC)

    # ------------------------------------------------------------------ names (passed through)

    def getattr(self, path: str, fh=None) -> dict:
        if path == CONTROL:
            return {"st_mode": stat.S_IFREG | 0o200, "st_nlink": 1, "st_size": 0}
        st = os.lstat(self._path(path))
        attrs = {name: getattr(st, name) for name in STAT_FIELDS}
        attrs.update(st_atime=st.st_atime_ns, st_mtime=st.st_mtime_ns, st_ctime=st.st_ctime_ns)
        with self.mutex:
            pending = self.unsynced.get(path)
            if pending is not None:
                attrs["st_size"] = pending.size
        return attrs

    def access(self, path: str, amode: int) -> int:
        if path != CONTROL and not os.access(self._path(path), amode):
            raise mfusepy.FuseOSError(errno.EACCES)
        return 0

    def readdir(self, path: str, fh) -> list[str]:
        """What the folder holds, less the files FUSE hid on their unlink: an
        unlink that overtakes the release of the file's last handle renames
        it `.fuse_hidden...` until that release, where a disk would list
        nothing (etcd's first start checks `.touch` made, closed and removed
        leaves its new WAL folder empty, and panicked on the hidden name)."""
        return [".", "..", *(name for name in os.listdir(self._path(path)) if not name.startswith(HIDDEN))]

    def mkdir(self, path: str, mode: int) -> int:
        os.mkdir(self._path(path), mode)
        return 0

    def rmdir(self, path: str) -> int:
        os.rmdir(self._path(path))
        return 0

    def unlink(self, path: str) -> int:
        os.unlink(self._path(path))
        with self.mutex:
            self.unsynced.pop(path, None)
        return 0

    def rename(self, old: str, new: str) -> int:
        """A file's unsynced writes go with it, and a directory's with every
        file under it (nats-server renames a stream's message folder away to
        purge it, then makes a new one of the same name); what the new name
        held is replaced."""
        os.rename(self._path(old), self._path(new))
        with self.mutex:
            for path in [p for p in self.unsynced if _under(p, new)]:
                del self.unsynced[path]
            for path in [p for p in self.unsynced if _under(p, old)]:
                self.unsynced[new + path[len(old) :]] = self.unsynced.pop(path)
        return 0

    def chmod(self, path: str, mode: int) -> int:
        os.chmod(self._path(path), mode)
        return 0

    def chown(self, path: str, uid: int, gid: int) -> int:
        os.chown(self._path(path), uid, gid)
        return 0

    def utimens(self, path: str, times=None) -> int:
        os.utime(self._path(path), ns=times)
        return 0

    def statfs(self, path: str) -> dict:
        st = os.statvfs(self._path(path))
        names = (
            "f_bavail",
            "f_bfree",
            "f_blocks",
            "f_bsize",
            "f_favail",
            "f_ffree",
            "f_files",
            "f_frsize",
            "f_namemax",
        )
        found = {name: getattr(st, name) for name in names}
        if self.full:
            found.update(f_bavail=0, f_bfree=0)
        return found

    def fsyncdir(self, path: str, datasync: int, fh) -> int:
        fd = os.open(self._path(path), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return 0

    # ------------------------------------------------------------------ data (held until fsync)

    def create(self, path: str, mode: int, fi=None) -> int:
        """A new file: nothing unsynced is its, whatever a file of that name held before."""
        with self.mutex:
            self.unsynced.pop(path, None)
        return os.open(self._path(path), os.O_CREAT | os.O_RDWR, mode)

    def open(self, path: str, flags: int) -> int:
        """The backing file, opened to read and write where it may be; an
        open with O_TRUNC cuts the file to nothing as a truncation does (the
        kernel leaves O_TRUNC to the filesystem: libfuse asks for that), so
        a file rewritten whole (Go's os.WriteFile) keeps no tail of before."""
        if path == CONTROL:
            return 0
        fh = os.open(self._path(path), os.O_RDWR if os.access(self._path(path), os.W_OK) else os.O_RDONLY)
        if flags & os.O_TRUNC:
            self.truncate(path, 0, fh)
        return fh

    def release(self, path: str, fh) -> int:
        if path != CONTROL:
            os.close(fh)
        return 0

    def flush(self, path: str, fh) -> int:
        return 0  # close(2) does not make data durable

    def _base(self, fh: int, pending: Unsynced, index: int) -> bytearray:
        """A page as the backing file has it, less what a truncation cut off."""
        start = index * PAGE
        raw = os.pread(fh, PAGE, start)[: max(0, pending.cut - start)]
        return bytearray(raw.ljust(PAGE, b"\0"))

    def read(self, path: str, size: int, offset: int, fh) -> bytes:
        with self.mutex:
            pending = self.unsynced.get(path)
            if pending is None:
                return os.pread(fh, size, offset)
            end = min(offset + size, pending.size)
            out = bytearray()
            for index in range(offset // PAGE, (end - 1) // PAGE + 1) if end > offset else ():
                page = pending.pages.get(index) or self._base(fh, pending, index)
                out += page[max(0, offset - index * PAGE) : end - index * PAGE]
            return bytes(out)

    def write(self, path: str, data: bytes, offset: int, fh) -> int:
        if path == CONTROL:
            self.control(data)
            return len(data)
        with self.mutex:
            pending = self._pending(path, fh)
            end = offset + len(data)
            self._room(pending, end)
            for index in range(offset // PAGE, (end - 1) // PAGE + 1):
                page = pending.pages.get(index) or self._base(fh, pending, index)
                start = index * PAGE
                lo, hi = max(offset, start), min(end, start + PAGE)
                page[lo - start : hi - start] = data[lo - offset : hi - offset]
                pending.pages[index] = page
            pending.size = max(pending.size, end)
        return len(data)

    def truncate(self, path: str, length: int, fh=None) -> int:
        with self.mutex:
            pending = self._pending(path, None)
            self._room(pending, length)
            pending.size = length
            pending.cut = min(pending.cut, length)
            for index in [i for i in pending.pages if i * PAGE >= length]:
                del pending.pages[index]
            last = pending.pages.get(length // PAGE)
            if last is not None:
                last[length % PAGE :] = bytes(PAGE - length % PAGE)
        return 0

    def fallocate(self, path: str, mode: int, offset: int, size: int, fh) -> int:
        """Space kept for a file (etcd preallocates its WAL): a file grows to
        `offset + size` as a truncation would grow it; with FALLOC_FL_KEEP_SIZE
        nothing is seen to change. Other modes (punching holes) are not offered."""
        if mode & ~FALLOC_FL_KEEP_SIZE:
            raise mfusepy.FuseOSError(errno.EOPNOTSUPP)
        with self.mutex:
            pending = self._pending(path, fh)
            self._room(pending, offset + size)
            if not mode & FALLOC_FL_KEEP_SIZE and offset + size > pending.size:
                self.truncate(path, offset + size, fh)
        return 0

    def fsync(self, path: str, datasync: int, fh) -> int:
        with self.mutex:
            pending = self.unsynced.pop(path, None)
            if pending is not None:
                os.ftruncate(fh, min(pending.cut, os.fstat(fh).st_size))
                for index, page in sorted(pending.pages.items()):
                    os.pwrite(fh, bytes(page[: max(0, min(PAGE, pending.size - index * PAGE))]), index * PAGE)
                os.ftruncate(fh, pending.size)
            os.fsync(fh)
        return 0


def _under(path: str, top: str) -> bool:
    """Whether `path` is `top` or lies in it."""
    return path == top or path.startswith(top.rstrip("/") + "/")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.lazyfs", description=__doc__.splitlines()[0])
    parser.add_argument("--backing", required=True, help="the directory that holds what was fsynced")
    parser.add_argument("--mount", required=True, help="where the node's data directory is to be")
    args = parser.parse_args(argv)
    for name in (args.backing, args.mount):
        if not os.path.isdir(name):
            print(f"lazyfs: {name}: not a directory", file=sys.stderr)
            return 2
    mfusepy.FUSE(
        LazyFS(args.backing),
        args.mount,
        foreground=True,
        attr_timeout=0,
        entry_timeout=0,
        negative_timeout=0,
        fsname=mount_source(os.environ.get(RUN_ENV, "")),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

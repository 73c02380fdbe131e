"""The lose-unfsynced filesystem's bindings, measured: the same file logic
(harness/lazyfs.py `LazyFS`) served through mfusepy (ctypes over libfuse3,
what the harness uses) and through pyfuse3 (Cython over libfuse3, with trio),
and a plain directory for scale. A client appends 200-byte records, each
fsynced (as the reference node's log is), then 5000 more without fsync.

pyfuse3 is built from source (PyPI has no wheel), so this installs Debian's
libfuse3-dev and pkg-config where missing, and pyfuse3 and trio into a
temporary virtualenv; nothing of it reaches the project.

    .venv/bin/python benchmarks/fuse_bindings.py [--records 5000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The same file logic as a pyfuse3 filesystem (inodes over one flat directory).
PYFUSE3_ADAPTER = '''\
"""The lazy filesystem's logic (harness/lazyfs.py LazyFS) under pyfuse3 instead of mfusepy: a flat directory."""
import errno, os, stat, sys
import pyfuse3, trio
sys.path.insert(0, sys.argv[3])
from harness.lazyfs import LazyFS

class Flat(pyfuse3.Operations):
    def __init__(self, backing):
        super().__init__()
        self.lazy = LazyFS(backing)
        self.names = {pyfuse3.ROOT_INODE: "/"}
        self.inodes = {"/": pyfuse3.ROOT_INODE}
        self.fh_path = {}

    def _inode(self, path):
        if path not in self.inodes:
            inode = len(self.names) + 1
            self.names[inode], self.inodes[path] = path, inode
        return self.inodes[path]

    async def getattr(self, inode, ctx=None):
        attrs = self.lazy.getattr(self.names[inode])
        entry = pyfuse3.EntryAttributes()
        for name in ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size"):
            setattr(entry, name, attrs[name])
        entry.st_atime_ns, entry.st_mtime_ns, entry.st_ctime_ns = attrs["st_atime"], attrs["st_mtime"], attrs["st_ctime"]
        entry.st_ino, entry.entry_timeout, entry.attr_timeout, entry.st_blksize = inode, 0, 0, 4096
        entry.st_blocks = (attrs["st_size"] + 511) // 512
        return entry

    async def lookup(self, parent, name, ctx=None):
        path = "/" + name.decode()
        if not os.path.lexists(self.lazy._path(path)):
            raise pyfuse3.FUSEError(errno.ENOENT)
        return await self.getattr(self._inode(path))

    async def create(self, parent, name, mode, flags, ctx):
        path = "/" + name.decode()
        fh = self.lazy.create(path, mode)
        self.fh_path[fh] = path
        return pyfuse3.FileInfo(fh=fh), await self.getattr(self._inode(path))

    async def open(self, inode, flags, ctx):
        fh = self.lazy.open(self.names[inode], flags)
        self.fh_path[fh] = self.names[inode]
        return pyfuse3.FileInfo(fh=fh)

    async def write(self, fh, off, buf):
        return self.lazy.write(self.fh_path[fh], buf, off, fh)

    async def read(self, fh, off, size):
        return self.lazy.read(self.fh_path[fh], size, off, fh)

    async def fsync(self, fh, datasync):
        self.lazy.fsync(self.fh_path[fh], datasync, fh)

    async def flush(self, fh):
        pass

    async def release(self, fh):
        os.close(fh)

if __name__ == "__main__":
    backing, mount = sys.argv[1], sys.argv[2]
    options = set(pyfuse3.default_options)
    options.add("fsname=pyfuse3-lazy")
    pyfuse3.init(Flat(backing), mount, options)
    try:
        trio.run(pyfuse3.main)
    finally:
        pyfuse3.close()
'''
# Appends of 200-byte records: each fsynced, then a run without fsync.
CLIENT = """\
import os, sys, time
path = sys.argv[1]; n = int(sys.argv[2]); record = b"x" * 200
fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
t = time.perf_counter()
for _ in range(n):
    os.write(fd, record); os.fsync(fd)
synced = n / (time.perf_counter() - t)
t = time.perf_counter()
for _ in range(n):
    os.write(fd, record)
os.fsync(fd)
plain = n / (time.perf_counter() - t)
os.close(fd)
print(f"{synced:.0f} {plain:.0f}")
"""


def serve(python: str, script: Path, backing: Path, mount: Path) -> subprocess.Popen:
    process = subprocess.Popen([python, str(script), str(backing), str(mount), str(ROOT)], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while not os.path.ismount(mount):
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"fuse_bindings: {script.name} did not mount")
        time.sleep(0.05)
    return process


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="splitbrain-fuse-"))
    if shutil.which("pkg-config") is None or subprocess.run(["pkg-config", "--exists", "fuse3"]).returncode:
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "libfuse3-dev", "pkg-config"], check=True, capture_output=True
        )
    subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True)
    subprocess.run([str(work / "venv" / "bin" / "pip"), "install", "-q", "pyfuse3", "trio", "mfusepy"], check=True)
    python = str(work / "venv" / "bin" / "python")
    (work / "pyfuse3_lazy.py").write_text(PYFUSE3_ADAPTER)
    (work / "mfusepy_lazy.py").write_text(
        "import sys, mfusepy\nsys.path.insert(0, sys.argv[3])\nfrom harness.lazyfs import LazyFS\n"
        "mfusepy.FUSE(LazyFS(sys.argv[1]), sys.argv[2], foreground=True, attr_timeout=0, entry_timeout=0,"
        " negative_timeout=0)\n"
    )
    (work / "client.py").write_text(CLIENT)
    print("| bindings | fsynced appends/s | appends/s, no fsync |")
    print("|---|---|---|")
    for name in ("mfusepy", "pyfuse3", "plain directory"):
        for repeat in range(args.repeats):
            backing, mount = work / f"{name}-{repeat}-backing", work / f"{name}-{repeat}-mount"
            backing.mkdir()
            mount.mkdir()
            process = None if name == "plain directory" else serve(python, work / f"{name}_lazy.py", backing, mount)
            try:
                target = (backing if process is None else mount) / "log"
                out = subprocess.run(
                    [sys.executable, str(work / "client.py"), str(target), str(args.records)],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout.split()
                print(f"| {name} | {out[0]} | {out[1]} |")
            finally:
                if process is not None:
                    subprocess.run(["fusermount3", "-u", "-z", str(mount)], check=False)
                    process.wait(10)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

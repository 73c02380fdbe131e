"""The lose-unfsynced filesystem: written then fsynced survives a loss,
written and not fsynced is gone, and a full disk takes no byte more (ENOSPC)
but lets what a file holds be overwritten; checked against a model of a page
cache over random writes, truncations, reopenings (with O_TRUNC or not),
fsyncs, losses and fillings, then mounted for real under the reference
quorum's own storage and rewritten whole."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import sys
import time

import mfusepy
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from harness.lazyfs import CONTROL, LazyFS
from targets.kraft.messages import Entry
from targets.kraft.storage import DataDir

SIZES = st.integers(0, 3 * 4096 + 100)


class PageCache(RuleBasedStateMachine):
    """LazyFS's operations, called as FUSE would, against a model: what the
    file reads (written) and what a loss would leave (durable)."""

    def __init__(self) -> None:
        super().__init__()
        import tempfile

        self.dir = tempfile.mkdtemp(prefix="lazyfs-model-")
        self.fs = LazyFS(self.dir)
        self.fs.create("/log", 0o644)
        self.fh = self.fs.open("/log", os.O_RDWR)
        self.written = b""
        self.durable = b""
        self.full = False

    def _refused(self, end: int) -> bool:
        """On a full disk, what would add a byte fails with ENOSPC and changes nothing."""
        return self.full and end > len(self.written)

    @rule(offset=SIZES, data=st.binary(min_size=1, max_size=5000))
    def write(self, offset, data):
        if self._refused(offset + len(data)):
            with pytest.raises(mfusepy.FuseOSError) as refused:
                self.fs.write("/log", data, offset, self.fh)
            assert refused.value.errno == errno.ENOSPC
            return
        self.fs.write("/log", data, offset, self.fh)
        grown = self.written.ljust(offset, b"\0")
        self.written = grown[:offset] + data + grown[offset + len(data) :]

    @rule(length=SIZES)
    def truncate(self, length):
        if self._refused(length):
            with pytest.raises(mfusepy.FuseOSError):
                self.fs.truncate("/log", length, self.fh)
            return
        self.fs.truncate("/log", length, self.fh)
        self.written = self.written[:length].ljust(length, b"\0")

    @rule(offset=SIZES, size=st.integers(1, 5000), keep_size=st.booleans())
    def fallocate(self, offset, size, keep_size):
        if self._refused(offset + size):
            with pytest.raises(mfusepy.FuseOSError):
                self.fs.fallocate("/log", int(keep_size), offset, size, self.fh)
            return
        self.fs.fallocate("/log", int(keep_size), offset, size, self.fh)
        if not keep_size:
            self.written = self.written.ljust(offset + size, b"\0")

    @rule(truncating=st.booleans())
    def reopen(self, truncating):
        """Opened again, as a node that rewrites a file whole opens it (O_TRUNC)."""
        if truncating and self._refused(0):
            return
        self.fs.release("/log", self.fh)
        self.fh = self.fs.open("/log", os.O_RDWR | (os.O_TRUNC if truncating else 0))
        if truncating:
            self.written = b""

    @rule()
    def fsync(self):
        self.fs.fsync("/log", 0, self.fh)
        self.durable = self.written

    @rule()
    def lose(self):
        self.fs.write(CONTROL, b"lose", 0, 0)
        self.written = self.durable

    @rule(full=st.booleans())
    def fill(self, full):
        self.fs.write(CONTROL, b"full" if full else b"space", 0, 0)
        self.full = full

    @invariant()
    def reads_what_was_written_and_the_disk_holds_what_was_fsynced(self):
        assert self.fs.getattr("/log")["st_size"] == len(self.written)
        assert self.fs.read("/log", len(self.written) + 10, 0, self.fh) == self.written
        if "/log" not in self.fs.unsynced:
            with open(os.path.join(self.dir, "log"), "rb") as f:
                assert f.read() == self.durable

    def teardown(self):
        self.fs.release("/log", self.fh)
        # The model's folder goes with it (each example made one under /tmp, and left it).
        shutil.rmtree(self.dir, ignore_errors=True)


TestPageCache = PageCache.TestCase
TestPageCache.settings = settings(max_examples=200, stateful_step_count=25, deadline=None)


def test_a_renamed_folder_keeps_its_files_unsynced_writes(tmp_path):
    """nats-server purges a stream's messages by renaming their folder away
    and making a new one of the same name. The files under a renamed folder
    read what was written to them (and lose it on a power loss, as before),
    a new file where an old one was reads nothing of it, and a file renamed
    over another takes none of the other's writes. Before, unsynced writes
    stayed with the old paths: a renamed file read empty, and a new file of
    the old name read the old one's bytes (NATS's metadata then lost a
    stream, a false alarm in the 2.15.1 moonshot)."""
    fs = LazyFS(str(tmp_path))
    fs.mkdir("/msgs", 0o755)
    fh = fs.create("/msgs/1.blk", 0o644)
    fs.write("/msgs/1.blk", b"written, never fsynced", 0, fh)
    os.close(fh)
    fs.rename("/msgs", "/msgs.purge")
    old = fs.open("/msgs.purge/1.blk", os.O_RDONLY)
    assert fs.read("/msgs.purge/1.blk", 100, 0, old) == b"written, never fsynced"
    fs.mkdir("/msgs", 0o755)
    new = fs.create("/msgs/1.blk", 0o644)
    assert fs.read("/msgs/1.blk", 100, 0, new) == b"" and fs.getattr("/msgs/1.blk")["st_size"] == 0
    fs.write("/msgs/1.blk", b"new", 0, new)
    fs.rename("/msgs/1.blk", "/msgs.purge/1.blk")
    assert fs.read("/msgs.purge/1.blk", 100, 0, old) == b"new"
    fs.write(CONTROL, b"lose", 0, 0)
    assert fs.read("/msgs.purge/1.blk", 100, 0, old) == b""


def test_a_file_fuse_hid_on_its_unlink_is_not_listed(tmp_path):
    """libfuse renames a file unlinked before its last handle's release to
    `.fuse_hidden...` until the release comes; a disk lists nothing there.
    etcd 3.4's first start found one in the WAL folder it had just made
    (`expected .../wal.tmp to be empty, got [.fuse_hidden0000000800000001]`)
    and panicked."""
    fs = LazyFS(str(tmp_path))
    (tmp_path / "wal.tmp").mkdir()
    (tmp_path / "wal.tmp" / ".fuse_hidden0000000800000001").write_bytes(b"")
    (tmp_path / "wal.tmp" / "0.wal").write_bytes(b"")
    assert sorted(fs.readdir("/wal.tmp", None)) == [".", "..", "0.wal"]


def test_mounted_under_the_reference_quorums_storage(tmp_path):
    """The node's own DataDir on the mount: fsynced records survive a loss, unfsynced ones do not."""
    backing, mount = tmp_path / "backing", tmp_path / "data"
    backing.mkdir()
    mount.mkdir()
    fs = subprocess.Popen(
        [sys.executable, "-m", "harness.lazyfs", "--backing", str(backing), "--mount", str(mount)],
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 10
        while not os.path.ismount(mount):
            assert fs.poll() is None and time.monotonic() < deadline, (
                fs.stderr.read() if fs.poll() is not None else "not mounted"
            )
            time.sleep(0.05)
        data = DataDir(mount)
        data.write_log(0, [Entry(1, {"op": "append", "value": 1})])  # fsynced
        data.write_log(1, [Entry(1, {"op": "append", "value": 2})], sync=False)
        data.close()  # as a crash leaves it
        written = (mount / "log.bin").stat().st_size
        assert written > (backing / "log.bin").stat().st_size  # the second record only in memory
        (mount / CONTROL.lstrip("/")).write_bytes(b"lose")
        again = DataDir(mount)
        assert [e.data["value"] for e in again.entries] == [1]
        assert again.unclean and again.generation == 2
        (mount / CONTROL.lstrip("/")).write_bytes(b"full")
        with pytest.raises(OSError) as full:
            again.write_log(1, [Entry(1, {"op": "append", "value": 3})])
        assert full.value.errno == errno.ENOSPC and os.statvfs(mount).f_bavail == 0
        (mount / CONTROL.lstrip("/")).write_bytes(b"space")
        with contextlib.suppress(OSError):  # the write that failed is still buffered: closing tries it again
            again.close()
        # A file rewritten whole keeps nothing of before (it kept the old tail: NATS read its blocks as
        # "malformed or corrupt" and turned JetStream off), and appends land at the end.
        rewritten = mount / "meta.inf"
        rewritten.write_bytes(b"x" * 100)
        rewritten.write_bytes(b"y" * 10)
        with open(rewritten, "ab") as appended:
            appended.write(b"z")
        assert rewritten.read_bytes() == b"y" * 10 + b"z"
    finally:
        subprocess.run(["fusermount3", "-u", "-z", str(mount)], check=False)
        fs.wait(10)

"""The page cache: reading files into it, evicting them from it, and telling how much of a file
it holds (``mincore``)."""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import time
from pathlib import Path
from typing import Any

MIB = 1024 * 1024
READ_CHUNK = 8 * MIB


def read_file(path: Path) -> int:
    """Reads the whole file with 8 MiB reads (warms the page cache); returns its size."""
    total = 0
    buffer = bytearray(READ_CHUNK)
    view = memoryview(buffer)
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(view):
            total += n
    return total


def warm(path: Path) -> None:
    """Reads every file of ``path`` (a file, or a directory such as a Lance dataset) whole."""
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        read_file(file)


def _libc() -> Any:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    ]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    return libc


def resident_fraction(path: Path) -> float | None:
    """Fraction of the file's pages in the page cache (mincore), or None where that cannot be told."""
    size = path.stat().st_size
    if size == 0:
        return 0.0
    try:
        libc = _libc()
        fd = os.open(path, os.O_RDONLY)
    except (OSError, AttributeError):
        return None
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr is None or addr == ctypes.c_void_p(-1).value:
            return None
        try:
            pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
            vec = (ctypes.c_ubyte * pages)()
            if libc.mincore(ctypes.c_void_p(addr), size, vec) != 0:
                return None
            return sum(b & 1 for b in bytes(vec)) / pages
        finally:
            libc.munmap(ctypes.c_void_p(addr), size)
    finally:
        os.close(fd)


def evict(path: Path, method: str | None) -> None:
    """Drops the file from the page cache with ``method`` ("fadvise" or "drop_caches")."""
    if method == "fadvise":
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    elif method == "drop_caches":
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")


def detect_cold_method(directory: Path) -> dict[str, Any]:
    """Finds a way to make a file cold here: posix_fadvise, else drop_caches; checks it with mincore
    (or, without mincore, by a read at least 3 times slower once evicted)."""
    probe = directory / ".cold_probe"
    size = 64 * MIB
    with open(probe, "wb") as f:
        chunk = os.urandom(MIB)
        for _ in range(size // MIB):
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
    notes = []
    try:
        for method in ("fadvise", "drop_caches"):
            if method == "fadvise" and not hasattr(os, "posix_fadvise"):
                notes.append("os.posix_fadvise is missing")
                continue
            read_file(probe)
            start = time.perf_counter()
            read_file(probe)
            warm_seconds = time.perf_counter() - start
            try:
                evict(probe, method)
            except OSError as e:
                notes.append(f"{method}: {e}")
                continue
            resident = resident_fraction(probe)
            start = time.perf_counter()
            read_file(probe)
            cold_seconds = time.perf_counter() - start
            works = resident < 0.05 if resident is not None else cold_seconds > 3 * warm_seconds
            notes.append(
                f"{method}: {'works' if works else 'does not evict'} (resident after: {resident}, "
                f"warm read {size / warm_seconds / 1e9:.2f} GB/s, "
                f"after eviction {size / cold_seconds / 1e9:.2f} GB/s)"
            )
            if works:
                return {"possible": True, "method": method, "notes": notes}
        return {"possible": False, "method": None, "notes": notes}
    finally:
        probe.unlink(missing_ok=True)

"""Files and directories at any location — local paths, ``file://`` and object store URLs —
through the engine's stores, so that the data source lists, commits and cleans up the same way
everywhere. Locations are strings; an object store has no directories, only prefixes, so a
"directory" is a location with objects below it.

Everything here is plain data and pickles to the executors: a :class:`Storage` holds the
location's storage options, never a native handle.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from typing import Any

from .. import _looseleaf
from ..exceptions import InvalidArgumentError, UnsupportedError

#: Characters that make a path a glob.
GLOB_CHARACTERS = "*?["


def normalize(path: str) -> str:
    """A location the tasks can reach: an absolute local path (``~`` expanded, ``file://``
    decoded), or an object store URL as written. ``memory://`` is refused: Spark tasks run in
    other processes."""
    if not isinstance(path, str) or not path:
        raise InvalidArgumentError(f"a looseleaf dataset path must be a non-empty string, got {path!r}")
    if "://" not in path:
        return os.path.abspath(os.path.expanduser(path))
    # Glob characters are not URL characters: the engine checks the location without them.
    checked = "".join("x" if c in GLOB_CHARACTERS else c for c in path)
    try:
        scheme, parsed = _looseleaf.parse_location(checked)
    except UnsupportedError as e:
        # The engine's message names the location, without a query string that may be a token.
        raise InvalidArgumentError(str(e)) from None
    if scheme == "memory":
        raise InvalidArgumentError(f"{path}: Spark tasks run in other processes and cannot read memory://")
    if scheme == "file":
        if has_glob(path):
            raise InvalidArgumentError(f"{path}: write a local glob as a path, not a file:// URL")
        return os.path.abspath(parsed)
    return path


def has_glob(path: str) -> bool:
    return any(c in path for c in GLOB_CHARACTERS)


def is_remote(location: str) -> bool:
    return "://" in location


@dataclass(frozen=True)
class Storage:
    """The storage options of a dataset's locations (``storage.*`` options of the data source),
    and the operations on its files. The options are never shown (``repr`` hides them)."""

    options: dict[str, str] = field(default_factory=dict, repr=False)

    def join(self, directory: str, name: str) -> str:
        if is_remote(directory):
            return _looseleaf.child_location(directory, name)
        return os.path.join(directory, name)

    def name(self, location: str) -> str:
        return location.rstrip("/").rsplit("/", 1)[-1] if is_remote(location) else os.path.basename(location)

    def list(self, directory: str, *, recursive: bool = False) -> list[tuple[str, int]]:
        """``(location, size)`` of the files in ``directory`` (below it, with ``recursive``),
        sorted; a directory that does not exist holds none."""
        return [
            tuple(o)
            for o in _looseleaf.list_objects(directory, storage_options=self.options, recursive=recursive)
        ]

    def glob(self, pattern: str) -> list[str]:
        """The files a glob matches (``*``, ``?``, ``[...]`` within a name; ``**`` across
        directories), sorted."""
        parts = pattern.split("/") if is_remote(pattern) else pattern.split(os.sep)
        fixed = next(i for i, part in enumerate(parts) if has_glob(part))
        base = ("/" if is_remote(pattern) else os.sep).join(parts[:fixed])
        recursive = len(parts) - fixed > 1 or "**" in pattern
        files = [location for location, _ in self.list(base, recursive=recursive)]
        return [f for f in files if fnmatch.fnmatchcase(f, pattern)]

    def is_file(self, location: str) -> bool:
        if not is_remote(location):
            return os.path.isfile(location)
        return bool(_looseleaf.object_exists(location, storage_options=self.options))

    def exists(self, location: str) -> bool:
        """Whether ``location`` is a file, or a directory holding files."""
        if not is_remote(location):
            return os.path.exists(location)
        return self.is_file(location) or bool(self.list(location))

    def read_bytes(self, location: str) -> bytes:
        return _looseleaf.read_object(location, storage_options=self.options)

    def write_bytes(self, location: str, data: bytes) -> None:
        """Writes a whole file, visible at once or not at all."""
        _looseleaf.write_object(location, data, storage_options=self.options)

    def delete(self, location: str) -> None:
        _looseleaf.delete_object(location, storage_options=self.options)

    def open_kwargs(self) -> dict[str, Any]:
        """What :func:`looseleaf.open` and :class:`looseleaf.FileWriter` take to reach the
        store."""
        return {"storage_options": self.options} if self.options else {}

"""Type stubs of the native module. The public API is in ``looseleaf.reader`` and
``looseleaf.writer``; these classes are what they wrap."""

from collections.abc import Sequence
from os import PathLike
from typing import Any

__version__: str
DEFAULT_BATCH_SIZE: int
DEFAULT_PAGE_SIZE: int
READ_OPTION_NAMES: list[str]
ENCODINGS: list[str]

class ArrowSchema:
    """A schema exported through the Arrow PyCapsule interface."""

    def __arrow_c_schema__(self) -> object: ...

class ReadStream:
    """The batches of a read, exported once through ``__arrow_c_stream__``."""

    @property
    def schema(self) -> ArrowSchema: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...
    def next_batch(self) -> Batches | None:
        """The next batch as a one-batch stream, ``None`` at the end; errors raise looseleaf's
        exceptions."""
    def io_stats(self) -> dict[str, float]:
        """Counters of the read's I/O scheduler (requests, indirect_requests, reads, bytes_read,
        peak_reserved_bytes, bypassed_reads, urgent_reads) and its timings (scheduling_seconds,
        io_wait_seconds, decode_seconds summed over parallel tasks, batches)."""

class Batches:
    """Record batches already decoded, exported once through ``__arrow_c_stream__``."""

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...

class FileReader:
    """An open looseleaf file. Every read takes the read options by name (``batch_size``,
    ``io_depth``, ``io_buffer_bytes``, ``dictionary_columns``, ``decode_parallelism``,
    ``string_view``)."""

    @staticmethod
    def open(
        path: str | PathLike[str], *, storage_options: dict[str, Any] | None = None, **options: Any
    ) -> FileReader: ...
    @property
    def schema(self) -> ArrowSchema: ...
    @property
    def num_rows(self) -> int: ...
    @property
    def num_columns(self) -> int: ...
    @property
    def location(self) -> str: ...
    @property
    def options(self) -> dict[str, Any]: ...
    def metadata(self) -> dict[str, Any]: ...
    def stream(
        self,
        columns: Sequence[str] | None = None,
        start: int | None = None,
        num_rows: int | None = None,
        **options: Any,
    ) -> ReadStream: ...
    def read_table(
        self,
        columns: Sequence[str] | None = None,
        start: int | None = None,
        num_rows: int | None = None,
        **options: Any,
    ) -> Batches: ...
    def take(self, indices: object, columns: Sequence[str] | None = None, **options: Any) -> Batches: ...
    def count_rows(self, start: int | None = None, num_rows: int | None = None, **options: Any) -> int: ...
    def plan(
        self,
        columns: Sequence[str] | None = None,
        start: int | None = None,
        num_rows: int | None = None,
        indices: object | None = None,
        **options: Any,
    ) -> dict[str, Any]: ...

class IoBudget:
    """A byte budget and an I/O depth shared by every read it is given to (``io_budget=``).

    The reads sharing it hold at most the budget, plus each read's own minimum progress (the
    pages its decoders wait for) and batches in flight, plus a small constant.
    """

    def __init__(self, bytes: int | str, depth: int | None = None) -> None: ...
    @property
    def bytes(self) -> int: ...
    @property
    def depth(self) -> int | None: ...
    @property
    def active_reads(self) -> int: ...
    def stats(self) -> dict[str, int]: ...

class Trace:
    """A recorder of a read's I/O requests, scheduling, decode tasks and batches (``trace=``
    of any read method). ``looseleaf.Trace`` subclasses it and adds the pictures."""

    def __init__(self) -> None: ...
    def chrome_json(self) -> str:
        """Everything recorded so far, in Chrome's Trace Event Format (a JSON string)."""
    def snapshot(self) -> dict[str, Any]:
        """``{"reads": [...], "spans": [...], "budget": [...], "info": {...}}``, times in µs
        since the trace was created."""

def set_io_budget(budget: IoBudget | None) -> None:
    """Makes ``budget`` the budget of every read started from now on without one."""

def get_io_budget() -> IoBudget | None:
    """The process-wide budget, if one is set."""

def read_options(**options: Any) -> dict[str, Any]:
    """Checks read options given by name; returns the ones set, normalised."""

def read_option_name(spelling: str) -> str | None:
    """The read option ``spelling`` names (``batchSize`` is ``batch_size``), or ``None``."""

def parse_size(text: str) -> int:
    """A size in bytes from text such as ``134217728``, ``128m`` or ``64 MiB``."""

def parse_location(text: str) -> tuple[str, str]:
    """``(scheme, path)`` of a location: ``("file", local path)``, ``("memory", name)``, or the
    store's scheme (``s3``, ``gs``, ``az``, ``http``) and the URL."""

class FileWriter:
    """Writes record batches to a looseleaf file; nothing is visible until ``finish``."""

    def __init__(
        self,
        path: str | PathLike[str],
        schema: object,
        *,
        page_size: int | None = None,
        compression: str | None = None,
        compression_level: int | None = None,
        encodings: dict[str, tuple[str | None, list[str]]] | None = None,
        statistics: bool = True,
        checksums: bool = True,
        zone_map_rows: int | None = None,
        storage_options: dict[str, Any] | None = None,
    ) -> None: ...
    @property
    def schema(self) -> ArrowSchema: ...
    @property
    def num_rows(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    def write_batch(self, batch: object) -> None: ...
    def write_stream(self, data: object) -> None: ...
    def finish(self) -> dict[str, int]: ...
    def abort(self) -> None: ...

class WriteJob:
    """A job writing a dataset directory (``looseleaf::dataset::WriteJob``); pickles by its
    directory, id, mode, storage options and partition columns."""

    def __init__(
        self,
        directory: str,
        id: str,
        overwrite: bool,
        storage_options: dict[str, Any] | None = None,
        partition_by: list[str] | None = None,
    ) -> None: ...
    @staticmethod
    def begin(
        directory: str,
        schema: object,
        overwrite: bool,
        *,
        storage_options: dict[str, Any] | None = None,
        partition_by: list[str] | None = None,
    ) -> WriteJob: ...
    @property
    def id(self) -> str: ...
    @property
    def partition_by(self) -> list[str]: ...
    def task_file(self, partition: int, attempt: int) -> str: ...
    def task_writer(
        self,
        partition: int,
        attempt: int,
        schema: object,
        *,
        page_size: int | None = None,
        compression: str | None = None,
    ) -> TaskWriter: ...
    def location_of(self, name: str) -> str: ...
    def keep_task_file(self, name: str) -> bool: ...
    def commit(self, files: list[str], schema: object) -> None: ...
    def abort(self) -> None: ...

class Dataset:
    """Many looseleaf files read as one table (``looseleaf::dataset::Dataset``)."""

    @staticmethod
    def open(
        source: str | list[str],
        *,
        storage_options: dict[str, Any] | None = None,
        partitioning: str | object | None = None,
        **options: Any,
    ) -> Dataset: ...
    @property
    def schema(self) -> ArrowSchema: ...
    @property
    def partition_schema(self) -> ArrowSchema: ...
    @property
    def files(self) -> list[str]: ...
    @property
    def file_rows(self) -> list[int]: ...
    @property
    def num_rows(self) -> int: ...
    def file_partitions(self) -> Batches: ...
    def stream(
        self,
        columns: Sequence[str] | None = None,
        start: int | None = None,
        num_rows: int | None = None,
        **options: Any,
    ) -> ReadStream: ...
    def read_table(
        self,
        columns: Sequence[str] | None = None,
        start: int | None = None,
        num_rows: int | None = None,
        **options: Any,
    ) -> Batches: ...
    def take(self, indices: Any, columns: Sequence[str] | None = None, **options: Any) -> Batches: ...
    def count_rows(self, start: int | None = None, num_rows: int | None = None, **options: Any) -> int: ...
    def plan(
        self,
        columns: Sequence[str] | None = None,
        start: int | None = None,
        num_rows: int | None = None,
        indices: object | None = None,
        **options: Any,
    ) -> list[dict[str, Any]]: ...

def write_dataset(
    data: object,
    uri: str,
    *,
    partition_by: list[str] | None = None,
    max_rows_per_file: int | None = None,
    max_open_files: int | None = None,
    existing_data: str = "error",
    storage_options: dict[str, Any] | None = None,
    **writer_options: Any,
) -> list[str]:
    """Writes Arrow data as a dataset directory; returns the files written."""

class TaskWriter:
    """The files of one task attempt (``looseleaf::dataset::TaskWriter``): one, or one per
    ``key=value`` partition directory of the job's partition columns."""

    def write_batch(self, batch: object) -> None: ...
    def finish(self) -> list[tuple[str, int, int]]:
        """``(name, rows, bytes)`` of each file the job may commit (names below the directory)."""
    def abort(self) -> None: ...

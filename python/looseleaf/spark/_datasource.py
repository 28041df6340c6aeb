"""The ``looseleaf`` Spark data source (PySpark's Python Data Source API, Spark 4.0+).

Where each piece runs: ``DataSource.schema``, ``DataSource.reader``/``writer``,
``DataSourceReader.partitions`` and ``DataSourceWriter.commit``/``abort`` run on the driver (in
Python workers the JVM starts); ``DataSourceReader.read`` and ``DataSourceWriter.write`` run in
the tasks. Readers and writers are pickled in between, so they hold plain data only, and native
looseleaf handles are opened inside ``read``/``write``.

Reading: see :mod:`._dataset` for files and partitioning. Writing is a two-phase commit: each
task writes one file under ``<dir>/_temporary/<job id>/`` (hidden from readers, and made
visible by the looseleaf writer only once complete); the driver's ``commit`` moves the files of
the successful tasks into ``<dir>`` and writes ``<dir>/_schema.leaf``, and ``abort`` deletes the
job's staging directory. A failed job therefore leaves no file a reader would pick up.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from ..exceptions import InvalidArgumentError, LooseleafIOError, NotFoundError, SchemaMismatchError
from ..reader import FileReader
from ..reader import open as open_file
from ..writer import FileWriter, write_table
from ._dataset import (
    DATA_SUFFIX,
    SCHEMA_FILE,
    TEMPORARY_DIR,
    FileInfo,
    FileRange,
    file_info,
    list_files,
    local_path,
    open_files,
    plan_partitions,
    projected_schema,
    schema_file,
)
from ._filters import FilterPlan
from ._options import ReadOptions, WriteOptions
from ._types import arrow_to_spark_schema, as_nullable, cast_batch, spark_to_arrow_schema

NAME = "looseleaf"


class LooseleafPartition(InputPartition):
    """One Spark input partition: row ranges of one or more files."""

    def __init__(self, ranges: tuple[FileRange, ...]) -> None:
        super().__init__(ranges)
        self.ranges = ranges


@dataclass(frozen=True)
class ReadPlan:
    """What a read will do, computed as the data source computes it (without Spark): the Spark
    schema, the ``columns`` projection (``None``: every column), the partitions and the files."""

    schema: StructType
    columns: list[str] | None
    partitions: list[list[FileRange]]
    files: list[FileInfo]


def dataset_schema(options: ReadOptions) -> StructType:
    """The Spark schema of a dataset: from the writer's ``_schema.leaf`` of a directory, else
    from its first data file, narrowed to the ``columns`` option."""
    source = schema_file(options.paths)
    if source is None:
        files = list_files(options.paths, recursive=options.recursive)
        if not files:
            raise NotFoundError(
                f"{', '.join(options.paths)}: no looseleaf files ({SCHEMA_FILE} or *{DATA_SUFFIX})"
            )
        source = files[0]
    return arrow_to_spark_schema(projected_schema(open_file(source), options.columns))


def _spark_string(schema: StructType) -> str:
    return ", ".join(f"{f.name}: {f.dataType.simpleString()}" for f in schema.fields)


class _FileChecker:
    """Checks that a file has the columns of the read with the declared types, and measures
    it. Cheap: only the projected columns' metadata is read."""

    def __init__(self, schema: StructType, columns: list[str]) -> None:
        self.expected = _spark_string(as_nullable(schema))
        self.columns = columns

    def __call__(self, reader: FileReader) -> FileInfo:
        found = _spark_string(arrow_to_spark_schema(projected_schema(reader, self.columns)))
        if found != self.expected:
            raise SchemaMismatchError(
                f"{reader.path}: the columns read have types ({found}), but the dataset's schema is "
                f"({self.expected}); the files of a dataset must agree on the types of the columns read"
            )
        return file_info(reader, self.columns)


def plan_read(options: ReadOptions, schema: StructType | None = None) -> ReadPlan:
    """Lists, opens and checks the files of a read and splits them into partitions."""
    schema = schema if schema is not None else dataset_schema(options)
    columns = options.columns or schema.fieldNames()
    files = list_files(options.paths, recursive=options.recursive)
    infos = open_files(files, _FileChecker(schema, columns))
    return ReadPlan(schema, options.columns, plan_partitions(infos, options.partitioning), infos)


class LooseleafReader(DataSourceReader):
    """Reads row ranges of looseleaf files as Arrow batches in the declared schema."""

    def __init__(self, options: ReadOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        # The looseleaf projection: the columns option (nested paths allowed), else the
        # declared (possibly user-given) schema's top-level columns.
        self.columns = options.columns or schema.fieldNames()
        self.filters = FilterPlan()

    def partitions(self) -> list[InputPartition]:
        plan = plan_read(self.options, self.schema)
        # Ranges no predicate of self.filters can match are to be dropped here, once the
        # engine evaluates predicates against its statistics (it does not yet).
        return [LooseleafPartition(tuple(ranges)) for ranges in plan.partitions]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        # Exactly what PySpark checks the batches against.
        target = to_arrow_schema(self.schema, timezone="UTC")
        readers: dict[str, FileReader] = {}
        for r in getattr(partition, "ranges", None) or ():
            reader = readers.get(r.path)
            if reader is None:
                reader = readers[r.path] = open_file(r.path, **self.options.engine)
            for batch in reader.read_range(r.start, r.count, self.columns):
                yield cast_batch(batch, target, source=r.path)


class LooseleafFilteringReader(LooseleafReader):
    """A reader that receives Spark's filters (Spark 4.1+ with
    ``spark.sql.python.filterPushdown.enabled``). It keeps them for page skipping and returns
    them all to Spark: see :mod:`._filters`. PySpark refuses to plan a read with a reader that
    overrides ``pushFilters`` while that configuration is off, hence a separate class."""

    def pushFilters(self, filters: list[Any]) -> list[Any]:
        return self.filters.push(filters)


@dataclass
class LooseleafCommitMessage(WriterCommitMessage):
    """What one write task did: the staged file (``None`` if the task had no rows) and the name
    it takes when the job commits."""

    staged_path: str | None
    final_name: str
    num_rows: int
    num_bytes: int


class LooseleafWriter(DataSourceArrowWriter):
    """Writes one ``.leaf`` file per task, committed when the job commits."""

    def __init__(self, options: WriteOptions, schema: StructType, overwrite: bool) -> None:
        self.directory = local_path(options.path)
        self.page_size = options.page_size
        self.compression = options.compression
        self.overwrite = overwrite
        self.job_id = uuid.uuid4().hex
        self.arrow_schema = spark_to_arrow_schema(schema)
        if os.path.exists(self.directory) and not os.path.isdir(self.directory):
            raise InvalidArgumentError(f"{self.directory}: not a directory")
        if not overwrite:
            self._check_append(schema)
        # Made here, on the driver, and never by the tasks: once abort() has removed it, a task
        # still running cannot stage a file any more (it fails instead of leaving litter).
        os.makedirs(self.staging_dir)

    @property
    def staging_dir(self) -> str:
        return os.path.join(self.directory, TEMPORARY_DIR, self.job_id)

    def _check_append(self, schema: StructType) -> None:
        existing = schema_file([self.directory])
        if existing is None:
            files = list_files([self.directory]) if os.path.isdir(self.directory) else []
            existing = files[0] if files else None
        if existing is None:
            return
        have = _spark_string(arrow_to_spark_schema(open_file(existing).schema))
        new = _spark_string(as_nullable(schema))
        if have != new:
            raise SchemaMismatchError(
                f"{self.directory}: cannot append rows of schema ({new}) to a dataset of schema ({have})"
            )

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LooseleafCommitMessage:
        from pyspark import TaskContext

        context = TaskContext.get()
        partition = context.partitionId() if context is not None else 0
        attempt = f"{context.attemptNumber()}-{context.taskAttemptId()}" if context is not None else "0"
        final_name = f"part-{partition:05d}-{self.job_id}{DATA_SUFFIX}"
        staged = os.path.join(
            self.staging_dir, f"part-{partition:05d}-{attempt}-{uuid.uuid4().hex[:8]}{DATA_SUFFIX}"
        )
        writer: FileWriter | None = None
        try:
            for batch in iterator:
                if batch.num_rows == 0:
                    continue
                if writer is None:
                    if not os.path.isdir(self.staging_dir):
                        raise LooseleafIOError(f"{self.staging_dir}: gone, the write job was aborted")
                    writer = self._file_writer(staged)
                writer.write_batch(cast_batch(batch, self.arrow_schema))
            if writer is None:
                return LooseleafCommitMessage(None, final_name, 0, 0)
            result = writer.close()
        except BaseException:
            if writer is not None and not writer.closed:
                writer.abort()
            raise
        return LooseleafCommitMessage(staged, final_name, result["num_rows"], result["num_bytes"])

    def _file_writer(self, path: str) -> FileWriter:
        options: dict[str, Any] = {"page_size": self.page_size}
        if self.compression is not None:
            options["compression"] = self.compression
        return FileWriter(path, self.arrow_schema, **options)

    def commit(self, messages: list[LooseleafCommitMessage | None]) -> None:
        os.makedirs(self.directory, exist_ok=True)
        replaced = list_files([self.directory]) if self.overwrite else []
        committed = set()
        for message in messages:
            if message is None or message.staged_path is None:
                continue
            final = os.path.join(self.directory, message.final_name)
            os.replace(message.staged_path, final)
            committed.add(final)
        schema_path = os.path.join(self.directory, SCHEMA_FILE)
        if self.overwrite or not os.path.exists(schema_path):
            write_table(self.arrow_schema.empty_table(), schema_path)
        for path in replaced:
            if path not in committed:
                os.remove(path)
        self._clean_staging()

    def abort(self, messages: list[LooseleafCommitMessage | None]) -> None:
        self._clean_staging()

    def _clean_staging(self) -> None:
        shutil.rmtree(self.staging_dir, ignore_errors=True)
        with contextlib.suppress(OSError):  # removed only if no other job uses it
            os.rmdir(os.path.join(self.directory, TEMPORARY_DIR))


class LooseleafDataSource(DataSource):
    """``spark.read.format("looseleaf")`` and ``df.write.format("looseleaf")``.

    Options are described in ``docs/spark.md``. ``default_options`` holds the defaults that
    :func:`looseleaf.spark.register` sets for a session (options given to a read win)."""

    default_options: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def name(cls) -> str:
        return NAME

    def _read_options(self) -> ReadOptions:
        return ReadOptions.parse(self.options, self.default_options)

    def schema(self) -> StructType:
        return dataset_schema(self._read_options())

    def reader(self, schema: StructType) -> DataSourceReader:
        return LooseleafReader(self._read_options(), schema)

    def writer(self, schema: StructType, overwrite: bool) -> LooseleafWriter:
        return LooseleafWriter(WriteOptions.parse(self.options, self.default_options), schema, overwrite)


class LooseleafFilteringDataSource(LooseleafDataSource):
    """The data source with a reader that takes Spark's filters (see
    :class:`LooseleafFilteringReader`); registered when filter pushdown is enabled."""

    def reader(self, schema: StructType) -> DataSourceReader:
        return LooseleafFilteringReader(self._read_options(), schema)

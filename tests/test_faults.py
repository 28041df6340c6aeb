"""Faults between looseleaf and an S3 server (moto, behind the fault-injecting proxy of
``s3_server``): error answers (500 ``InternalError``, 503 ``SlowDown``), connections reset in the
middle of a body, bodies shorter than their ``Content-Length``, stalls longer than the request
timeout, and throttling that lasts. Every read path and every write path gives the right data,
or a looseleaf error naming the path, within a bounded time; a write that fails leaves nothing
partial visible and no multipart upload pending.

Faults fewer than the retries (the reader's six of each request, the store's six of each write
request, five of a listing, five of the start of an upload or a deletion whose answer was lost)
must not fail anything: those reads and writes must give the right data. An answer to the start
of a multipart upload lost in the middle of its body is read by ``object_store`` outside its own
retries: the writer starts another upload, and the one the store had created is one the client
never learnt of (``ProxyStats.orphaned_uploads``: on S3 a bucket's lifecycle rule removes those).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import looseleaf
from s3_server import (
    Fault,
    FaultSchedule,
    MotoServer,
    ProxySettings,
    S3Proxy,
    proxy,
    request_kind,
    start_moto,
)

BUCKET = "faults"
#: The client's request timeout, and the stalls that outlast it. Each stall costs a timeout,
#: and stalls are most of this file's time; the requests here are of a few hundred KiB at most,
#: answered in milliseconds by a local server.
TIMEOUT = "1s"
STALL_SECONDS = 2.0
#: No read or write may take longer, whatever the faults: a hang fails the test, not CI.
BOUND_SECONDS = 60.0
#: The kinds of fault, as the tests name them: a schedule's kinds, the stall split in two.
KINDS = ["internal_error", "slow_down", "reset", "short", "stall", "stall_in_body"]
#: The faults a read meets: fewer than its retries (stalls cost a timeout each: one is enough).
READ_FAULTS = {"stall": 1, "stall_in_body": 1}
_names = itertools.count()


def _schedule(kind: str, *, limit: int | None = 3, seed: int = 0, **settings: Any) -> FaultSchedule:
    """The first ``limit`` requests that apply get a fault of ``kind``."""
    return FaultSchedule(
        {kind.removesuffix("_in_body"): 1.0},
        seed=seed,
        limit=limit,
        stall_seconds=STALL_SECONDS,
        stall_in_body=1.0 if kind == "stall_in_body" else 0.0,
        **settings,
    )


class OncePerRequestKind:
    """A fault on the first request of each kind (:func:`s3_server.request_kind`) but those of
    ``spared``: one of each step of a write (its parts, its completion, listings, deletions)
    fails once."""

    def __init__(self, make: Callable[[], Fault], spared: frozenset[str] = frozenset()) -> None:
        self.make = make
        self.spared = spared
        self.seen: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, method: str, path: str) -> Fault | None:
        kind = request_kind(method, path)
        with self.lock:
            if kind in self.spared or kind in self.seen:
                return None
            self.seen.add(kind)
        return self.make()


def _fault_of(kind: str) -> Callable[[], Fault]:
    return {
        "internal_error": Fault.error,
        "slow_down": Fault.slow_down,
        "reset": lambda: Fault.reset(0.5),
        "short": lambda: Fault.short(0.5),
        "stall": lambda: Fault.stall(STALL_SECONDS),
        "stall_in_body": lambda: Fault.stall(STALL_SECONDS, 0.5),
    }[kind]


def bounded(operation: Callable[[], Any], seconds: float = BOUND_SECONDS) -> Any:
    """``operation()``'s result (or exception), failing the test if it takes over ``seconds``."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, operation()))
        except BaseException as e:
            outcome.append((False, e))

    started = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still running after {seconds:.0f} s: a hang")
    assert time.monotonic() - started <= seconds
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoServer]:
    server = start_moto()
    server.create_bucket(BUCKET)
    yield server
    server.stop()


@contextlib.contextmanager
def faulty(moto: MotoServer, fault: Callable[[str, str], Any] | None) -> Iterator[tuple[S3Proxy, dict]]:
    """A proxy injecting ``fault``, and the storage options of a client that goes through it."""
    with proxy(moto, ProxySettings(fault=fault)) as p:
        yield p, {**moto.storage_options(p.endpoint), "timeout": TIMEOUT, "connect_timeout": "1s"}


def _table(rows: int = 20_000, seed: int = 1) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "id": pa.array(np.arange(rows), pa.int64()),
            "v": pa.array(rng.random(rows)),
            "s": pa.array([f"row {i} of {seed}" for i in range(rows)]),
            "k": pa.array(np.arange(rows) % 3, pa.int32()),
        }
    )


TABLE = _table()
INDICES = [19_999, 0, 7, 12_345, 7, 4_000, 15_001]
FILTER = ((pc.field("id") >= 3_000) & (pc.field("id") < 9_000)) | (pc.field("v") > 0.95)


def _pending_uploads(moto: MotoServer, p: S3Proxy, under: str) -> list[str]:
    """Multipart uploads of keys below ``under`` (a path or a URL) still pending that the client
    knew of (it could have aborted them), waiting a little for aborts in flight."""
    prefix = under.removeprefix(f"s3://{BUCKET}/")
    deadline = time.monotonic() + 10
    while True:
        listed = moto.client().list_multipart_uploads(Bucket=BUCKET, Prefix=prefix).get("Uploads", [])
        known = [u["Key"] for u in listed if u["UploadId"] not in p.stats.orphaned_uploads]
        if not known or time.monotonic() > deadline:
            return known
        time.sleep(0.1)


def _objects(moto: MotoServer, prefix: str) -> list[str]:
    listed = moto.client().list_objects_v2(Bucket=BUCKET, Prefix=prefix)
    return sorted(o["Key"] for o in listed.get("Contents", []))


def _assert_clear(error: BaseException, path: str) -> None:
    """A looseleaf error that names ``path``."""
    assert isinstance(error, looseleaf.LooseleafError), repr(error)
    assert path in str(error), str(error)


# --- reads -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def written(moto: MotoServer) -> dict[str, str]:
    """One file and one partitioned dataset of :data:`TABLE`, written without faults."""
    options = moto.storage_options()
    file = f"s3://{BUCKET}/read/table.leaf"
    looseleaf.write_table(TABLE, file, storage_options=options, page_size=16 * 1024)
    dataset = f"s3://{BUCKET}/read/dataset"
    looseleaf.write_dataset(
        TABLE,
        dataset,
        partitioning=["k"],
        max_rows_per_file=4_000,
        page_size=16 * 1024,
        storage_options=options,
    )
    clean = looseleaf.dataset(dataset, storage_options=options).to_table()
    assert clean.sort_by("id").equals(TABLE), "the dataset holds the table"
    return {"file": file, "dataset": dataset}


#: Each read of a file: what it does with an open reader, and the truth, computed by pyarrow.
FILE_READS: dict[str, tuple[Callable[[Any], pa.Table], Callable[[], pa.Table]]] = {
    "scan": (lambda r: r.read_all(batch_size=3_000).read_all(), lambda: TABLE),
    "to_table": (lambda r: r.to_table(), lambda: TABLE),
    "projection": (lambda r: r.to_table(columns=["s", "id"]), lambda: TABLE.select(["s", "id"])),
    "range": (lambda r: r.read_range(5_000, 7_000).read_all(), lambda: TABLE.slice(5_000, 7_000)),
    "take": (lambda r: r.take(INDICES), lambda: TABLE.take(INDICES)),
    "filtered": (lambda r: r.to_table(filter=FILTER), lambda: TABLE.filter(FILTER)),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("read", ["open", *FILE_READS])
def test_file_reads_under_faults_give_the_right_data(moto, written, read, kind):
    schedule = _schedule(kind, limit=READ_FAULTS.get(kind, 3), enabled=False)
    path = written["file"]
    with faulty(moto, schedule) as (p, options):
        if read == "open":
            schedule.enabled = True
            got = bounded(lambda: looseleaf.open(path, storage_options=options).to_table())
            truth = TABLE
        else:
            reader = looseleaf.open(path, storage_options=options)
            operation, truth_of = FILE_READS[read]
            schedule.enabled = True
            got, truth = bounded(lambda: operation(reader)), truth_of()
    assert got.equals(truth)
    assert sum(p.stats.injected.values()) == READ_FAULTS.get(kind, 3), p.stats.injected


DATASET_READS: dict[str, Callable[[Any], pa.Table]] = {
    "open": lambda d: d.to_table(),
    "take": lambda d: d.take(INDICES),
    "filtered": lambda d: d.to_table(filter=(pc.field("k") == 1) & (pc.field("id") < 10_000)),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("read", DATASET_READS)
def test_dataset_reads_under_faults_give_the_right_data(moto, written, read, kind):
    """``open`` meets the faults in the listing, the commit log and the files' tails; the others
    in their reads of the files."""
    uri = written["dataset"]
    clean = looseleaf.dataset(uri, storage_options=moto.storage_options())
    truth = {
        "open": clean.to_table(),
        "take": clean.to_table().take(INDICES),
        "filtered": clean.to_table().filter((pc.field("k") == 1) & (pc.field("id") < 10_000)),
    }[read]
    schedule = _schedule(kind, limit=READ_FAULTS.get(kind, 3), enabled=read == "open")
    with faulty(moto, schedule) as (p, options):
        dataset = bounded(lambda: looseleaf.dataset(uri, storage_options=options))
        schedule.enabled = True
        got = bounded(lambda: DATASET_READS[read](dataset))
    assert got.equals(truth)
    assert sum(p.stats.injected.values()) == READ_FAULTS.get(kind, 3), p.stats.injected


def test_a_failed_listing_is_tried_again(moto, written):
    """Regression: listing a directory (opening a dataset, reading its commit log) was not tried
    again: one 500 from the store failed ``looseleaf.dataset``."""
    uri = written["dataset"]
    for fault in (Fault.error(), Fault.reset(0.3), Fault.short(0.6)):
        listings = itertools.count()

        def twice(method: str, path: str, fault: Fault = fault, listings=listings) -> Fault | None:
            listing = request_kind(method, path) == "list"
            return fault if listing and next(listings) < 2 else None

        with faulty(moto, twice) as (p, options):
            got = bounded(lambda: looseleaf.dataset(uri, storage_options=options).to_table())
        assert got.sort_by("id").equals(TABLE)
        assert p.stats.injected[fault.name] == 2


def _io_error(read: Callable[[], Any], match: str | None = None) -> looseleaf.LooseleafIOError:
    """The looseleaf I/O error that ``read()`` ends in, within 30 s."""
    with pytest.raises(looseleaf.LooseleafIOError, match=match) as raised:
        bounded(read, seconds=30)
    return raised.value


def test_reads_that_lose_every_answer_end_in_a_clear_error(moto, written):
    """Faults that do not pass: after the bounded retries, an error naming the file (or the
    dataset's directory), long before the bound. The reads run at once, each through a proxy
    of its own: most of their time is their retries' backoff."""
    path, uri = written["file"], written["dataset"]
    with contextlib.ExitStack() as stack, ThreadPoolExecutor(max_workers=16) as pool:
        failing = []
        for kind in ("internal_error", "slow_down", "reset", "short"):
            _, options = stack.enter_context(faulty(moto, _schedule(kind, limit=None)))
            for read in (
                functools.partial(looseleaf.open, path, storage_options=options),
                functools.partial(looseleaf.dataset, uri, storage_options=options),
            ):
                failing.append(pool.submit(_io_error, read))
        # A reader opened, then the store throttles for good: its reads fail too.
        schedule = _schedule("slow_down", limit=None, enabled=False)
        _, options = stack.enter_context(faulty(moto, schedule))
        reader = looseleaf.open(path, storage_options=options)
        dataset = looseleaf.dataset(uri, storage_options=options)
        schedule.enabled = True
        throttled = [
            pool.submit(_io_error, read, "SlowDown")
            for read in (reader.to_table, functools.partial(reader.take, INDICES), dataset.to_table)
        ]
        for error in (f.result() for f in failing):
            assert path in str(error) or uri in str(error), str(error)
        for error in (f.result() for f in throttled):
            assert "faults/read/" in str(error), str(error)


def test_a_read_of_a_store_that_stalls_for_good_ends_after_its_timeouts(moto, written):
    path = written["file"]
    schedule = _schedule("stall", limit=None, enabled=False)
    with faulty(moto, schedule) as (_, options):
        reader = looseleaf.open(path, storage_options={**options, "timeout": "1s"})
        schedule.enabled = True
        started = time.monotonic()
        with pytest.raises(looseleaf.LooseleafIOError) as raised:
            bounded(reader.to_table, seconds=40)
    _assert_clear(raised.value, path)
    # Seven attempts of a second each, and the backoffs between them.
    assert time.monotonic() - started < 25


def test_throttling_for_a_while_is_waited_out(moto, written):
    """Throttling that lasts a second (less than the retries' backoff): the read gets there,
    and says how often it was throttled."""
    schedule = _schedule("slow_down", limit=0, enabled=False)
    with faulty(moto, schedule) as (p, options):
        reader = looseleaf.open(written["file"], storage_options=options)
        schedule.enabled = True
        schedule.throttle(1.0)
        stream = reader.stream()
        got = bounded(lambda: pa.RecordBatchReader.from_stream(stream).read_all())
    assert got.equals(TABLE)
    stats = stream.io_stats()
    assert stats["throttled"] > 0, stats
    assert stats["retries"] >= stats["throttled"], stats
    assert p.stats.injected["SlowDown"] > 0


# --- writes ------------------------------------------------------------------------------------


def _write_table(path: str, options: dict) -> None:
    looseleaf.write_table(TABLE, path, storage_options=options, page_size=16 * 1024)


def _file_writer(path: str, options: dict) -> None:
    """Several parts: batches past the 5 MiB a part holds."""
    with looseleaf.FileWriter(path, TABLE.schema, storage_options=options, page_size=64 * 1024) as writer:
        for batch in _big().to_batches(max_chunksize=50_000):
            writer.write_batch(batch)
        writer.close()


_BIG: list[pa.Table] = []


def _big() -> pa.Table:
    """A table whose file takes three parts of a multipart upload."""
    if not _BIG:
        _BIG.append(_table(600_000, seed=2))
    return _BIG[0]


FILE_WRITES: dict[str, tuple[Callable[[str, dict], None], Callable[[], pa.Table]]] = {
    "write_table": (_write_table, lambda: TABLE),
    "file_writer": (_file_writer, _big),
}


def _check_file_write(moto, p, path, error, truth) -> None:
    """The file is whole or absent (absent after an error, unless the store completed it and the
    confirmation was lost too), and no upload the client knew of is pending."""
    key = path.removeprefix(f"s3://{BUCKET}/")
    if error is not None:
        _assert_clear(error, path)
    if error is None or _objects(moto, key):
        got = looseleaf.open(path, storage_options=moto.storage_options()).to_table()
        assert got.equals(truth), "a partial or wrong file is visible"
    assert not _pending_uploads(moto, p, path)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("write", FILE_WRITES)
def test_file_writes_under_faults_give_the_right_file(moto, write, kind):
    """The first request of each step (a part, the completion) meets a fault: the write
    succeeds."""
    operation, truth = FILE_WRITES[write]
    path = f"s3://{BUCKET}/write/{write}-{kind}-{next(_names)}.leaf"
    with faulty(moto, OncePerRequestKind(_fault_of(kind), frozenset({"create_upload"}))) as (p, options):
        bounded(lambda: operation(path, options))
        _check_file_write(moto, p, path, None, truth())
    assert p.stats.injected  # the parts and the completion met one each


@pytest.mark.parametrize("kind", KINDS)
def test_a_lost_answer_to_the_start_of_an_upload_is_tried_again(moto, kind):
    """Regression: a fault on ``CreateMultipartUpload`` after the store answered (a reset or a
    stall in the body, a short body) failed the write, which ``object_store`` does not retry;
    the writer starts another upload, and the write succeeds."""
    path = f"s3://{BUCKET}/write/create-{kind}-{next(_names)}.leaf"
    spared = frozenset({"upload_part", "complete_upload", "abort_upload", "head", "get"})
    with faulty(moto, OncePerRequestKind(_fault_of(kind), spared)) as (p, options):
        bounded(lambda: _write_table(path, options))
        _check_file_write(moto, p, path, None, TABLE)
    assert p.stats.injected
    lost_in_body = kind in ("reset", "short", "stall_in_body")
    assert bool(p.stats.orphaned_uploads) == lost_in_body, p.stats.orphaned_uploads


def test_a_completion_whose_answer_is_lost_is_a_success(moto):
    """Regression: when the answer to ``CompleteMultipartUpload`` was lost (reset, cut short,
    or stalled in its body), the writer aborted the upload the store had completed, and raised
    that abort's 404 (``NotFoundError``: "not found") about the file it had written, whole."""
    for fault in (Fault.reset(0.2), Fault.short(0.5), Fault.stall(STALL_SECONDS, 0.5)):
        path = f"s3://{BUCKET}/write/completed-{fault.name}-{next(_names)}.leaf"
        spared = frozenset({"create_upload", "upload_part", "abort_upload", "head", "get"})
        with faulty(moto, OncePerRequestKind(lambda fault=fault: fault, spared)) as (p, options):
            bounded(lambda path=path: _write_table(path, options))
            assert p.stats.injected[fault.name] == 1
            _check_file_write(moto, p, path, None, TABLE)


def _dataset(version: int, rows: int) -> pa.Table:
    table = _table(rows, seed=version)
    return table.set_column(2, "s", pa.array([f"version {version} row {i}" for i in range(rows)]))


def _read_dataset(uri: str, options: dict) -> pa.Table:
    table = looseleaf.dataset(uri, storage_options=options).to_table()
    return table.select(TABLE.column_names).sort_by("id")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("existing_data", ["overwrite", "append"])
def test_write_dataset_under_faults_gives_the_new_dataset(moto, kind, existing_data):
    """The first request of each kind (listings, the commit log's reads and writes, parts,
    completions, deletions) meets a fault: the write succeeds, and the dataset is the new one."""
    uri = f"s3://{BUCKET}/datasets/{kind}-{existing_data}-{next(_names)}"
    old, new = _dataset(1, 6_000), _dataset(2, 8_000)
    layout = {"partitioning": ["k"], "max_rows_per_file": 1_500, "page_size": 16 * 1024}
    looseleaf.write_dataset(old, uri, storage_options=moto.storage_options(), **layout)
    expected = new
    if existing_data == "append":
        new = new.set_column(0, "id", pc.add(new.column("id"), 6_000))
        expected = pa.concat_tables([old, new])
    with faulty(moto, OncePerRequestKind(_fault_of(kind), frozenset({"create_upload"}))) as (p, options):
        bounded(
            lambda: looseleaf.write_dataset(
                new, uri, existing_data=existing_data, storage_options=options, **layout
            )
        )
        assert not _pending_uploads(moto, p, uri)
    assert _read_dataset(uri, moto.storage_options()).equals(expected.sort_by("id"))
    assert len(p.stats.injected) == 1, p.stats.injected
    assert sum(p.stats.injected.values()) >= 5, p.stats.injected


def test_write_dataset_that_fails_leaves_the_dataset_as_it_was(moto):
    """Faults that do not pass, from the first file's completion on: the write fails naming a
    path of the dataset, which reads as before, with no upload pending."""
    uri = f"s3://{BUCKET}/datasets/failing-{next(_names)}"
    old, new = _dataset(1, 6_000), _dataset(2, 8_000)
    layout = {"partitioning": ["k"], "max_rows_per_file": 1_500, "page_size": 16 * 1024}
    looseleaf.write_dataset(old, uri, storage_options=moto.storage_options(), **layout)
    before = _objects(moto, uri.removeprefix(f"s3://{BUCKET}/") + "/")
    completions = lambda m, path: request_kind(m, path) == "complete_upload"  # noqa: E731
    schedule = FaultSchedule({"internal_error": 1.0}, applies=completions)
    with faulty(moto, schedule) as (p, options):
        with pytest.raises(looseleaf.LooseleafIOError) as raised:
            bounded(
                lambda: looseleaf.write_dataset(
                    new, uri, existing_data="overwrite", storage_options=options, **layout
                )
            )
        assert uri in str(raised.value), str(raised.value)
        assert not _pending_uploads(moto, p, uri)
    assert _read_dataset(uri, moto.storage_options()).equals(old.sort_by("id"))
    after = _objects(moto, uri.removeprefix(f"s3://{BUCKET}/") + "/")
    added = [key for key in after if key not in before]
    assert all("/_commits/" in key and key.endswith(".aborted") for key in added), added


@pytest.mark.parametrize("write", ["write_table", "write_dataset"])
def test_writes_to_a_store_that_throttles_for_good_end_in_a_clear_error(moto, write):
    uri = f"s3://{BUCKET}/write/throttled-{write}-{next(_names)}"
    with faulty(moto, _schedule("slow_down", limit=None)) as (p, options):
        if write == "write_table":
            operation = lambda: _write_table(uri + ".leaf", options)  # noqa: E731
        else:
            operation = lambda: looseleaf.write_dataset(TABLE, uri, storage_options=options)  # noqa: E731
        with pytest.raises(looseleaf.LooseleafIOError, match="SlowDown") as raised:
            bounded(operation, seconds=30)
        assert uri in str(raised.value), str(raised.value)
        assert not _pending_uploads(moto, p, uri)
    assert not _objects(moto, uri.removeprefix(f"s3://{BUCKET}/"))


def test_a_write_to_a_store_that_stalls_for_good_ends_after_its_timeouts(moto):
    path = f"s3://{BUCKET}/write/stalled-{next(_names)}.leaf"
    with faulty(moto, _schedule("stall", limit=None)) as (p, options):
        started = time.monotonic()
        with pytest.raises(looseleaf.LooseleafIOError) as raised:
            bounded(lambda: _write_table(path, {**options, "timeout": "1s"}), seconds=40)
        assert time.monotonic() - started < 25
        _check_file_write(moto, p, path, raised.value, TABLE)


def test_throttling_in_the_middle_of_a_write_is_waited_out(moto):
    """Throttling that starts at the first part and lasts a second: the write gets there."""
    path = f"s3://{BUCKET}/write/throttled-a-while-{next(_names)}.leaf"
    schedule = _schedule("slow_down", limit=0)
    started = threading.Event()

    def fault(method: str, request: str) -> Fault | None:
        if request_kind(method, request) == "upload_part" and not started.is_set():
            started.set()
            schedule.throttle(1.0)
        return schedule(method, request)

    with faulty(moto, fault) as (p, options):
        bounded(lambda: _file_writer(path, options))
        _check_file_write(moto, p, path, None, _big())
    assert p.stats.injected["SlowDown"] > 0


def test_a_seeded_mix_of_faults_on_every_path(moto, written):
    """Every kind at once, in bursts, on every request: each read and write gives the right
    data or a clear error, and leaves nothing partial."""
    schedule = FaultSchedule(
        {"internal_error": 0.04, "slow_down": 0.04, "reset": 0.03, "short": 0.03, "stall": 0.01},
        seed=45,
        burst=3,
        stall_seconds=STALL_SECONDS,
        limit=40,
    )
    errors = []
    with faulty(moto, schedule) as (p, options):
        for read, (operation, truth) in FILE_READS.items():
            try:
                reader = bounded(lambda: looseleaf.open(written["file"], storage_options=options))
                got = bounded(lambda operation=operation, reader=reader: operation(reader))
                assert got.equals(truth()), read
            except looseleaf.LooseleafError as e:
                _assert_clear(e, written["file"])
                errors.append(e)
        path = f"s3://{BUCKET}/write/mixed-{next(_names)}.leaf"
        try:
            bounded(lambda: _write_table(path, options))
            error = None
        except looseleaf.LooseleafError as e:
            error = e
            errors.append(e)
        _check_file_write(moto, p, path, error, TABLE)
    assert sum(p.stats.injected.values()) > 0
    # Bursts of three are fewer than any retries: nothing fails.
    assert not errors, errors


# --- Spark ---------------------------------------------------------------------------------------


def test_spark_writes_and_reads_under_faults(spark, moto):
    """The Python data source's job (begin, the tasks' files, the commit) and a read of it, with
    errors and resets on a fifth of the requests (their starts of uploads spared)."""
    import looseleaf.spark as ls

    schedule = FaultSchedule(
        {"internal_error": 0.1, "reset": 0.1},
        seed=7,
        limit=12,
        applies=lambda method, path: request_kind(method, path) != "create_upload",
    )
    out = f"s3://{BUCKET}/spark/faults-{next(_names)}"
    frame = spark.range(0, 3_000, 1, 3).selectExpr("id", "cast(id as string) as s")
    # Spark's calls run in the test's own thread, not in `bounded`'s: a Python thread of its own
    # gets a JVM thread of its own, without the session's Python data sources. The time is
    # checked afterwards instead.
    started = time.monotonic()
    with faulty(moto, schedule) as (p, options):
        spark_options = {f"storage.{k}": v for k, v in options.items()}
        frame.write.format(ls.python_format(spark)).options(**spark_options).mode("overwrite").save(out)
        read = spark.read.format(ls.python_format(spark)).options(**spark_options).load(out)
        rows = sorted((r["id"], r["s"]) for r in read.collect())
        assert not _pending_uploads(moto, p, out)
    assert time.monotonic() - started <= BOUND_SECONDS
    assert rows == [(i, str(i)) for i in range(3_000)]
    assert sum(p.stats.injected.values()) > 0

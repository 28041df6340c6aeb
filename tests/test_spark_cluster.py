"""The JVM connector where a pipeline runs: a Spark standalone cluster on this machine (a master,
two workers, each executor a JVM of its own; ``spark_cluster.py``), a driver configured with
nothing but ``looseleaf.spark.configure`` (the jar in ``spark.jars``, which Spark ships to the
executors, each loading the native library the jar carries), and datasets on S3 (moto, on
127.0.0.1) through ``s3a://`` and ``s3://`` URLs with ``storage.*`` options.

Every answer is compared with Spark's own Parquet source answering the same query on the same
rows (written by the same cluster to a local directory: Spark's Parquet cannot reach S3 here,
there are no hadoop-aws jars). The last test kills an executor in the middle of a write job and
of a read job: Spark retries the lost tasks, the master starts a new executor, the answers stay
exact and the commit protocol leaves no duplicate or partial file visible.

The driver runs in a process of its own (``spark_cluster.Driver``): functions named ``_on_*``
below run there, with the session as their first argument, and return plain data.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

import looseleaf
import spark_cluster as harness
from conftest import _java_problem

BUCKET = "cluster"
#: The setting naming a native library installed apart from the jar: never needed here.
LIBRARY_CONF = "spark.looseleaf.nativeLibrary"
EXECUTORS = 2


@pytest.fixture(scope="module")
def java():
    problem = _java_problem()
    if problem is not None:
        pytest.skip(problem)


@pytest.fixture(scope="module")
def jar(java, tmp_path_factory) -> Path:
    jar, problem = harness.connector_jar(tmp_path_factory)
    if jar is None:
        pytest.skip(f"the JVM connector cannot be built here: {problem}")
    return jar


@pytest.fixture(scope="module")
def cluster(java, tmp_path_factory):
    # Not waited for here: the JVMs start while the connector builds (see ``driver``).
    with harness.standalone_cluster(
        tmp_path_factory.mktemp("cluster"), workers=EXECUTORS, wait=False
    ) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def driver(cluster, jar, tmp_path_factory):
    cluster.wait_until_registered()
    directory = tmp_path_factory.mktemp("driver")
    with harness.spark_driver(_cluster_session, cluster.master_url, str(jar), directory=directory) as driver:
        yield driver


@pytest.fixture(scope="module")
def s3():
    from s3_server import start_moto

    server = start_moto()
    server.create_bucket(BUCKET)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def storage(s3) -> dict[str, str]:
    """The ``storage.*`` options of a read or write that reach the moto server."""
    return {f"storage.{k}": v for k, v in s3.storage_options().items()}


def _cluster_session(master: str, jar: str):
    """The driver's session (run in the driver process): the connector added by ``configure``
    alone (``configure(builder)`` where the wheel carries the jar, which ``jar`` then is)."""
    from pyspark.sql import SparkSession

    import looseleaf.spark as ls

    builder = ls.configure(SparkSession.builder.master(master), jar)
    spark = (
        builder.appName("looseleaf-cluster-tests")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "1g")
        .config("spark.executor.memory", "1g")
        .config("spark.executor.cores", "1")
        .config("spark.cores.max", str(EXECUTORS))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    harness.wait_for_executors(spark, EXECUTORS)
    return spark


def _sorted(rows) -> list[tuple]:
    return sorted((tuple(r) for r in rows), key=repr)


# --- the session ----------------------------------------------------------------------------------


def _on_session_facts(spark, url: str, options: dict[str, str]) -> dict:
    sc = spark.sparkContext
    # A job whose tasks pause, so that both executors (one core each) take some: each then
    # loads the connector and its native library.
    frame = spark.range(0, 4000, 1, 4).selectExpr(f"{_pause(1000, 500)} as id", "cast(id as string) as s")
    frame.write.format("looseleaf").options(**options).mode("overwrite").save(url)
    back = spark.read.format("looseleaf").options(**options).load(url)
    return {
        "app": sc.applicationId,
        "master": sc.master,
        "jars": spark.conf.get("spark.jars"),
        "library": spark.conf.get(LIBRARY_CONF, None),
        "library in SparkConf": sc.getConf().get(LIBRARY_CONF),
        "block managers": sc._jsc.sc().getExecutorMemoryStatus().size(),
        "driver pid": int(spark._jvm.java.lang.ProcessHandle.current().pid()),
        "sum": back.selectExpr("sum(id)").collect()[0][0],
        "count": back.count(),
    }


def test_executors_are_jvms_of_their_own_given_the_connector_by_spark_jars(cluster, driver, jar, storage):
    facts = driver.call(_on_session_facts, f"s3a://{BUCKET}/session", storage)
    assert facts["master"] == cluster.master_url
    assert facts["sum"] == sum(range(4000))
    assert facts["count"] == 4000
    # The driver and two executors, each a JVM of its own.
    assert facts["block managers"] == EXECUTORS + 1
    executors = cluster.executors(facts["app"])
    assert len(executors) == EXECUTORS, executors
    assert {e.worker_pid for e in executors} == {w.pid for w in cluster.workers}
    assert facts["driver pid"] not in {e.pid for e in executors}
    # Only spark.jars: no native library named by a setting, a property or the environment.
    assert str(jar) in facts["jars"].split(",")
    assert facts["library"] is None
    assert facts["library in SparkConf"] is None
    for executor in executors:
        assert "LOOSELEAF_NATIVE_LIBRARY" not in harness.process_environment(executor.pid)
        assert not any("looseleaf.native" in a for a in harness.process_command(executor.pid))
        # Each fetched the jar from the driver into its work directory, and has the library
        # extracted from it mapped (its file deleted once loaded).
        work = [d for d in cluster.executor_directories(facts["app"]) if d.name == executor.executor_id]
        assert [d for d in work if (d / jar.name).is_file()], f"no {jar.name} in {work}"
        # (a temporary copy, deleted once mapped: the jar's, as no other was named).
        mapped = [
            line
            for line in Path(f"/proc/{executor.pid}/maps").read_text().splitlines()
            if "liblooseleaf_jni" in line
        ]
        assert mapped, f"executor {executor.executor_id} has not loaded the native library"
        assert all(line.endswith("(deleted)") for line in mapped), mapped


# --- a partitioned dataset on S3 and its Parquet twin ---------------------------------------------

SALES = [
    "id",
    "cast(2021 + id % 4 as int) as year",
    # The empty string and null: both the default partition, read back as null.
    "case when id % 29 = 0 then null else element_at(array('north', 'south', 'west', ''), "
    "cast(id % 7 % 4 + 1 as int)) end as region",
    "cast(id * 7919 % 100000 / 100 as decimal(12,2)) as amount",
    "cast(id % 13 as int) as qty",
    "date_add(date'2024-01-01', cast(id % 400 as int)) as day",
    "case when id % 11 = 0 then null else concat('customer ', id % 1000) end as name",
]
SALES_ROWS = 24_000

QUERIES = {
    "partition filter": "select id, region, amount from sales where year = 2023",
    "file column filter": "select id, year, name from sales "
    "where qty < 3 and day >= date'2024-06-01' and amount > 100",
    "both": "select id, qty, day from sales "
    "where region = 'south' and year in (2021, 2024) and name is not null",
    "null partition": "select id, year from sales where region is null",
    "one partition": "select count(*), sum(amount) from sales where region = 'west'",
    "aggregate": "select year, region, count(*), sum(amount), sum(qty), min(day), max(day), count(name) "
    "from sales group by year, region",
    "count": "select count(*) from sales",
    # No GROUP BY, exact filters, small files: one task aggregates every file completely.
    "complete": "select count(*), sum(amount), min(day), max(qty), count(name) from sales "
    "where qty < 5 and amount > 10",
    "join": "select r.manager, s.year, count(*), sum(s.amount) "
    "from sales s join regions r on s.region = r.region where s.qty > 6 group by r.manager, s.year",
}


def _on_write_sales(spark, sales: str, regions: str, options: dict[str, str], parquet: str) -> None:
    frame = spark.range(0, SALES_ROWS, 1, 2).selectExpr(*SALES)
    frame.write.format("looseleaf").options(**options).partitionBy("year", "region").mode("overwrite").save(
        sales
    )
    frame.write.partitionBy("year", "region").mode("overwrite").parquet(f"{parquet}/sales")
    dimension = spark.createDataFrame(
        [("north", "Ada"), ("south", "Grace"), ("west", "Ada"), ("nowhere", "Edsger")],
        "region string, manager string",
    )
    dimension.write.format("looseleaf").options(**options).mode("overwrite").save(regions)
    dimension.write.mode("overwrite").parquet(f"{parquet}/regions")


def _on_answers(spark, fmt: str, sales: str, regions: str, options: dict[str, str]) -> dict[str, list[tuple]]:
    def load(path: str):
        if fmt == "parquet":
            return spark.read.parquet(path)
        return spark.read.format(fmt).options(**options).load(path)

    load(sales).createOrReplaceTempView("sales")
    load(regions).createOrReplaceTempView("regions")
    answers = {name: _sorted(spark.sql(sql).collect()) for name, sql in QUERIES.items()}
    plan = spark.sql(QUERIES["complete"])._jdf.queryExecution().executedPlan().toString()
    answers["taken completely"] = "complete aggregates by looseleaf" in plan
    answers["schema"] = [(f.name, f.dataType.simpleString()) for f in spark.table("sales").schema]
    return answers


def test_a_partitioned_dataset_on_s3_answers_as_parquet_does(driver, s3, storage, tmp_path):
    parquet = str(tmp_path / "parquet")
    driver.call(_on_write_sales, f"s3a://{BUCKET}/sales", f"s3://{BUCKET}/regions", storage, parquet)
    expected = driver.call(_on_answers, "parquet", f"{parquet}/sales", f"{parquet}/regions", {})
    assert len(expected["aggregate"]) == 4 * 4  # four years, three regions and null
    assert all(expected[name] for name in QUERIES), expected
    assert {r[0] for r in expected["join"]} == {"Ada", "Grace"}
    for scheme in ("s3a", "s3"):
        got = driver.call(
            _on_answers, "looseleaf", f"{scheme}://{BUCKET}/sales", f"{scheme}://{BUCKET}/regions", storage
        )
        for name in [*QUERIES, "schema"]:
            assert got[name] == expected[name], (scheme, name)
        assert got["taken completely"], scheme
    # The same dataset, read outside Spark: its files by partition directory, the rows counted.
    dataset = looseleaf.dataset(f"s3://{BUCKET}/sales", storage_options=s3.storage_options())
    assert dataset.num_rows == SALES_ROWS
    assert dataset.partition_schema.names == ["year", "region"]
    assert any("/region=__HIVE_DEFAULT_PARTITION__/" in f for f in dataset.files), dataset.files


# --- TPC-H Q1 -------------------------------------------------------------------------------------

Q1 = """
select l_returnflag, l_linestatus,
       sum(l_quantity) as sum_qty, sum(l_extendedprice) as sum_base_price,
       sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
       sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge,
       avg(l_quantity) as avg_qty, avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc,
       count(*) as count_order
from lineitem
where l_shipdate <= date '1998-12-01' - interval '90' day
group by l_returnflag, l_linestatus
order by l_returnflag, l_linestatus
"""


def _on_q1(spark, source: str, leaves: str, parquet: str, options: dict[str, str]) -> dict[str, list[tuple]]:
    lineitem = spark.read.parquet(source).repartition(4)
    lineitem.write.format("looseleaf").options(**options).mode("overwrite").save(leaves)
    lineitem.write.mode("overwrite").parquet(parquet)
    answers = {}
    for name, frame in (
        ("looseleaf", spark.read.format("looseleaf").options(**options).load(leaves)),
        ("parquet", spark.read.parquet(parquet)),
    ):
        frame.createOrReplaceTempView("lineitem")
        answers[name] = [tuple(r) for r in spark.sql(Q1).collect()]
        answers[f"{name} rows"] = frame.count()
    return answers


def test_tpch_q1_from_s3_equals_parquets_answer(driver, storage, tmp_path):
    cli = shutil.which("tpchgen-cli")
    assert cli is not None, "tpchgen-cli is not installed (it is in the test extra): pip install tpchgen-cli"
    command = [cli, "parquet", "-s", "0.01", "--tables=lineitem", f"--output-dir={tmp_path}"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, timeout=300)
    source = tmp_path / "lineitem.parquet"
    answers = driver.call(_on_q1, str(source), f"s3://{BUCKET}/lineitem", str(tmp_path / "parquet"), storage)
    assert answers["looseleaf rows"] == answers["parquet rows"] > 50_000
    assert [r[:2] for r in answers["parquet"]] == [("A", "F"), ("N", "F"), ("N", "O"), ("R", "F")]
    assert answers["looseleaf"] == answers["parquet"]


# --- an executor lost mid-job ---------------------------------------------------------------------

#: Rows of the dataset the killing test writes, in this many tasks (one file each).
KILL_ROWS, KILL_TASKS = 16_000, 8
PAUSE_MS = 1500


def _pause(every: int, ms: int) -> str:
    """An expression equal to ``id`` that sleeps ``ms`` in the task on every ``every``-th id (in
    the JVM: ``Thread.sleep`` by reflection, no Python worker)."""
    sleep = f"reflect('java.lang.Thread', 'sleep', cast({ms} as bigint))"
    return f"case when id % {every} = 0 then id + 0 * coalesce(length({sleep}), 0) else id end"


def _losing_an_executor(spark, worker_pids: list[int], job) -> dict:
    """Runs ``job()`` while a thread kills one executor once the job's stage has finished a task
    and has both executors busy with more to do; waits until the master has replaced it."""
    sc = spark.sparkContext
    group = f"lose-an-executor-{time.time_ns()}"
    sc.setJobGroup(group, "a job that loses an executor")
    tracker = sc.statusTracker()
    killed: dict = {}

    def stage_under_way():
        for job_id in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job_id)
            for stage_id in info.stageIds if info else []:
                stage = tracker.getStageInfo(stage_id)
                if (
                    stage is not None
                    and stage.numCompletedTasks >= 1
                    and stage.numActiveTasks >= EXECUTORS
                    and stage.numTasks > stage.numCompletedTasks + stage.numActiveTasks
                ):
                    return stage
        return None

    finished = threading.Event()

    def kill() -> None:
        try:
            stage = harness.wait_until(
                lambda: finished.is_set() or stage_under_way(),
                180,
                "the job's tasks to be under way",
                interval=0.05,
            )
            if finished.is_set():
                raise RuntimeError("the job ended before both executors were busy with tasks left to run")
            victim = harness.kill_executor(worker_pids, sc.applicationId)
            killed.update(executor=victim.executor_id, pid=victim.pid, done=stage.numCompletedTasks)
        except Exception as e:  # reported to the test
            killed["error"] = repr(e)

    killer = threading.Thread(target=kill, daemon=True)
    killer.start()
    started = time.monotonic()
    try:
        result = job()
    finally:
        seconds = time.monotonic() - started
        finished.set()
        killer.join(60)
    failed = 0
    for job_id in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job_id)
        for stage_id in info.stageIds if info else []:
            stage = tracker.getStageInfo(stage_id)
            failed += stage.numFailedTasks if stage else 0
    sc.setLocalProperty("spark.jobGroup.id", None)
    harness.wait_for_executors(spark, EXECUTORS, timeout=180)
    return {"result": result, "killed": killed, "failed tasks": failed, "seconds": seconds}


def _on_write_losing_an_executor(spark, url: str, options: dict[str, str], worker_pids: list[int]) -> dict:
    frame = spark.range(0, KILL_ROWS, 1, KILL_TASKS).selectExpr(
        f"{_pause(KILL_ROWS // KILL_TASKS, PAUSE_MS)} as id",
        "cast(id % 97 as int) as k",
        "concat('value ', id) as s",
    )

    def write() -> None:
        frame.write.format("looseleaf").options(**options).mode("overwrite").save(url)

    return _losing_an_executor(spark, worker_pids, write)


def _on_read_losing_an_executor(spark, url: str, options: dict[str, str], worker_pids: list[int]) -> dict:
    frame = spark.read.format("looseleaf").options(**options).option("maxPartitionBytes", 4096).load(url)
    partitions = frame.rdd.getNumPartitions()
    paused = frame.selectExpr(f"{_pause(KILL_ROWS // KILL_TASKS, PAUSE_MS)} as id", "k", "s")
    outcome = _losing_an_executor(spark, worker_pids, lambda: [tuple(r) for r in paused.collect()])
    outcome["partitions"] = partitions
    return outcome


def _committed_and_stored(s3, prefix: str) -> tuple[list[str], list[int], list[str]]:
    """The dataset's files as readers see them (its commit log) with their rows, and every data
    file stored under ``prefix``, as keys."""
    dataset = looseleaf.dataset(f"s3://{BUCKET}/{prefix}", storage_options=s3.storage_options())
    committed = [re.sub(r"^s3a?://[^/]+/", "", f) for f in dataset.files]
    listing = s3.client().list_objects_v2(Bucket=BUCKET, Prefix=f"{prefix}/").get("Contents", [])
    stored = sorted(o["Key"] for o in listing if o["Key"].endswith(".leaf") and "/_schemas/" not in o["Key"])
    return committed, dataset.file_rows, stored


def test_a_lost_executor_mid_write_and_mid_read(cluster, driver, s3, storage):
    workers = [w.pid for w in cluster.workers]
    prefix = "lost-executor"
    url = f"s3a://{BUCKET}/{prefix}"
    expected = [(i, i % 97, f"value {i}") for i in range(KILL_ROWS)]

    wrote = driver.call(_on_write_losing_an_executor, url, storage, workers)
    assert "error" not in wrote["killed"], wrote
    assert wrote["failed tasks"] >= 1, f"no task was lost with executor {wrote['killed']}: {wrote}"
    app = driver.call(_on_app_id)
    replaced = cluster.executors(app)
    assert len(replaced) == EXECUTORS
    assert wrote["killed"]["executor"] not in {e.executor_id for e in replaced}
    # Exactly one file per task, whole, each attempt lost with the executor neither visible nor
    # left stored.
    committed, rows, stored = _committed_and_stored(s3, prefix)
    assert sorted(committed) == stored, (committed, stored)
    assert len(committed) == KILL_TASKS
    assert sorted(int(re.search(r"part-(\d+)-", f).group(1)) for f in committed) == list(range(KILL_TASKS))
    assert rows == [KILL_ROWS // KILL_TASKS] * KILL_TASKS

    read = driver.call(_on_read_losing_an_executor, url, storage, workers)
    assert read["partitions"] >= KILL_TASKS
    assert "error" not in read["killed"], read
    assert read["failed tasks"] >= 1, f"no task was lost with executor {read['killed']}: {read}"
    assert sorted(read["result"]) == expected
    assert len(cluster.executors(app)) == EXECUTORS
    # Reading changed nothing.
    assert _committed_and_stored(s3, prefix) == (committed, rows, stored)
    print(f"write with a lost executor {wrote['seconds']:.1f} s, read {read['seconds']:.1f} s")


def _on_app_id(spark) -> str:
    return spark.sparkContext.applicationId


# --- partition values escaped in directory names -------------------------------------------------

ESCAPED = ["south east", "west/x", "100%", "a=b"]


def _on_write_escaped_partition_values(spark, url: str, options: dict[str, str], parquet: str) -> None:
    values = ", ".join(f"'{v}'" for v in ESCAPED)
    frame = spark.range(0, 400, 1, 2).selectExpr(
        "id", f"element_at(array({values}), cast(id % 4 + 1 as int)) as v"
    )
    frame.write.format("looseleaf").options(**options).partitionBy("v").mode("overwrite").save(url)
    frame.write.partitionBy("v").mode("overwrite").parquet(parquet)


def _on_read_escaped_partition_values(spark, url: str, options: dict[str, str], parquet: str) -> dict:
    answers = {}
    for name, data in (
        ("looseleaf", spark.read.format("looseleaf").options(**options).load(url)),
        ("parquet", spark.read.parquet(parquet)),
    ):
        answers[name] = _sorted(data.groupBy("v").agg({"*": "count", "id": "sum"}).collect())
        answers[f"{name} west/x"] = _sorted(data.filter("v = 'west/x'").select("id").collect())
    return answers


def test_partition_values_escaped_in_directory_names_on_s3(driver, s3, storage, tmp_path):
    """Values that directory names escape (``/`` → ``%2F``, space → ``%20``, ``%`` → ``%25``,
    ``=`` → ``%3D``, as pyarrow writes them) name S3 keys with those escapes in them, and read
    back as themselves."""
    url, parquet = f"s3a://{BUCKET}/escaped", str(tmp_path / "parquet")
    driver.call(_on_write_escaped_partition_values, url, storage, parquet)
    listing = s3.client().list_objects_v2(Bucket=BUCKET, Prefix="escaped/").get("Contents", [])
    keys = [o["Key"] for o in listing]
    directories = {k.split("/")[1] for k in keys if k.endswith(".leaf") and "/_" not in k}
    assert directories == {"v=south%20east", "v=west%2Fx", "v=100%25", "v=a%3Db"}, keys
    answers = driver.call(_on_read_escaped_partition_values, url, storage, parquet)
    expected = _sorted((v, 100, sum(range(i, 400, 4))) for i, v in enumerate(ESCAPED))
    assert answers["parquet"] == expected
    assert answers["looseleaf"] == expected
    assert answers["looseleaf west/x"] == answers["parquet west/x"]
    dataset = looseleaf.dataset(f"s3://{BUCKET}/escaped", storage_options=s3.storage_options())
    assert sorted(dataset.to_table().column("v").to_pylist()) == sorted(ESCAPED * 100)

"""Smoke test of the side-by-side benchmark: ``benches/compare.py --quick`` runs end to end and
reports every measure for looseleaf and Parquet. It asserts nothing about how fast anything is."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benches" / "compare.py"


def _load_compare():
    spec = importlib.util.spec_from_file_location("compare", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The data sets and measures the script promises (its own lists: the test checks it keeps them).
_compare = _load_compare()
DATASETS = _compare.DATASETS
MEASURES = _compare.MEASURES


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def test_quick_run_reports_every_measure(tmp_path: Path) -> None:
    out = tmp_path / "results"
    command = [sys.executable, str(SCRIPT), "--quick", "--out", str(out), "--data", str(tmp_path / "data")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    results = json.loads((out / "results.json").read_text())
    assert (out / "results.md").read_text().startswith("# looseleaf side by side")
    assert results["meta"]["quick"] is True
    assert isinstance(results["meta"]["cold"]["possible"], bool)
    for key in ("memcpy_gbps_1_thread", "memcpy_gbps_all_threads"):
        assert _number(results["limits"][key])
        assert results["limits"][key] > 0
    for dataset in DATASETS:
        info = results["datasets"][dataset]
        assert info["rows"] > 0
        assert info["take_consistent"], f"{dataset}: the systems' take results differ"
        assert _number(results["limits"]["sequential_read"][dataset]["cold_gbps"])
        for system in ("looseleaf", "parquet"):
            measures = info["systems"][system]["measures"]
            for measure in MEASURES:
                entry = measures.get(measure)
                assert entry is not None, f"{dataset}/{system}: no {measure}"
                assert "error" not in entry, f"{dataset}/{system}/{measure}: {entry.get('error')}"
                assert _number(entry["value"]), f"{dataset}/{system}/{measure}: {entry['value']!r}"
                assert entry["value"] >= 0
            for measure in MEASURES[2:-1]:  # the timed ones
                assert len(measures[measure]["samples"]) >= 1
        for measure in MEASURES:
            ratio = results["ratios"][dataset][measure]
            assert ratio["best_peer"] == "parquet"
            assert _number(ratio["advantage"])

    extras = results["lineitem"]
    assert {c["name"] for c in extras["columns"]} >= {"l_orderkey", "l_comment", "l_shipmode"}
    for column in extras["columns"]:
        assert column["bytes"] > 0
        assert column["encodings"]
        assert _number(column["looseleaf_mbps"])
        assert _number(column["parquet_mbps"])
    assert extras["families"]
    dictionary = extras["dictionary"]
    for key in ("looseleaf_materialised", "looseleaf_dictionary"):
        assert _number(dictionary[key]["seconds"])
        assert dictionary[key]["arrow_bytes"] > 0
    assert _number(dictionary["time_ratio"])
    assert _number(dictionary["arrow_bytes_ratio"])
    assert results["targets"]
    shares = [t for t in results["targets"] if "scheduling share" in t["target"]]
    assert len(shares) == len(DATASETS), results["targets"]


def test_filter_benchmark_quick_run_is_correct(tmp_path: Path) -> None:
    """``benches/filters.py --quick`` (looseleaf and Parquet): every filtered read returns the
    rows pyarrow's ``Table.filter`` keeps; the script exits non-zero otherwise."""
    script = ROOT / "benches" / "filters.py"
    command = [sys.executable, str(script), "--quick", "--systems", "looseleaf,parquet"]
    command += ["--out", str(tmp_path / "results"), "--data", str(tmp_path / "data")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (result,) = (tmp_path / "results").glob("filters-*-quick.json")
    queries = json.loads(result.read_text())["queries"]
    assert queries
    for query in queries:
        assert query["systems"]["looseleaf"]["correct"], query["name"]
        assert query["systems"]["looseleaf"]["rows"] == query["expected"]["rows"]


def test_dataset_benchmark_quick_run_agrees_with_pyarrow(tmp_path: Path) -> None:
    """``benches/datasets.py --quick``: every query of ``looseleaf.dataset`` returns what
    ``pyarrow.dataset`` returns on the same partitioned layout; the script exits non-zero otherwise."""
    script = ROOT / "benches" / "datasets.py"
    command = [sys.executable, str(script), "--quick", "--out", str(tmp_path / "results")]
    command += ["--data", str(tmp_path / "data")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    results = json.loads((tmp_path / "results" / "datasets-quick.json").read_text())
    assert set(results) == {
        "full scan",
        "2 columns",
        "partition filter",
        "partition + column filter",
        "count",
        "take 1000",
    }

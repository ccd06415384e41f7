"""python -m suite.estimate's command line: bad input
(a reference file that cannot be read or holds impossible times, an option out of range)."""

from __future__ import annotations

import json

import pytest

from suite.estimate import main


def _exit(argv, capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's usage error
        code = exc.code
    return code, capsys.readouterr().err


def _results(tmp_path, name, **stats) -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"machine_info": {}, "benchmarks": [{"param": "p-cuda", "stats": stats}]}))
    return str(path)


@pytest.mark.parametrize(
    "content, field",
    [
        ("not json at all", "not valid JSON"),
        ("", "empty file"),
        ('{"benchmarks": "many"}', "benchmarks"),
    ],
    ids=["not-json", "empty", "benchmarks-not-a-list"],
)
def test_an_unreadable_results_file_is_named(tmp_path, capsys, content, field):
    path = tmp_path / "ref.json"
    path.write_text(content)
    code, err = _exit(["--reference", str(path)], capsys)
    assert code == 2 and str(path) in err and field in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("name", ["missing.json", "missing.csv", "missing.log"])
def test_a_missing_reference_is_named(tmp_path, capsys, name):
    path = tmp_path / name
    code, err = _exit(["--reference", str(path)], capsys)
    assert code == 2 and str(path) in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("median", [-1.0, float("nan"), 0.0, "fast"])
def test_an_impossible_median_in_a_results_file_is_refused(tmp_path, capsys, median):
    path = _results(tmp_path, "ref.json", median=median, iqr=0.0)
    code, err = _exit(["--reference", path], capsys)
    assert code == 2 and path in err and "median" in err, err
    assert "Traceback" not in err


def test_an_impossible_spread_in_a_results_file_is_refused(tmp_path, capsys):
    path = _results(tmp_path, "ref.json", median=1e-3, iqr=-1.0)
    code, err = _exit(["--reference", path], capsys)
    assert code == 2 and path in err and "iqr" in err, err


@pytest.mark.parametrize(
    "rows, field",
    [
        ("id,median_s,spread\np-cuda,-1,0.01\n", "median_s"),
        ("id,median_s,spread\np-cuda,nan,0.01\n", "median_s"),
        ("id,median_s,spread\np-cuda,0.001,-0.5\n", "spread"),
        ("id,median\np-cuda,0.001\n", "median_s"),
    ],
    ids=["negative", "nan", "negative-spread", "no-column"],
)
def test_an_impossible_row_in_a_points_csv_is_refused(tmp_path, capsys, rows, field):
    path = tmp_path / "points.csv"
    path.write_text(rows)
    code, err = _exit(["--reference", str(path)], capsys)
    assert code == 2 and str(path) in err and field in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(
    "option, value",
    [
        ("--gpus", "-1"),
        ("--memory-gib", "-5"),
        ("--memory-gib", "nan"),
        ("--cap-s", "0"),
        ("--check-s", "-0.2"),
    ],
)
def test_an_out_of_range_option_is_a_usage_error(capsys, option, value):
    code, err = _exit([option, value], capsys)
    assert code == 2 and option in err and "Traceback" not in err, err


def test_an_impossible_median_in_a_saved_log_is_refused(tmp_path, capsys):
    path = tmp_path / "run.log"
    path.write_text(
        "Name (time in us)  Min Max Mean StdDev Median IQR Outliers OPS Rounds Iterations\n"
        "test_benchmark[p-cuda]  1.0 2.0 1.5 0.1 -1.0 0.2 1;0 100.0 10 1\n"
    )
    code, err = _exit(["--reference", str(path)], capsys)
    assert code == 2 and str(path) in err and "line 2" in err and "Median" in err, err

"""The report's History section (reports/history/report.py): a planted 20% step found at its run and shown."""

from __future__ import annotations

import numpy as np

from reports.__main__ import main
from reports.history import changes, ingest, report, store
from tests.history_runs import history_doc as _doc
from tests.history_runs import write_runs as _write


def test_a_planted_20_percent_step_is_found_at_its_run_and_shown_in_the_report(tmp_path):
    docs = [_doc(i, step_at=5, step=0.2, sizes=(128, 256)) for i in range(8)]
    history = tmp_path / "results" / "history.sqlite"
    paths = _write(tmp_path / "results", docs)
    ingest.add_files(history, paths)
    found = changes.changes(history)
    with store.connect(history) as db:
        step_run = int(store.runs(db).iloc[5]["id"])
    speed = [c for c in found if c.kind == "speed-up"]
    assert speed and {c.run_id for c in speed} == {step_run}
    assert {c.size for c in speed} == {"n128", "n256"} and all(-0.25 < c.change < -0.15 for c in speed)
    # the report: its History section marks the change at that run
    (view,) = report.views(history)
    assert view.plot.startswith(b"\x89PNG") and {row[0] for row in view.changes} == {step_run}
    out = tmp_path / "out"
    assert main(["build", str(paths[-1]), "--out", str(out)]) == 0  # the history beside the results
    page = (out / "index.html").read_text()
    assert 'id="history-distance.pairwise"' in page and f"<td>{step_run}</td>" in page
    assert list((out / "plots").glob("history--distance.pairwise*.png"))


def test_the_history_plot_labels_no_tick_in_raw_mathtext(monkeypatch):
    """The reports turn mathtext off (reports/plots.py), so a log axis's default minor labels
    printed as "$\\mathdefault{3\\times10^{2}}$" beside the speed-ups."""
    import pandas as pd

    from reports import plots

    drawn = []
    real_png = plots._png
    monkeypatch.setattr(plots, "_png", lambda fig: drawn.append(fig) or real_png(fig))
    logs = np.log([20.0, 22.0, 150.0, 140.0, 300.0, 320.0])  # a decade and a half: minor ticks labelled
    series = {
        "n128": pd.DataFrame({"run_id": range(6), "commit_id": ["abc"] * 6, "time": range(6), "log": logs})
    }
    report.history_plot(series, {}, "t")
    (fig,) = drawn
    (ax,) = fig.axes
    labels = [t.get_text() for t in ax.yaxis.get_majorticklabels() + ax.yaxis.get_minorticklabels()]
    assert any(labels) and not [t for t in labels if "$" in t], labels

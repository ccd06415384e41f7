"""index.html's parts (reports/html.py): every text from a results file escaped, badges and
numbers that say nothing where there is nothing, images inline, and what to use read from the
compared pairs."""

from __future__ import annotations

import base64

import pandas as pd

from reports import html


def test_text_from_results_is_escaped_and_a_missing_value_is_blank():
    assert html.esc('<script>"x"</script>') == "&lt;script&gt;&quot;x&quot;&lt;/script&gt;"
    assert html.esc(None) == html.esc(float("nan")) == ""
    assert "&lt;b&gt;" in html.badge("<b>") and "&lt;b&gt;" in html.notes_badge("<b>")


def test_numbers_and_images():
    assert html.fmt(1234.5) == "1.23e+03" and html.fmt(float("inf")) == html.fmt(None) == ""
    assert html.img(None, "x") == ""
    tag = html.img(b"\x89PNG", 'a "plot"')
    assert base64.b64encode(b"\x89PNG").decode() in tag and 'alt="a &quot;plot&quot;"' in tag


def test_no_compared_pair_gives_no_recommendation():
    assert html.recommendation(None) is None
    assert html.recommendation(pd.DataFrame({"against": ["compiled"], "part": [""], "x": [1]})) is None


def test_the_allocator_state_the_figures_were_timed_in_is_named():
    pinned = {
        "pinned": True,
        "library": "glibc 2.36",
        "mmap_threshold": 32 * 2**20,
        "transparent_hugepages": "madvise",
    }
    text = html.allocator_state(pinned)
    assert "glibc 2.36 thresholds pinned" in text and "under 32 MiB" in text and "settled" in text
    assert "madvise" in text
    loose = html.allocator_state({"pinned": False, "why": "C library musl: thresholds not pinned"})
    assert loose.startswith("not pinned (C library musl") and "ran before" in loose
    assert html.allocator_state(None) == "not recorded"


def _pair_row(**faulted) -> dict:
    row = dict(
        size_label="n128",
        dtype="float32",
        device="cpu",
        fast="matmul",
        slow="broadcast",
        against="rule",
        fast_median_s=1e-4,
        slow_median_s=1.4e-3,
        speedup=14.0,
        ci_low=13.0,
        ci_high=15.0,
        gain="faster",
        memory_ratio=2.0,
        quality="",
    )
    nan = float("nan")
    return row | {"fast_faulted_s": nan, "slow_faulted_s": nan, "faulted_speedup": nan} | faulted


def test_the_comparison_table_names_both_allocator_states_where_both_were_timed():
    both = html._summary_table(
        pd.DataFrame([_pair_row(fast_faulted_s=2e-4, slow_faulted_s=8.6e-3, faulted_speedup=43.0)])
    )
    assert "pages faulted each call: it, baseline, speed-up" in both and "settled heap" in both
    assert "0.2 ms, 8.6 ms, 43×" in both
    settled_only = html._summary_table(pd.DataFrame([_pair_row()]))
    assert "pages faulted" not in settled_only and "settled heap" not in settled_only


def test_a_faulted_figure_left_out_as_busy_says_so():
    cell = html._summary_table(
        pd.DataFrame([_pair_row(fast_faulted_s=2e-4, faulted_busy="a spinner per core got only 40%")])
    )
    assert "left out, machine busy: a spinner per core got only 40%" in cell


def test_the_comparison_table_shows_the_gpu_only_figures_and_a_host_bound_fast_side():
    nan = float("nan")
    graphed = _pair_row(device="cuda", fast_graph_s=3.6e-5, slow_graph_s=1.692e-3, graph_speedup=47.0)
    cell = html._summary_table(
        pd.DataFrame([graphed | {"host_bound": "host-bound: matmul ran at the host's pace"}])
    )
    assert "GPU only (CUDA-graph replay): it, baseline, speed-up" in cell
    assert "0.036 ms, 1.69 ms, 47×" in cell and "host-bound: the rounds' speed-up is the host's" in cell
    quiet = html._summary_table(pd.DataFrame([graphed | {"host_bound": ""}]))
    assert "GPU only" in quiet and "host-bound" not in quiet
    cpu = html._summary_table(
        pd.DataFrame([_pair_row(fast_graph_s=nan, slow_graph_s=nan, graph_speedup=nan)])
    )
    assert "GPU only" not in cpu


def test_the_advice_for_a_host_bound_pair_does_not_read_its_speedup_as_the_gpus():
    row = _pair_row(device="cuda", part="", x=1024.0, identical=False, graph_speedup=47.0)
    bound = html.recommendation(
        pd.DataFrame([row | {"host_bound": "host-bound: matmul ran at the host's pace"}])
    )
    assert (
        bound[0]
        == "matmul (14× faster than broadcast); host-bound here, so not the GPU's figure (GPU only: 47×)"
    )
    assert (
        html.recommendation(pd.DataFrame([row | {"host_bound": ""}]))[0]
        == "matmul (14× faster than broadcast)"
    )

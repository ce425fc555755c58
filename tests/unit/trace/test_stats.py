"""Unit tests of pddplan.trace.stats, .analysis and .workload: histograms, curve, workload YAML."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from pddplan.deployment import request_classes
from pddplan.errors import UsageError
from pddplan.io.loader import load_file
from pddplan.spec import Workload
from pddplan.trace import CapacityCurve, analyze, capacity_curve, replay_trace
from pddplan.trace.stats import (
    DEFAULT_EDGES,
    anomalous_mask,
    arrival_rate,
    check_edges,
    compress_empirical,
    curve_from_hits,
    histogram,
    percentiles,
    probabilities,
)
from pddplan.trace.workload import (
    ZERO_HIT_EDGE,
    WorkloadInputs,
    workload_document,
    write_workload,
    zero_hit_edges,
)

DATA = Path(__file__).resolve().parents[2] / "data"


def test_default_edges_are_the_briefs_seven_bins() -> None:
    assert DEFAULT_EDGES == (0.0, 0.9, 0.93, 0.95, 0.97, 0.98, 0.99, 1.0)


def test_histogram_bins_are_half_open_except_the_last() -> None:
    h = np.array([0.0, 0.899, 0.9, 0.95, 0.9899, 0.99, 1.0, 1.0])
    assert histogram(h, np.array(DEFAULT_EDGES)).tolist() == [2, 1, 0, 1, 0, 1, 3]


def test_probabilities_sum_to_one_exactly() -> None:
    p = probabilities(np.array([1, 1, 1]))
    assert p == [0.333334, 0.333333, 0.333333]  # the remainder unit goes to the first tie
    assert math.fsum(p) == pytest.approx(1.0, abs=1e-12)
    assert probabilities(np.array([0, 5, 0])) == [0.0, 1.0, 0.0]
    with pytest.raises(ValueError):
        probabilities(np.array([0, 0]))


def test_check_edges() -> None:
    assert check_edges([0, 0.5, 1]).tolist() == [0, 0.5, 1]
    for bad in ([0.1, 1], [0, 0.9], [0, 0.5, 0.5, 1], [0]):
        with pytest.raises(UsageError):
            check_edges(bad)


def test_percentiles_by_hand() -> None:
    p = percentiles(np.arange(1, 101))
    assert p["mean"] == 50.5 and p["max"] == 100
    assert p["p50"] == pytest.approx(50.5)
    assert p["p90"] == pytest.approx(90.1)
    assert math.isnan(percentiles(np.array([]))["p99"])


def test_arrival_rate() -> None:
    assert arrival_rate(np.array([0.0, 1000.0, 2000.0, 4000.0])) == (4.0, 0.75)
    assert arrival_rate(np.array([5.0])) == (None, None)
    assert arrival_rate(np.array([np.nan, 1.0])) == (None, None)
    assert arrival_rate(np.array([3.0, 3.0])) == (0.0, None)


def test_anomalous_mask_by_hand() -> None:
    inp = np.array([40000, 40000, 32768, 32767, 100])
    out = np.array([499, 500, 10, 10, 10])
    assert anomalous_mask(inp, out, 32768, 500).tolist() == [True, False, True, False, False]


def test_compress_empirical_exact_when_few_values() -> None:
    v, w = compress_empirical(np.array([5, 3, 5, 9]), 50)
    assert (v, w) == ([3, 5, 9], [1, 2, 1])


def test_compress_empirical_keeps_count_mean_and_bound() -> None:
    rng = np.random.default_rng(3)
    x = np.round(rng.lognormal(8, 1.2, 20_000)).astype(int) + 1
    v, w = compress_empirical(x, 50)
    assert len(v) <= 50
    assert v == sorted(v)
    assert sum(w) == len(x)
    assert np.average(v, weights=w) == pytest.approx(x.mean(), rel=1e-4)
    assert min(v) >= x.min() and max(v) <= x.max()


def test_curve_from_hits_in_chunks_and_rows_gives_the_same_floats() -> None:
    rng = np.random.default_rng(5)
    n, k = 5000, 3
    inp = rng.integers(1, 9000, n).astype(float)
    hits = np.minimum(rng.integers(0, 20, (n, k)) * 512.0, inp[:, None])
    rows = rng.random(n) < 0.7
    caps = [math.inf, 1e6, 2e6]
    whole = curve_from_hits(caps, inp[rows], hits[rows], keep_samples=True, chunk_rows=n)
    parts = curve_from_hits(caps, inp[rows], hits, keep_samples=True, rows=rows, chunk_rows=777)
    for name in (
        "mean_hit_rate",
        "token_weighted_hit_rate",
        "share_above_95",
        "no_hit_share",
        "histograms",
    ):
        assert np.array_equal(getattr(whole, name), getattr(parts, name)), name
    # one sum(axis=0) over all rows, as before chunking
    assert np.array_equal(
        whole.mean_hit_rate, (hits[rows] / inp[rows, None]).mean(axis=0)[[1, 2, 0]]
    )
    assert whole.samples is not None and parts.samples is not None
    assert all(np.array_equal(a, b) for a, b in zip(whole.samples, parts.samples, strict=True))
    one = curve_from_hits([math.inf], inp, hits[:, :1], chunk_rows=777)  # summed pairwise
    assert one.mean_hit_rate[0] == (hits[:, :1] / inp[:, None]).mean(axis=0)[0]


def test_curve_from_hits_by_hand() -> None:
    inp = np.array([1000.0, 1000.0, 2000.0, 4000.0])
    hits = np.array([[0, 0], [500, 1000], [1900, 2000], [4000, 4000]], dtype=float)
    c = curve_from_hits([math.inf, 1e6], inp, hits, edges=[0, 0.5, 0.95, 1])
    assert c.capacity_tokens.tolist() == [1e6, math.inf]  # sorted, unbounded last
    assert c.mean_hit_rate.tolist() == pytest.approx(
        [(0 + 1 + 1 + 1) / 4, (0 + 0.5 + 0.95 + 1) / 4]
    )
    assert c.token_weighted_hit_rate.tolist() == pytest.approx([7000 / 8000, 6400 / 8000])
    assert c.share_above_95.tolist() == [0.75, 0.5]
    assert c.no_hit_share.tolist() == [0.25, 0.25]
    assert c.histograms.tolist() == [[0.25, 0.0, 0.75], [0.25, 0.25, 0.5]]
    assert c.labels() == ["1000000", "unbounded"]
    assert c.smallest_capacity(share_above_95=0.6) == 1e6
    assert c.smallest_capacity(share_above_95=0.9) is None


def test_curve_csv_round_trip(tmp_path: Path) -> None:
    c = capacity_curve(DATA / "mooncake_excerpt.jsonl", [math.inf, 64 * 512, 8 * 512])
    p = tmp_path / "curve.csv"
    c.to_csv(p)
    back = CapacityCurve.from_csv(p)
    assert back.capacity_tokens.tolist() == [4096, 32768, math.inf]
    for name in ("mean_hit_rate", "token_weighted_hit_rate", "share_above_95", "no_hit_share"):
        assert getattr(back, name).tolist() == pytest.approx(getattr(c, name).tolist())
    assert back.bin_edges.tolist() == list(DEFAULT_EDGES)
    assert back.histograms == pytest.approx(c.histograms)
    assert back.requests == 300 and back.block_tokens == 512
    edges, probs = back.bins(2)
    assert edges == list(DEFAULT_EDGES) and math.fsum(probs) == pytest.approx(1, abs=1e-12)


def test_curve_samples_and_monotone_capacity() -> None:
    caps = [4 * 512, 16 * 512, 64 * 512, 256 * 512, math.inf]
    c = capacity_curve(DATA / "mooncake_excerpt.jsonl", caps, keep_samples=True)
    assert c.samples is not None and len(c.samples) == 5
    assert all(len(s) == 300 for s in c.samples)
    for a, b in zip(c.samples, c.samples[1:], strict=False):
        assert np.all(a <= b + 1e-7)  # a bigger cache never lowers a request's hit
    assert np.all(np.diff(c.mean_hit_rate) >= 0)


# -------------------------------------------------------------------------------- workload


def _inputs() -> WorkloadInputs:
    return WorkloadInputs(
        input_tokens=np.array([1000, 2000, 40000, 50000, 3000]),
        output_tokens=np.array([100, 200, 100, 800, 0]),
        hit_rate=np.array([0.0, 0.5, 0.99, 0.96, 1.0]),
        anomalous=np.array([False, False, True, False, False]),
        rate_rps=2.5,
    )


def test_workload_document_by_hand() -> None:
    doc = workload_document(
        "w",
        "hand-made",
        _inputs(),
        edges=np.array(DEFAULT_EDGES),
        anomalous_input_tokens=32768,
        anomalous_output_tokens=500,
    )
    assert doc["input_tokens"] == {
        "empirical": {"values": [1000, 2000, 3000, 50000], "weights": [1, 1, 1, 1]}
    }
    # output 0 is written as 1 token (lengths must be positive)
    assert doc["output_tokens"]["empirical"]["values"] == [1, 100, 200, 800]
    # the regular request with no hit has a bin of its own below ZERO_HIT_EDGE
    assert doc["hit_rate"]["bins"]["edges"] == [0.0, ZERO_HIT_EDGE, *DEFAULT_EDGES[1:]]
    assert doc["hit_rate"]["bins"]["probabilities"] == [0.25, 0.25, 0, 0, 0.25, 0, 0, 0.25]
    assert doc["anomalous"] == {
        "share": 0.2,
        "input_tokens": {"fixed": 40000},
        "output_tokens": {"fixed": 100},
        "hit_rate": 0.99,
        "output_threshold_tokens": 500,
    }
    assert doc["rate_rps"] == 2.5
    Workload.model_validate(doc)


def test_workload_without_anomalous_or_rate() -> None:
    data = _inputs()
    data = WorkloadInputs(
        data.input_tokens,
        data.output_tokens,
        data.hit_rate,
        np.zeros(5, dtype=bool),
        None,
    )
    doc = workload_document(
        "w",
        "hand-made",
        data,
        edges=np.array([0.0, 0.5, 1.0]),
        anomalous_input_tokens=32768,
        anomalous_output_tokens=500,
    )
    assert "anomalous" not in doc and "rate_rps" not in doc
    assert doc["hit_rate"]["bins"] == {
        "edges": [0.0, ZERO_HIT_EDGE, 0.5, 1.0],
        "probabilities": [0.2, 0.0, 0.8],
    }


def test_requests_without_a_hit_are_written_in_a_bin_of_their_own() -> None:
    """A bin's classes sit evenly inside it: the requests with no hit, in the brief's first bin
    ``[0, 0.9)``, were planned at 0.15, 0.45 and 0.75. They get a bin ``[0, 0.001)`` of their
    own; without such requests (or with a first bin that ends there already) the edges are
    the ones asked."""
    hits = np.array([0.0, 0.0, 0.3, 0.95])
    assert zero_hit_edges(np.array(DEFAULT_EDGES), hits).tolist() == [
        0.0,
        ZERO_HIT_EDGE,
        *DEFAULT_EDGES[1:],
    ]
    assert zero_hit_edges(np.array(DEFAULT_EDGES), hits[2:]).tolist() == list(DEFAULT_EDGES)
    small = [0.0, 0.0005, 1.0]
    assert zero_hit_edges(np.array(small), hits).tolist() == small


def test_written_workload_loads_and_discretizes(tmp_path: Path) -> None:
    r = replay_trace(DATA / "mooncake_excerpt.jsonl", jobs=1)
    a = analyze(r, warmup_s=10)
    out = tmp_path / "excerpt-wl.yaml"
    doc = workload_document(
        out.stem,
        "test of the excerpt",
        a.workload_inputs(0),
        edges=a.edges,
        anomalous_input_tokens=32768,
        anomalous_output_tokens=500,
    )
    write_workload(out, doc, header="a header line")
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# a header line\n")
    wl = load_file(out, "workload")
    assert wl.name == "excerpt-wl"
    assert math.fsum(wl.hit_rate.bins.probabilities) == pytest.approx(1.0, abs=1e-9)
    assert len(wl.input_tokens.empirical.values) <= 50
    assert wl.rate_rps == pytest.approx(a.stats.rate_rps, rel=1e-6)
    assert wl.anomalous.share == pytest.approx(a.stats.anomalous_share, abs=1e-6)
    classes = request_classes(wl)  # what solve does with a workload
    assert classes.weight.sum() == pytest.approx(1.0)


def test_analyze_warmup_and_report() -> None:
    r = replay_trace(DATA / "mooncake_excerpt.jsonl", [math.inf, 32 * 512], jobs=1)
    a = analyze(r, warmup_s=30)
    t = r.timestamp_ms
    assert a.stats.requests == int(np.sum(t >= t.min() + 30_000))
    assert a.curve.capacity_tokens.tolist() == [32 * 512, math.inf]
    assert a.order.tolist() == [1, 0]
    with pytest.raises(UsageError, match="leaves no requests"):
        analyze(r, warmup_s=10_000)
    from pddplan.results.hitrate import build_report

    rep = build_report(a)
    doc = json.loads(json.dumps(rep.json_document(), default=str))
    assert doc["trace"]["requests"] == a.stats.requests
    assert [d["cache_tokens"] for d in doc["distributions"]] == [16384, "unbounded"]
    assert [s.title for s in rep.sections][:3] == ["trace", "lengths", "hit rate by cache capacity"]

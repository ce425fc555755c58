"""Unit tests of pddplan.deployment: model numbers of the bundled profiles, instances, and the
workload's request classes."""

from __future__ import annotations

import numpy as np
import pytest

from pddplan import units
from pddplan.deployment import (
    Instance,
    hit_rate_points,
    length_points,
    model_numbers,
    request_classes,
)
from pddplan.io.loader import Registry
from pddplan.models import memory
from pddplan.spec import HitRateDist, LognormalLength, Workload

# Published totals / actives (shared/reference/models.md, the models' cards).
PUBLISHED_TOTAL = {
    "deepseek-v3": 671e9,
    "qwen3-235b-a22b": 235e9,
    "llama-3.1-70b": 70.6e9,
    "qwen3-32b": 32.8e9,
    "kimi-k2": 1.04e12,
}
PUBLISHED_ACTIVE = {"deepseek-v3": 37e9, "qwen3-235b-a22b": 22e9}

# KV bytes per token from shared/reference/models.md: (BF16, FP8) per model.
MODELS_MD_KV = {
    "deepseek-v3": (70_272, 35_136),
    "kimi-k2": (70_272, 35_136),
    "qwen3-235b-a22b": (192_512, 96_256),
    "qwen3-32b": (262_144, 131_072),
    "llama-3.1-70b": (327_680, 163_840),
    "llama-3.1-405b": (516_096, 258_048),
    "glm-4.5": (376_832, 188_416),
}


@pytest.fixture(scope="module")
def reg() -> Registry:
    from pddplan.io.loader import bundled_profiles_dir

    return Registry(dirs=[bundled_profiles_dir()])


@pytest.mark.parametrize("name", sorted(PUBLISHED_TOTAL))
def test_total_params_within_2pct_of_published(reg: Registry, name: str) -> None:
    m = model_numbers(reg.load("model", name))
    assert m.total_params == pytest.approx(PUBLISHED_TOTAL[name], rel=0.02)


@pytest.mark.parametrize("name", sorted(PUBLISHED_ACTIVE))
def test_active_params_within_5pct_of_published(reg: Registry, name: str) -> None:
    m = model_numbers(reg.load("model", name))
    assert m.active_params == pytest.approx(PUBLISHED_ACTIVE[name], rel=0.05)
    assert m.active_params < m.total_params


@pytest.mark.parametrize("name", sorted(MODELS_MD_KV))
def test_kv_bytes_per_token_match_models_md(reg: Registry, name: str) -> None:
    model = reg.load("model", name)
    bf16, fp8 = MODELS_MD_KV[name]
    expected = {"bf16": bf16, "fp16": bf16, "fp8": fp8, "int8": fp8}[model.dtypes.kv_cache]
    assert model_numbers(model).kv_bytes_per_token == expected


def test_llama_70b_numbers(reg: Registry) -> None:
    m = model_numbers(reg.load("model", "llama-3.1-70b"))
    assert m.kv_bytes_per_token == 327_680  # BF16 profile
    assert m.total_params == 70_552_387_584  # 80 * 855,638,016 + 2 * 128,256 * 8192
    # dense: active = total - input embedding (lookup, no FLOPs) = 70,552,387,584 - 1,050,673,152
    assert m.active_params == 70_552_387_584 - 128_256 * 8192
    assert (m.experts, m.top_k, m.expert_params) == (0, 0, 0.0)
    assert not m.kv_latent and m.kv_heads == 8
    assert m.kv_replication(8) == 1.0
    assert m.kv_replication(16) == 2.0


def test_deepseek_v3_numbers(reg: Registry) -> None:
    model = reg.load("model", "deepseek-v3")
    m = model_numbers(model)
    expected_kv = {"bf16": 70_272, "fp8": 35_136}[model.dtypes.kv_cache]
    assert m.kv_bytes_per_token == expected_kv
    assert m.kv_latent
    assert m.kv_replication(8) == 8.0  # latent KV: one whole copy per rank
    assert (m.experts, m.top_k) == (256, 8)
    # one routed expert over the 58 MoE layers: 58 * 3 * 7168 * 2048 = 2,554,331,136
    assert m.expert_params == 58 * 3 * 7168 * 2048
    assert m.dense_params + 256 * m.expert_params == pytest.approx(m.total_params)
    # attention FLOPs per (query, key) pair: 2 * 61 * 128 * (192 + 128) = 4,997,120
    assert m.attention_flops_per_pair == 4_997_120


def test_params_override_is_used(reg: Registry) -> None:
    m = model_numbers(reg.load("model", "deepseek-v4-pro"))
    assert m.total_params == 1.6e12
    assert m.active_params == 49e9
    # (total - active) / (experts - top_k) per expert; dense + experts * expert = total
    assert m.expert_params == pytest.approx((1.6e12 - 49e9) / (384 - 6))
    assert m.dense_params + 384 * m.expert_params == pytest.approx(1.6e12)
    assert m.kv_bytes_per_token == 4400.0
    assert m.kv_bytes_per_sequence == 21e6


def test_every_bundled_model_has_sane_numbers(reg: Registry) -> None:
    for name in reg.index("model"):
        m = model_numbers(reg.load("model", name))
        assert 0 < m.active_params <= m.total_params, name
        assert m.kv_bytes_per_token > 0, name
        assert m.attention_flops_per_pair > 0, name


# ------------------------------------------------------------------------------------ Instance


def test_instance_llama_on_h100(reg: Registry) -> None:
    chip = reg.load("chip", "h100-sxm")
    m = model_numbers(reg.load("model", "llama-3.1-70b"))
    inst = Instance(chip, m, 8)
    assert inst.label == "h100-sxmx8"
    assert inst.price_usd_per_hour == pytest.approx(8 * chip.price.rental_usd_per_hour)
    # BF16 model on H100: BF16 peak 989 TFLOPS
    assert inst.peak_flops_per_s == pytest.approx(989e12)
    assert inst.memory_bytes_per_chip == 80e9
    # 70,552,387,584 * 2 B / 8 = 17,638,096,896 B per chip
    assert inst.weight_bytes_per_chip == pytest.approx(17_638_096_896)
    assert inst.kv_bytes_per_token_per_instance == 327_680
    assert inst.fits
    # memory: 8 * (72e9 - 17.638e9) = 434.895e9 free; at 8192 tokens 2.684e9 each -> 162
    assert inst.max_batch_memory(8192) == 162
    assert inst.max_batch_memory(8192) == int(
        memory.max_batch_in_memory(8192, 80e9, 8, 0.9, inst.weight_bytes_per_chip, 327_680)
    )


def test_instance_fp8_model_uses_fp8_peak(reg: Registry) -> None:
    chip = reg.load("chip", "h100-sxm")
    model = reg.load("model", "deepseek-v3")
    inst = Instance(chip, model_numbers(model), 8)
    if model.dtypes.weights == "fp8":
        assert inst.peak_flops_per_s == pytest.approx(1979e12)
    # latent KV replicated on all 8 ranks
    assert inst.kv_bytes_per_token_per_instance == 8 * model_numbers(model).kv_bytes_per_token
    # 671 GB of FP8 weights do not fit on 8 x 80 GB at 90% (83.9 GB per chip)
    assert not inst.fits
    assert inst.max_batch_memory(8192) == 0


def test_instance_gqa_replication_beyond_kv_heads(reg: Registry) -> None:
    chip = reg.load("chip", "h100-sxm")
    m = model_numbers(reg.load("model", "llama-3.1-70b"))
    assert Instance(chip, m, 16).kv_bytes_per_token_per_instance == 2 * 327_680


def test_instance_step_functions_array_matches_scalar(reg: Registry) -> None:
    chip = reg.load("chip", "h100-sxm")
    inst = Instance(chip, model_numbers(reg.load("model", "llama-3.1-70b")), 8)
    b = np.array([1.0, 8.0, 64.0])
    out = inst.decode_step_s(b, 8192.0)
    for i in range(3):
        assert out[i] == pytest.approx(float(inst.decode_step_s(b[i], 8192.0)), rel=1e-12)
    u = np.array([100.0, 8192.0, 20_000.0])
    pre = inst.prefill_s(u, 1000.0, 8192)
    for i in range(3):
        assert pre[i] == pytest.approx(float(inst.prefill_s(u[i], 1000.0, 8192)), rel=1e-12)
    # decode at batch 1 is memory-bound: at least weights / (3.35 TB/s * 0.8)
    assert out[0] >= inst.weight_bytes_per_chip / (3.35e12 * 0.8)


def test_instance_extend_affine(reg: Registry) -> None:
    chip = reg.load("chip", "h100-sxm")
    inst = Instance(chip, model_numbers(reg.load("model", "llama-3.1-70b")), 8)
    e0, e1 = inst.extend_affine(8192.0)
    assert e0 > 0 and e1 >= 0
    # the fit passes through k = 1 and k = 256
    assert e0 + e1 * 256 == pytest.approx(float(inst.extend_s(256.0, 8192.0)), rel=1e-9)
    assert e0 + e1 == pytest.approx(float(inst.extend_s(1.0, 8192.0)), rel=1e-9)


def test_max_batch_at_tpot_meets_target(reg: Registry) -> None:
    chip = reg.load("chip", "h100-sxm")
    inst = Instance(chip, model_numbers(reg.load("model", "llama-3.1-70b")), 8)
    b = inst.max_batch_at_tpot(8192.0, 0.05)
    assert 1 <= b <= inst.max_batch_memory(8192.0)
    assert float(inst.decode_step_s(b, 8192.0)) <= 0.05


# ---------------------------------------------------------------------------- request classes


def _workload(**over) -> Workload:
    data = {
        "name": "t",
        "source": "unit test",
        "input_tokens": {"fixed": 64512},
        "output_tokens": {"fixed": 1024},
        "hit_rate": {
            "bins": {
                "edges": [0.0, 0.9, 0.93, 0.95, 0.97, 0.98, 0.99, 1.0],
                "probabilities": [0.12, 0.05, 0.08, 0.15, 0.15, 0.2, 0.25],
            }
        },
        "anomalous": {
            "share": 0.035,
            "input_tokens": {"fixed": 120000},
            "output_tokens": {"fixed": 200},
        },
    }
    data.update(over)
    return Workload.model_validate(data)


def test_request_classes_weights_and_anomalous_share() -> None:
    rc = request_classes(_workload(), points_per_bin=3, n_length=3)
    # 7 bins x 3 points x 1 input x 1 output = 21 normal classes + 1 anomalous
    assert len(rc) == 22
    assert rc.weight.sum() == pytest.approx(1.0)
    assert rc.weight[rc.anomalous].sum() == pytest.approx(0.035)
    assert np.all(rc.input_tokens[rc.anomalous] == 120000)
    assert np.all(rc.output_tokens[rc.anomalous] == 200)
    assert np.all(rc.hit_rate[rc.anomalous] == 0.0)
    # the normal classes' mean hit rate is the bins' midpoint mean:
    # .12*.45 + .05*.915 + .08*.94 + .15*.96 + .15*.975 + .2*.985 + .25*.995
    # = .054 + .04575 + .0752 + .144 + .14625 + .197 + .24875 = 0.91095
    normal = ~rc.anomalous
    mean_hit = np.sum(rc.hit_rate[normal] * rc.weight[normal]) / rc.weight[normal].sum()
    assert mean_hit == pytest.approx(0.91095)


def test_request_classes_anomalous_filter_off_keeps_share_unflagged() -> None:
    rc = request_classes(_workload(), anomalous_filter=False)
    assert not rc.anomalous.any()
    assert rc.weight.sum() == pytest.approx(1.0)
    assert rc.weight[rc.input_tokens == 120000].sum() == pytest.approx(0.035)


def test_request_classes_cached_and_uncached_tokens() -> None:
    rc = request_classes(_workload(anomalous=None))
    assert rc.weight.sum() == pytest.approx(1.0)
    np.testing.assert_array_equal(rc.cached_tokens + rc.uncached_tokens, rc.input_tokens)
    np.testing.assert_array_equal(rc.cached_tokens, np.floor(rc.input_tokens * rc.hit_rate))


def test_request_classes_bundled_workloads(reg: Registry) -> None:
    for name in reg.index("workload"):
        wl = reg.load("workload", name)
        rc = request_classes(wl)
        assert rc.weight.sum() == pytest.approx(1.0), name
        share = wl.anomalous.share if wl.anomalous else 0.0
        assert rc.weight[rc.anomalous].sum() == pytest.approx(share), name
        assert np.all((rc.hit_rate >= 0) & (rc.hit_rate <= 1)), name


def test_length_points_fixed() -> None:
    from pddplan.spec import FixedLength

    v, w = length_points(FixedLength(fixed=1024), 3)
    np.testing.assert_array_equal(v, [1024.0])
    np.testing.assert_array_equal(w, [1.0])


@pytest.mark.parametrize("cv", [0.3, 0.8, 1.0])
def test_length_points_lognormal_mean_within_5pct(cv: float) -> None:
    """The discretized lognormal keeps the distribution's mean within 5 %, at the default
    number of points the solver uses (Serving.length_points = 3)."""
    from pddplan.spec import Serving

    n = Serving().length_points
    v, w = length_points(LognormalLength(lognormal={"mean": 2000.0, "cv": cv}), n)
    assert w.sum() == pytest.approx(1.0)
    assert float(np.sum(v * w)) == pytest.approx(2000.0, rel=0.05)


def test_length_points_lognormal_many_points_mean_within_5pct() -> None:
    # with 50 points the equal-probability quantiles hold the mean of a CV 1 lognormal
    v, w = length_points(LognormalLength(lognormal={"mean": 2000.0, "cv": 1.0}), 50)
    assert float(np.sum(v * w)) == pytest.approx(2000.0, rel=0.05)
    assert np.all(np.diff(v) >= 0)


def test_length_points_lognormal_clipped() -> None:
    v, _ = length_points(
        LognormalLength(lognormal={"mean": 2000.0, "cv": 3.0, "min": 500, "max": 4000}), 9
    )
    assert v.min() >= 500 and v.max() <= 4000


def test_length_points_empirical_keeps_mean() -> None:
    from pddplan.spec import EmpiricalLength

    dist = EmpiricalLength(empirical={"values": list(range(100, 1100, 100))})  # mean 550
    v, w = length_points(dist, 3)
    assert len(v) <= 3
    assert w.sum() == pytest.approx(1.0)
    assert float(np.sum(v * w)) == pytest.approx(550.0, rel=0.01)


def test_hit_rate_points_bins() -> None:
    dist = HitRateDist.model_validate(
        {"bins": {"edges": [0.0, 0.5, 1.0], "probabilities": [0.2, 0.8]}}
    )
    h, w = hit_rate_points(dist, 2)
    # two points per bin at 1/4 and 3/4 of each bin
    np.testing.assert_allclose(h, [0.125, 0.375, 0.625, 0.875])
    np.testing.assert_allclose(w, [0.1, 0.1, 0.4, 0.4])


def test_hit_rate_points_shift_scale_and_mix() -> None:
    dist = HitRateDist.model_validate(
        {
            "samples": [0.5, 0.7],
            "shift": 0.1,
            "scale": 0.5,
            "mix_weight": 0.25,
            "mix_with": {"samples": [1.0]},
        }
    )
    h, w = hit_rate_points(dist, 3)
    # (0.5 + 0.1) * 0.5 = 0.3, (0.7 + 0.1) * 0.5 = 0.4, each at 0.75 / 2; then 1.0 at 0.25
    order = np.argsort(h)
    np.testing.assert_allclose(h[order], [0.3, 0.4, 1.0])
    np.testing.assert_allclose(w[order], [0.375, 0.375, 0.25])


def test_hit_rate_points_beta_mean() -> None:
    dist = HitRateDist.model_validate({"beta": {"a": 2.0, "b": 2.0}})
    h, w = hit_rate_points(dist, 3)
    assert w.sum() == pytest.approx(1.0)
    assert float(np.sum(h * w)) == pytest.approx(0.5, abs=1e-9)  # symmetric Beta(2, 2)


def test_units_used_for_instance_bandwidths(reg: Registry) -> None:
    chip = reg.load("chip", "h100-sxm")
    inst = Instance(chip, model_numbers(reg.load("model", "llama-3.1-70b")), 8)
    lay = inst.layout_numbers
    d = chip.derates
    assert lay.memory_bytes_per_s == pytest.approx(
        units.tb_per_s_to_bytes_per_s(3.35) * d.memory_bandwidth_efficiency
    )
    # one direction of the 900 GB/s bidirectional NVLink, at the achieved fraction
    assert lay.scaleup_bytes_per_s == pytest.approx(450e9 * d.scaleup_efficiency)
    assert lay.scaleout_bytes_per_s == pytest.approx(400e9 / 8 * d.scaleout_efficiency)
    assert lay.step_overhead_s == pytest.approx(d.step_overhead_ms * 1e-3)
    assert lay.layer_latency_s == pytest.approx(d.layer_latency_us * 1e-6)

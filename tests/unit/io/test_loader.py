"""Unit tests of pddplan.io.loader: strict YAML 1.2, located errors, the search path, scenarios."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pddplan.errors import NotFoundError, ProfileError, UnreadableFileError
from pddplan.io.loader import (
    ENV_VAR,
    Registry,
    bundled_profiles_dir,
    load_file,
    load_scenario,
    parse_yaml,
)
from pddplan.spec import Chip, Link

# ---------------------------------------------------------------------------------- YAML 1.2


def test_exponent_floats_are_floats() -> None:
    doc = parse_yaml("a: 1e9\nb: 1.5e-3\nc: -2E+3\nd: 10\ne: 3.\n", "x.yaml")
    assert doc.data == {"a": 1e9, "b": 1.5e-3, "c": -2000.0, "d": 10, "e": 3.0}
    assert isinstance(doc.data["a"], float)
    assert isinstance(doc.data["d"], int)


def test_only_true_false_are_booleans() -> None:
    doc = parse_yaml("a: no\nb: yes\nc: off\nd: true\ne: False\nf: on\n", "x.yaml")
    assert doc.data == {"a": "no", "b": "yes", "c": "off", "d": True, "e": False, "f": "on"}


def test_integers_are_yaml_1_2_core_integers() -> None:
    # YAML 1.1 (PyYAML's SafeLoader) read 0224 as octal 148, 2:28 as base 60 (148), and so a
    # scenario's rate_rps: 2:00 sized a plan for 120 req/s; YAML 1.2 reads 0224 as 224 and
    # leaves 2:28 a string, which the schema then refuses
    doc = parse_yaml(
        "a: 0224\nb: 2:28\nc: 0o17\nd: 0x1F\ne: -0012\nf: 1_000\ng: +7\nh: 12.0\n", "x.yaml"
    )
    assert doc.data == {
        "a": 224,
        "b": "2:28",
        "c": 15,
        "d": 31,
        "e": -12,
        "f": "1_000",
        "g": 7,
        "h": 12.0,
    }
    assert all(type(doc.data[k]) is int for k in "acdeg") and type(doc.data["h"]) is float


def test_yaml_lines_are_recorded() -> None:
    doc = parse_yaml("a:\n  b: 1\n  c:\n    - 2\n    - 3\n", "x.yaml")
    assert doc.lines[("a",)] == 1
    assert doc.lines[("a", "b")] == 2
    assert doc.lines[("a", "c")] == 3
    assert doc.lines[("a", "c", 1)] == 5


def test_float_exponent_loads_into_a_profile(tmp_path: Path) -> None:
    p = tmp_path / "expo.yaml"
    p.write_text(
        "kind: link\nname: expo\ntype: wan\nbandwidth_gbit_per_s: 1e2\nrtt_ms: 2e1\n"
        "efficiency: 8e-1\nsource: unit test\n",
        encoding="utf-8",
    )
    link = load_file(p)
    assert isinstance(link, Link)
    assert (link.bandwidth_gbit_per_s, link.rtt_ms, link.efficiency) == (100.0, 20.0, 0.8)


def test_duplicate_keys_rejected_with_both_lines(broken_dir: Path) -> None:
    path = broken_dir / "chips" / "duplicate-key.yaml"
    with pytest.raises(ProfileError) as ei:
        load_file(path)
    msg = str(ei.value)
    assert str(path) in msg
    assert "datasheet.memory_gb" in msg
    assert ":12" in msg  # the second occurrence
    assert "line 10" in msg  # the first one
    assert "duplicate" in msg


def test_duplicate_top_level_key_in_text() -> None:
    with pytest.raises(
        ProfileError, match=r"x\.yaml:3: name: duplicate key 'name' \(first at line 1\)"
    ):
        parse_yaml("name: a\nkind: chip\nname: b\n", "x.yaml")


def test_invalid_yaml_names_file_and_line() -> None:
    with pytest.raises(ProfileError) as ei:
        parse_yaml("a: 1\nb: [1, 2\nc: 3\n", "bad.yaml")
    assert re.search(r"bad\.yaml:\d+: invalid YAML", str(ei.value))


# ------------------------------------------------------------------------ validation errors

# (fixture, key path, line, a fragment of the message)
BROKEN_CASES = [
    ("chips/typo-key.yaml", "datasheet.bf16_tflop", 8, "did you mean 'bf16_tflops'"),
    ("chips/duplicate-key.yaml", "datasheet.memory_gb", 12, "duplicate key"),
    ("chips/name-mismatch.yaml", "name", 3, "must match the file name"),
    ("links/negative-bandwidth.yaml", "bandwidth_gbit_per_s", 5, "allowed range [0.001, 1e+06]"),
    ("workloads/hit-rate-out-of-range.yaml", "anomalous.hit_rate", 18, "less than or equal to 1"),
    ("workloads/bins-not-one.yaml", "hit_rate.bins", None, "sum to 1"),
    ("models/bool-no.yaml", "architecture.tied_embeddings", 10, "bool"),
]


@pytest.mark.parametrize(
    ("rel", "key", "line", "fragment"), BROKEN_CASES, ids=[c[0] for c in BROKEN_CASES]
)
def test_broken_profile_error_names_file_key_and_line(
    broken_dir: Path, rel: str, key: str, line: int | None, fragment: str
) -> None:
    path = broken_dir / rel
    with pytest.raises(ProfileError) as ei:
        load_file(path)
    err = ei.value
    msg = str(err)
    assert str(path) in msg
    assert key in msg
    assert re.search(re.escape(str(path)) + r":\d+: ", msg), msg
    if line is not None:
        assert f"{path}:{line}: " in msg, msg
    assert fragment in msg, msg
    assert err.exit_code == 1
    assert "\n" not in msg


def test_bins_not_summing_to_one_points_at_the_bins(broken_dir: Path) -> None:
    path = broken_dir / "workloads" / "bins-not-one.yaml"
    with pytest.raises(ProfileError) as ei:
        load_file(path)
    assert ei.value.line in (10, 11, 12)  # hit_rate.bins (line 10) or its probabilities (12)
    assert "0.9" in str(ei.value)


def test_unknown_optional_key_did_you_mean(tmp_path: Path, chip_yaml) -> None:
    # `fp8_tflops` is optional, so its typo is the only error
    p = tmp_path / "typo-optional.yaml"
    p.write_text(chip_yaml("typo-optional").replace("fp8_tflops:", "fp8_tflop:"), encoding="utf-8")
    with pytest.raises(ProfileError) as ei:
        load_file(p)
    msg = str(ei.value)
    assert f"{p}:8: datasheet.fp8_tflop: unknown key 'fp8_tflop'; did you mean 'fp8_tflops'?" in msg


def test_unknown_top_level_key(tmp_path: Path, chip_yaml) -> None:
    p = tmp_path / "extra.yaml"
    p.write_text(chip_yaml("extra") + "colour: blue\n", encoding="utf-8")
    with pytest.raises(ProfileError, match=r"extra\.yaml:22: colour: unknown key 'colour'"):
        load_file(p)


def test_wrong_type_is_rejected(tmp_path: Path, chip_yaml) -> None:
    p = tmp_path / "wrong-type.yaml"
    p.write_text(
        chip_yaml("wrong-type").replace("memory_gb: 80.0", "memory_gb: lots"), encoding="utf-8"
    )
    with pytest.raises(ProfileError, match=r"wrong-type\.yaml:9: datasheet\.memory_gb: .*'lots'"):
        load_file(p)


def test_missing_key_is_rejected(tmp_path: Path, chip_yaml) -> None:
    p = tmp_path / "missing.yaml"
    p.write_text(chip_yaml("missing").replace("  memory_gb: 80.0\n", ""), encoding="utf-8")
    with pytest.raises(
        ProfileError, match=r"missing\.yaml:\d+: datasheet: required key 'memory_gb' is missing"
    ):
        load_file(p)


def test_estimated_must_name_existing_keys(tmp_path: Path, chip_yaml) -> None:
    p = tmp_path / "est.yaml"
    text = chip_yaml("est").replace(
        '  source: "unit-test price"\n', '  source: "unit-test price"\n  estimated: [rental]\n'
    )
    p.write_text(text, encoding="utf-8")
    with pytest.raises(ProfileError, match=r"est\.yaml:\d+: price: .*rental"):
        load_file(p)


def test_kind_mismatch_and_unknown_kind(tmp_path: Path, chip_yaml) -> None:
    p = tmp_path / "k.yaml"
    p.write_text(chip_yaml("k"), encoding="utf-8")
    with pytest.raises(ProfileError, match=r"k\.yaml:1: kind: expected kind 'link', found 'chip'"):
        load_file(p, "link")
    q = tmp_path / "u.yaml"
    q.write_text("kind: gizmo\nname: u\n", encoding="utf-8")
    with pytest.raises(ProfileError, match=r"u\.yaml:1: kind: unknown kind 'gizmo'"):
        load_file(q)


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    p = tmp_path / "list.yaml"
    p.write_text("- 1\n- 2\n", encoding="utf-8")
    with pytest.raises(ProfileError, match=r"list\.yaml:1: "):
        load_file(p, "chip")


def test_missing_file_is_a_profile_error(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="nope.yaml: no such file"):
        load_file(tmp_path / "nope.yaml")


def test_valid_chip_loads(tmp_path: Path, chip_yaml) -> None:
    p = tmp_path / "good.yaml"
    p.write_text(chip_yaml("good", 2.5), encoding="utf-8")
    chip = load_file(p)
    assert isinstance(chip, Chip)
    assert chip.price.rental_usd_per_hour == 2.5
    assert chip.datasheet.memory_gb == 80.0


# ------------------------------------------------------------------------------ search path


def test_user_directory_shadows_bundled(tmp_profiles, no_profiles_env, chip_yaml) -> None:
    d = tmp_profiles({"chips/h100-sxm.yaml": chip_yaml("h100-sxm", 99.0)})
    reg = Registry.default([d])
    assert reg.path("chip", "h100-sxm") == d / "chips" / "h100-sxm.yaml"
    assert reg.load("chip", "h100-sxm").price.rental_usd_per_hour == 99.0
    # the other bundled chips are still found
    assert reg.path("chip", "b200").parent.parent == bundled_profiles_dir()
    bundled = Registry(dirs=[bundled_profiles_dir()]).load("chip", "h100-sxm")
    assert bundled.price.rental_usd_per_hour != 99.0


def test_env_var_adds_a_directory(tmp_profiles, monkeypatch: pytest.MonkeyPatch, chip_yaml) -> None:
    d = tmp_profiles({"chips/env-chip.yaml": chip_yaml("env-chip", 7.0)})
    monkeypatch.setenv(ENV_VAR, str(d))
    reg = Registry.default()
    assert reg.load("chip", "env-chip").price.rental_usd_per_hour == 7.0
    assert "h100-sxm" in reg.index("chip")


def test_profiles_option_comes_before_env_var(
    tmp_profiles, monkeypatch: pytest.MonkeyPatch, chip_yaml
) -> None:
    env_dir = tmp_profiles({"chips/same.yaml": chip_yaml("same", 1.0)})
    cli_dir = tmp_profiles({"chips/same.yaml": chip_yaml("same", 2.0)})
    monkeypatch.setenv(ENV_VAR, str(env_dir))
    assert Registry.default([cli_dir]).load("chip", "same").price.rental_usd_per_hour == 2.0


def test_missing_profiles_directory_is_an_error(tmp_path: Path, no_profiles_env) -> None:
    with pytest.raises(NotFoundError, match="profiles directory not found"):
        Registry.default([tmp_path / "does-not-exist"])


def test_missing_env_directory_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "nowhere"))
    with pytest.raises(NotFoundError) as ei:
        Registry.default()
    assert ei.value.exit_code == 2


def test_unknown_name_did_you_mean(bundled_registry: Registry) -> None:
    with pytest.raises(NotFoundError, match="did you mean 'h100-sxm'"):
        bundled_registry.path("chip", "h100-sx")
    with pytest.raises(NotFoundError, match="no profile named 'zzz-nothing'"):
        bundled_registry.find_any("zzz-nothing")


def test_find_any(bundled_registry: Registry) -> None:
    kind, path = bundled_registry.find_any("llama-3.1-70b")
    assert kind == "model"
    assert path.name == "llama-3.1-70b.yaml"


def test_every_bundled_profile_loads(bundled_registry: Registry) -> None:
    for kind in ("chip", "model", "link", "workload"):
        idx = bundled_registry.index(kind)
        assert idx, kind
        for name in idx:
            obj = bundled_registry.load(kind, name)
            assert obj.name == name


# -------------------------------------------------------------------------------- scenarios

SCENARIO = """\
kind: scenario
name: t
model: qwen3-235b-a22b
workload: agent-64k
link: wan-100g-cross-city
rdma: rdma-400g
roles:
  P: {chips: [gpu-a]}
  RLD: {chips: [gpu-a]}
  MD: {chips: [gpu-b]}
sla: {ttft_p50_s: 5.0, ttft_p90_s: 10.0, ttft_p99_s: 20.0, tpot_ms: 50.0}
"""


def test_scenario_override_deep_merges(tmp_path: Path, bundled_registry: Registry) -> None:
    p = tmp_path / "scen.yaml"
    p.write_text(
        SCENARIO + "overrides:\n  chips:\n    gpu-a:\n      price: {rental_usd_per_hour: 9.75}\n",
        encoding="utf-8",
    )
    rs = load_scenario(str(p), bundled_registry)
    base = bundled_registry.load("chip", "gpu-a")
    chip = rs.chips["gpu-a"]
    assert chip.price.rental_usd_per_hour == 9.75
    # the rest of the chip (its price source, the datasheet) is kept: a deep merge
    assert chip.price.source == base.price.source
    assert chip.datasheet == base.datasheet
    # the un-overridden chip and the shared cache are untouched
    assert rs.chips["gpu-b"] == bundled_registry.load("chip", "gpu-b")
    assert (
        bundled_registry.load("chip", "gpu-a").price.rental_usd_per_hour
        == base.price.rental_usd_per_hour
    )


def test_bad_override_names_the_scenario_file(tmp_path: Path, bundled_registry: Registry) -> None:
    p = tmp_path / "bad-override.yaml"
    p.write_text(
        SCENARIO + "overrides:\n  chips:\n    gpu-a:\n      price: {rental_usd_per_hour: -1.0}\n",
        encoding="utf-8",
    )
    with pytest.raises(ProfileError) as ei:
        load_scenario(str(p), bundled_registry)
    msg = str(ei.value)
    assert str(p) in msg
    assert "rental_usd_per_hour" in msg
    assert re.search(r":\d+: ", msg)


def test_unknown_override_group(tmp_path: Path, bundled_registry: Registry) -> None:
    p = tmp_path / "bad-group.yaml"
    p.write_text(SCENARIO + "overrides:\n  chip:\n    gpu-a: {notes: x}\n", encoding="utf-8")
    with pytest.raises(
        ProfileError, match=r"bad-group\.yaml:13: overrides\.chip: .*did you mean 'chips'"
    ):
        load_scenario(str(p), bundled_registry)


def test_scenario_unknown_profile_names_the_key(tmp_path: Path, bundled_registry: Registry) -> None:
    p = tmp_path / "unknown-model.yaml"
    p.write_text(SCENARIO.replace("model: qwen3-235b-a22b", "model: qwen9"), encoding="utf-8")
    with pytest.raises(
        ProfileError, match=r"unknown-model\.yaml:3: model: no model profile named 'qwen9'"
    ):
        load_scenario(str(p), bundled_registry)


def test_scenario_link_kinds_checked(tmp_path: Path, bundled_registry: Registry) -> None:
    p = tmp_path / "swapped.yaml"
    p.write_text(SCENARIO.replace("link: wan-100g-cross-city", "link: rdma-200g"), encoding="utf-8")
    with pytest.raises(ProfileError, match=r"swapped\.yaml:5: link: must name a WAN link"):
        load_scenario(str(p), bundled_registry)


def test_scenario_patch_and_file_lookup(tmp_path: Path, bundled_registry: Registry) -> None:
    p = tmp_path / "scen.yaml"
    p.write_text(SCENARIO, encoding="utf-8")
    rs = load_scenario(str(p), bundled_registry, patch={"sla": {"tpot_ms": 30.0}})
    assert rs.scenario.sla.tpot_ms == 30.0
    assert rs.scenario.sla.ttft_p50_s == 5.0  # merged, not replaced
    assert rs.link.type == "wan" and rs.rdma.type == "rdma"
    assert set(rs.chips) == {"gpu-a", "gpu-b"}
    with pytest.raises(UnreadableFileError, match="missing.yaml: no such scenario file"):
        bundled_registry.scenario_path(str(tmp_path / "missing.yaml"))
    with pytest.raises(UnreadableFileError, match="a directory, not a scenario file"):
        bundled_registry.scenario_path(str(tmp_path))
    with pytest.raises(NotFoundError):
        bundled_registry.scenario_path("no-such-bundled-scenario")


def test_default_scenario_loads(bundled_registry: Registry) -> None:
    rs = load_scenario(None, bundled_registry)
    assert rs.scenario.name == "default"
    assert rs.model.kind == "model" and rs.workload.kind == "workload"


def test_a_merge_changes_neither_input_and_builds_the_patched_paths() -> None:
    """``_deep_merge`` leaves both inputs as they were; every container on a patched path, and
    every value the patch brings, is new; the untouched values are the base's own (a parsed
    document is never modified: ``read_yaml``'s are shared already)."""
    from pddplan.io.loader import _deep_merge

    base = {"a": {"b": [1, {"c": 2}], "d": 3}, "tiers": [{"x": 1}, {"x": 2}], "z": {"k": 1}}
    patch = {"a": {"d": 4, "e": {"f": [5]}}, "tiers": {1: {"x": 9}}}
    before_base, before_patch = repr(base), repr(patch)
    out = _deep_merge(base, patch)
    assert out == {
        "a": {"b": [1, {"c": 2}], "d": 4, "e": {"f": [5]}},
        "tiers": [{"x": 1}, {"x": 9}],
        "z": {"k": 1},
    }
    assert list(out) == ["a", "tiers", "z"] and list(out["a"]) == ["b", "d", "e"]
    assert repr(base) == before_base and repr(patch) == before_patch
    # the patched paths are new containers, the patch's values copies
    assert out is not base and out["a"] is not base["a"] and out["tiers"] is not base["tiers"]
    assert out["tiers"][1] is not base["tiers"][1]
    assert out["a"]["e"] == patch["a"]["e"] and out["a"]["e"] is not patch["a"]["e"]
    assert out["a"]["e"]["f"] is not patch["a"]["e"]["f"]
    # what the patch does not touch is shared
    assert out["z"] is base["z"] and out["a"]["b"] is base["a"]["b"]
    assert out["tiers"][0] is base["tiers"][0]
    out["a"]["d"] = 5
    out["tiers"][1]["x"] = 7
    out["a"]["e"]["f"].append(6)
    assert repr(base) == before_base and repr(patch) == before_patch


def test_a_merge_into_a_document_with_an_alias_patches_every_place_of_it() -> None:
    """A document holding one container at two places (a YAML alias) is deep-copied and
    patched in place, as before: the patch shows at both places, one container in the result,
    and the input is unchanged. The bundled profiles merge as a full copy would."""
    from pddplan.io.loader import (
        _copy_document,
        _deep_merge,
        _merge_into,
        bundled_profiles_dir,
        read_yaml,
    )

    shared = {"bw": 1.0, "lat": 2.0}
    base = {"links": {"a": shared, "b": shared}, "other": [1]}
    out = _deep_merge(base, {"links": {"a": {"bw": 5.0}}})
    assert out["links"]["a"] is out["links"]["b"] and out["links"]["b"]["bw"] == 5.0
    assert shared == {"bw": 1.0, "lat": 2.0} and out["other"] is not base["other"]

    def full_copy(doc, patch):
        out = _copy_document(doc)
        _merge_into(out, patch)
        return out

    for f in sorted(bundled_profiles_dir().glob("*/*.yaml"))[:40]:
        doc = read_yaml(f).data
        patch = {k: ({"zz": [1, {"q": 2}]} if isinstance(v, dict) else 7) for k, v in doc.items()}
        assert _deep_merge(doc, patch) == full_copy(doc, patch)
        assert list(_deep_merge(doc, patch)) == list(full_copy(doc, patch))


def test_a_document_copy_is_deepcopy_s() -> None:
    """``_copy_document`` (``_deep_merge``'s copy) gives what ``copy.deepcopy`` gives: equal
    values, no container shared with the input, an alias (``*name``) one container in the copy
    as in the input, and other types deep-copied."""
    import copy

    from pddplan.io.loader import _copy_document, bundled_profiles_dir, read_yaml

    for f in sorted(bundled_profiles_dir().glob("*/*.yaml"))[:40]:
        doc = read_yaml(f).data
        assert _copy_document(doc) == copy.deepcopy(doc)
    shared = {"x": [1, 2.5, None, True, "s"]}
    odd = {1, 2}
    doc = {"a": shared, "b": [shared, {"c": shared}], 3: odd, "t": (1, [2])}
    out = _copy_document(doc)
    assert out == copy.deepcopy(doc)
    assert out["a"] is out["b"][0] is out["b"][1]["c"] and out["a"] is not shared
    assert out[3] == odd and out[3] is not odd and out["t"][1] is not doc["t"][1]
    out["a"]["x"].append(0)
    assert shared == {"x": [1, 2.5, None, True, "s"]}


@pytest.mark.parametrize("text", ["- a\n- b\n", "hello\n"])
def test_a_profile_that_is_no_mapping_is_named_where_a_scenario_overrides_it(
    tmp_path: Path, text: str
) -> None:
    # pdd-paper overrides gpu-b's derates: a gpu-b.yaml whose top level is a list or a string
    # was merged with the overrides first and raised a ValueError with a traceback
    import pddplan

    (tmp_path / "chips").mkdir()
    (tmp_path / "chips" / "gpu-b.yaml").write_text(text, encoding="utf-8")
    example = Path(__file__).resolve().parents[3] / "examples" / "pdd-paper.yaml"
    with pytest.raises(ProfileError, match="gpu-b.yaml:1: expected a mapping"):
        pddplan.load_scenario(str(example), profiles=[tmp_path])

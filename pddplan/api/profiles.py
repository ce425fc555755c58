"""``profiles list|show|validate`` and ``schema``: the profiles on the search path.

Every function takes ``profiles``, extra profile directories searched before
``PDDPLAN_PROFILES`` and the bundled profiles, and returns a typed result
(:mod:`pddplan.results.profiles`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from pddplan.errors import OptionError

if TYPE_CHECKING:
    from pddplan.io.loader import Registry
    from pddplan.io.search_path import SearchPath
    from pddplan.results.profiles import (
        ProfileListResult,
        ProfileShowResult,
        ScenarioListResult,
        ScenarioShowResult,
        ValidateResult,
    )

Profiles = Sequence[str | os.PathLike[str]] | None

#: The kinds ``profiles list`` takes, and the kind of profile each lists.
KINDS = {
    "chips": "chip",
    "models": "model",
    "links": "link",
    "workloads": "workload",
    "caches": "cache",
}


def _registry(profiles: Profiles) -> Registry:
    from pddplan.io.loader import Registry

    return Registry.default([Path(p) for p in profiles or ()])


def _search_path(profiles: Profiles) -> SearchPath:
    """The search path alone (no schemas imported): which file each name resolves to."""
    from pddplan.io.search_path import SearchPath

    return SearchPath.default([Path(p) for p in profiles or ()])


def _summary(kind: str, obj: Any) -> dict[str, Any]:
    """The figures of one profile that ``profiles list`` shows."""
    if kind == "chip":
        ds = obj.datasheet
        return {
            "bf16_tflops": ds.bf16_tflops,
            "fp8_tflops": ds.fp8_tflops,
            "memory_gb": ds.memory_gb,
            "memory_bandwidth_tb_per_s": ds.memory_bandwidth_tb_per_s,
            "scaleup_bandwidth_gb_per_s": ds.scaleup_bandwidth_gb_per_s,
            "price_usd_per_hour": obj.price.rental_usd_per_hour,
        }
    if kind == "model":
        from pddplan.deployment import model_numbers

        m = model_numbers(obj)
        return {
            "total_params_b": m.total_params / 1e9,
            "active_params_b": m.active_params / 1e9,
            "kv_bytes_per_token": m.kv_bytes_per_token,
            "weights_dtype": obj.dtypes.weights,
            "kv_dtype": obj.dtypes.kv_cache,
        }
    if kind == "link":
        return {
            "type": obj.type,
            "bandwidth_gbit_per_s": obj.bandwidth_gbit_per_s,
            "rtt_ms": obj.rtt_ms,
            "efficiency": obj.efficiency,
            "price_usd_per_month": obj.price_usd_per_month,
        }
    if kind == "cache":
        return {
            "tier": obj.tier,
            "max_capacity_gb_per_node": obj.max_capacity_gb_per_node,
            "read_gb_per_s": obj.read_gb_per_s,
            "write_gb_per_s": obj.write_gb_per_s,
            "usd_per_gb_hour": obj.price.usd_per_gb_hour_amortized,
        }
    return {"anomalous_share": obj.anomalous.share if obj.anomalous else 0.0}


def profile_names(kind: str, *, profiles: Profiles = None) -> list[str]:
    """The names of the profiles of ``kind`` on the search path, sorted: ``chip``, ``model``,
    ``link``, ``workload`` or ``scenario`` (the bundled scenarios and those of each profile
    directory's ``scenarios/``). What shell completion offers.

    Raises
    ------
    OptionError
        For another kind.
    """
    from pddplan.io.search_path import KIND_DIRS

    reg = _search_path(profiles)
    if kind == "scenario":
        return sorted(reg.scenarios())
    if kind not in KIND_DIRS:
        raise OptionError("kind", f"must be one of {', '.join([*KIND_DIRS, 'scenario'])}")
    return sorted(reg.index(kind))


def list_profiles(
    kind: str | None = None, *, profiles: Profiles = None
) -> ProfileListResult | ScenarioListResult:
    """The profiles on the search path: of one kind (``chips``, ``models``, ``links``,
    ``workloads`` or ``scenarios``), or all but the scenarios (None).

    Each profile's figures come from its validated form (:func:`_summary`); they are kept in
    the parse cache keyed by every listed file's content and pddplan's source
    (:func:`~pddplan.io.parse_cache.derived_key`), so that a warm listing validates nothing.

    Raises
    ------
    OptionError : an unknown kind (``kind``).
    """
    from pddplan.io.bundled import bundled_profiles_dir
    from pddplan.results.profiles import ProfileListResult

    if kind == "scenarios":
        return _scenarios(_registry(profiles))
    if kind is not None and kind not in KINDS:
        raise OptionError("kind", f"must be one of {', '.join(KINDS)}, scenarios, not {kind!r}")
    sp = _search_path(profiles)
    kinds = [KINDS[kind]] if kind else list(KINDS.values())
    files = [(k, name, path) for k in kinds for name, path in sp.index(k).items()]
    figures = _listed_figures(files)
    bundled = bundled_profiles_dir().resolve()
    out: dict[str, list[dict[str, Any]]] = {f"{k}s": [] for k in kinds}
    for (k, name, path), fig in zip(files, figures, strict=True):
        origin = "bundled" if bundled in path.resolve().parents else str(path.parent.parent)
        out[f"{k}s"].append({"name": name, **fig, "origin": origin})
    return ProfileListResult(out)


def _listed_figures(files: list[tuple[str, str, Path]]) -> list[dict[str, Any]]:
    """Each listed profile's display name and :func:`_summary` figures: from the parse cache
    where it holds this exact listing, else from the profiles validated from the very bytes
    the entry is keyed on (then kept)."""
    from pddplan.io import parse_cache
    from pddplan.io.yamldoc import read_document_bytes

    raws = [read_document_bytes(path) for _k, _name, path in files]
    key = _listing_key(files, raws)
    kept = parse_cache.get(key, "listed")
    if _is_listing(kept, len(files)):
        return kept
    if kept is not None:
        parse_cache.damaged(key, "listed")
    from pddplan.io.loader import load_bytes

    figures = []
    for (k, name, path), raw in zip(files, raws, strict=True):
        obj = load_bytes(path, raw, k)
        figures.append({"display_name": getattr(obj, "display_name", name), **_summary(k, obj)})
    parse_cache.put(key, figures)
    return figures


def _listing_key(files: list[tuple[str, str, Path]], raws: list[bytes]) -> str:
    """The parse cache's name for a listing of ``files`` holding ``raws``: each file's kind,
    name and bytes (:func:`~pddplan.io.parse_cache.derived_key`)."""
    from pddplan.io import parse_cache

    parts = [
        part
        for (k, name, _path), raw in zip(files, raws, strict=True)
        for part in (k.encode(), name.encode("utf-8", "surrogatepass"), raw)
    ]
    return parse_cache.derived_key("profiles list", parts)


def _is_listing(kept: Any, n: int) -> TypeGuard[list[dict[str, Any]]]:
    """Whether a kept entry has a listing's shape: ``n`` rows of figures."""
    return (
        isinstance(kept, list)
        and len(kept) == n
        and all(isinstance(r, dict) and "display_name" in r for r in kept)
    )


def _scenarios(reg: Registry) -> ScenarioListResult:
    from pddplan.io.loader import bundled_profiles_dir, load_file
    from pddplan.results.profiles import ScenarioListResult

    bundled = bundled_profiles_dir().resolve().parent
    rows: list[dict[str, Any]] = []
    for name, path in reg.scenarios().items():
        sc = load_file(path, "scenario")
        rows.append(
            {
                "name": name,
                "model": sc.model,
                "workload": sc.workload if isinstance(sc.workload, str) else "(inline)",
                "link": sc.link,
                "rate_rps": sc.rate_rps,
                "description": sc.description,
                "origin": "bundled" if bundled in path.resolve().parents else str(path.parent),
            }
        )
    return ScenarioListResult(rows)


def show_profile(
    name: str, *, overrides: Mapping[str, Any] | None = None, profiles: Profiles = None
) -> ProfileShowResult | ScenarioShowResult:
    """One profile with the SI numbers pddplan derives from it, or a scenario (a name or a
    YAML file) resolved with ``overrides``."""
    from pddplan.errors import NotFoundError

    reg = _registry(profiles)
    if name in reg.scenarios() or name.endswith((".yaml", ".yml")):
        try:
            kind, path = reg.find_any(name)
        except NotFoundError:
            kind = "scenario"
        if kind == "scenario" or name in reg.scenarios():
            return _show_scenario(name, overrides, profiles)
    kind, path = reg.find_any(name)
    if overrides:
        from pddplan.errors import OptionError

        raise OptionError(
            "overrides",
            f"changes a scenario: {name} is a {kind} profile (show a scenario that names it, "
            f"with --set, or edit the {kind} file)",
        )
    return _show(kind, path, reg.load(kind, name))


def _show(kind: str, path: Path, obj: Any) -> ProfileShowResult:
    from pddplan.results.profiles import ProfileShowResult

    derived = None
    if kind == "model":
        from pddplan.deployment import model_numbers

        m = model_numbers(obj)
        derived = {
            "total_params": m.total_params,
            "active_params": m.active_params,
            "weight_bytes": m.total_params * m.weight_dtype_bytes,
            "kv_bytes_per_token": m.kv_bytes_per_token,
            "kv_bytes_per_sequence": m.kv_bytes_per_sequence,
            "flops_per_token_linear": 2 * m.active_params,
            "attention_flops_per_token_per_context_token": m.attention_flops_per_pair,
        }
    data = obj.model_dump(mode="json", exclude_none=True)
    return ProfileShowResult(kind, obj.name, str(path), data, derived)


def _show_scenario(
    name: str, overrides: Mapping[str, Any] | None, profiles: Profiles
) -> ScenarioShowResult:
    from pddplan.api.scenario import load_scenario
    from pddplan.results.profiles import ScenarioShowResult

    loaded = load_scenario(name, overrides=overrides, profiles=profiles)
    spec = loaded.spec
    data = spec.model_dump(mode="json", exclude_none=True, exclude={"overrides"})
    chips = [
        {
            "chip": chip,
            "rental_usd_per_hour": c.price.rental_usd_per_hour,
            "capex_usd": c.price.capex_usd,
            "memory_gb": c.datasheet.memory_gb,
            "bf16_tflops": c.datasheet.bf16_tflops,
            "price_source": c.price.source,
        }
        for chip, c in loaded.chips.items()
    ]
    link = loaded.link
    rows = [
        {"key": "model", "name": loaded.model.name, "detail": loaded.model.display_name},
        {
            "key": "link",
            "name": link.name,
            "detail": f"{link.bandwidth_gbit_per_s:g} Gbit/s, {link.rtt_ms:g} ms RTT, "
            f"{link.price_usd_per_month:g} $/month",
        },
        {
            "key": "rdma",
            "name": loaded.rdma.name,
            "detail": f"{loaded.rdma.bandwidth_gbit_per_s:g} Gbit/s",
        },
        {
            "key": "workload",
            "name": loaded.workload.name,
            "detail": loaded.workload.source.split(". ")[0][:90],
        },
    ]
    return ScenarioShowResult(spec.name, loaded.file, data, rows, chips)


def validate_profiles(
    files: Sequence[str | os.PathLike[str]] | None = None, *, profiles: Profiles = None
) -> ValidateResult:
    """Validate profile and scenario files strictly (none: every profile and scenario on the
    search path, each read as the commands read it: as the kind of its directory, so that a
    file without ``kind:`` is what its directory holds); the first error of each file is its
    row's ``error``."""
    from pddplan.errors import PddplanError
    from pddplan.io.loader import load_file, load_scenario
    from pddplan.results.profiles import ValidateResult

    reg = _registry(profiles)
    paths: list[tuple[Path, str | None]] = [(Path(f), None) for f in files or ()]
    if not paths:
        paths = [(p, k) for k in KINDS.values() for p in reg.index(k).values()]
        paths += [(p, "scenario") for p in reg.scenarios().values()]
    rows = []
    failed: list[str] = []
    for f, kind in paths:
        try:
            obj = load_file(f, kind)
            if getattr(obj, "kind", "") == "scenario":
                load_scenario(str(f), reg)
            rows.append(
                {
                    "file": str(f),
                    "kind": obj.kind,
                    "name": getattr(obj, "name", ""),
                    "status": "ok",
                    "error": "",
                }
            )
        except PddplanError as exc:
            failed.append(str(exc))
            rows.append(
                {"file": str(f), "kind": "", "name": "", "status": "error", "error": str(exc)}
            )
    return ValidateResult(rows, failed)


def profile_schema(kind: str = "scenario") -> dict[str, Any]:
    """The JSON Schema of scenario (or ``chip``, ``model``, ``link``, ``workload``) files."""
    from pddplan.spec import KINDS as SPEC_KINDS

    if kind not in SPEC_KINDS:
        raise OptionError("kind", f"must be one of {', '.join(SPEC_KINDS)}, not {kind!r}")
    doc = SPEC_KINDS[kind].model_json_schema()
    doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return doc


def data_file(path: str | os.PathLike[str]) -> Path:
    """``path``, or when no such file exists, the bundled sample of that file name (the
    measurement CSVs and the Mooncake trace excerpt ship with pddplan, so help examples run
    after a plain install)."""
    from pddplan.io.loader import bundled_profiles_dir

    path = Path(path)
    if path.exists() or path.parent != Path("."):
        return path
    root = bundled_profiles_dir()
    dirs = [root / "data"]
    if root.name == "profiles":  # a source checkout
        dirs = [root.parent / "examples" / "measurements", root.parent / "tests" / "data"]
    for d in dirs:
        if (d / path.name).is_file():
            return d / path.name
    return path


def parse_file(path: str | Path, *, scenario: bool = False) -> None:
    """Parse a scenario or profile file as YAML, strictly (:func:`pddplan.io.yamldoc.read_yaml`,
    cached): a file that is not YAML raises :class:`~pddplan.errors.ProfileError` naming the
    file and the line, without loading any schema. Loading the file later reads this parse.

    With ``scenario``, the file is a scenario's, and its first unknown top-level key raises the
    error that validating it would (:func:`pddplan.io.key_check.check`: where a validation has
    kept the schema's keys), still without loading any schema."""
    from pddplan.io.yamldoc import read_yaml

    doc = read_yaml(Path(path))
    if scenario:
        from pddplan.io import key_check

        key_check.check(doc)


def check_scenario_file(path: str | Path) -> None:
    """Validate a scenario file as loading it does (:func:`pddplan.io.loader.validated_scenario`:
    kept validated in the parse cache, so a file validated before is not validated again; the
    schema's keys, types and ranges, and its checks across keys such as the TTFT targets'
    order), without resolving the profiles it names: its first error raises the
    :class:`~pddplan.errors.ProfileError` that loading it would (file, line, key, what is
    allowed). Loading the file validates it first whatever the overrides, so a command that
    checks its file with this reports the same error, only before importing the rest of the
    API. A topology file (``sites:``) and a document that is not a mapping are left to the
    commands' own checks, which come first for them. A file that is not YAML raises as in
    :func:`parse_file`."""
    from pddplan.io.yamldoc import read_yaml

    doc = read_yaml(Path(path))
    if isinstance(doc.data, dict) and "sites" not in doc.data:
        from pddplan.io.loader import validated_scenario

        validated_scenario(doc)


def bundled_names(text: str) -> str:
    """``text`` (an error message) with each bundled file's path replaced by its name
    (``bundled scenario pdd-paper, line 39``: :func:`pddplan.io.loader.bundled_names`).
    A message that names no file under the bundled profiles' folder (nor the examples next to
    it) is returned as it is, without loading the schemas: a YAML error stays cheap."""
    from pddplan.io.bundled import bundled_profiles_dir

    if str(bundled_profiles_dir().parent) not in text:
        return text
    from pddplan.io.loader import bundled_names as names

    return names(text)

"""Reports for ``profiles list`` and ``profiles show``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pddplan.io.loader import Registry, bundled_profiles_dir
from pddplan.results import Report, Row, Section


def _summary(kind: str, obj: Any) -> Row:
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
    return {"anomalous_share": obj.anomalous.share if obj.anomalous else 0.0}


def list_report(reg: Registry, kinds: list[str]) -> Report:
    bundled = bundled_profiles_dir().resolve()
    sections = []
    payload: dict[str, list[Row]] = {}
    for kind in kinds:
        rows = []
        for name, path in reg.index(kind).items():
            obj = reg.load(kind, name)
            origin = "bundled" if bundled in path.resolve().parents else str(path.parent.parent)
            rows.append(
                {
                    "name": name,
                    "display_name": getattr(obj, "display_name", name),
                    **_summary(kind, obj),
                    "origin": origin,
                }
            )
        sections.append(Section(f"{kind}s", rows))
        payload[f"{kind}s"] = rows
    return Report("pddplan profiles", sections, {"profiles": payload})


def _flatten(prefix: str, obj: Any, out: list[Row]) -> None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            _flatten(f"{prefix}.{k}" if prefix else k, v, out)
    elif isinstance(obj, list) and obj and all(isinstance(v, dict) for v in obj):
        for i, v in enumerate(obj):
            _flatten(f"{prefix}[{i}]", v, out)
    else:
        out.append(
            {"key": prefix, "value": obj if not isinstance(obj, list) else ", ".join(map(str, obj))}
        )


def show_report(kind: str, path: Path, obj: Any) -> Report:
    data = obj.model_dump(mode="json", exclude_none=True)
    rows: list[Row] = []
    _flatten("", data, rows)
    sections = [Section(f"{kind} {obj.name} ({path})", rows, key="profile")]
    payload: dict[str, Any] = {"kind": kind, "file": str(path), "profile": data}
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
        sections.append(
            Section("derived (SI)", [{"key": k, "value": v} for k, v in derived.items()])
        )
        payload["derived"] = derived
    return Report(f"pddplan profile {obj.name}", sections, payload)


def scenario_list_report(reg: Registry) -> Report:
    """The scenarios usable by name (bundled, or in a ``--profiles`` directory)."""
    from pddplan.io.loader import load_file

    bundled = bundled_profiles_dir().resolve().parent
    rows: list[Row] = []
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
    return Report("pddplan profiles: scenarios", [Section("scenarios", rows)], {"scenarios": rows})


def scenario_show_report(loaded: Any) -> Report:
    """A scenario as resolved: its keys after overrides, and the profiles it names, with the
    numbers the plan will use (chip prices after the scenario's overrides)."""
    spec = loaded.spec
    data = spec.model_dump(mode="json", exclude_none=True, exclude={"overrides"})
    rows: list[Row] = []
    _flatten("", data, rows)
    chips = [
        {
            "chip": name,
            "rental_usd_per_hour": c.price.rental_usd_per_hour,
            "capex_usd": c.price.capex_usd,
            "memory_gb": c.datasheet.memory_gb,
            "bf16_tflops": c.datasheet.bf16_tflops,
            "price_source": c.price.source,
        }
        for name, c in loaded.chips.items()
    ]
    link = loaded.link
    profiles = [
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
    sections = [
        Section(f"scenario {spec.name} ({loaded.file})", rows, key="scenario"),
        Section("profiles", profiles, key="profiles"),
        Section("chips", chips, key="chips"),
    ]
    payload = {
        "kind": "scenario",
        "file": loaded.file,
        "scenario": data,
        "profiles": profiles,
        "chips": chips,
    }
    return Report(f"pddplan scenario {spec.name}", sections, payload)

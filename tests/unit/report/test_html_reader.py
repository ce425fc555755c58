"""The procurement page speaks to a reader without the repository: no file names, issue
numbers, commands or flags on it (for every bundled scenario), its sources cited by title and
publisher, and its headline says how much of the cost rests on estimated prices (computed from
the plan's cost split)."""

from __future__ import annotations

import re
from functools import cache
from html.parser import HTMLParser
from pathlib import Path

import pytest

import pddplan
from pddplan.report.html import render_html, render_markdown
from pddplan.report.reader import ADVICE, FORBIDDEN, REFERENCES, for_reader, forbidden_in
from pddplan.solver.plan import cost_split, estimated_cost

REPO = Path(__file__).resolve().parents[3]
SCENARIOS = sorted(
    str(p.relative_to(REPO))
    for p in [
        *(REPO / "profiles" / "scenarios").glob("*.yaml"),
        *(REPO / "examples").glob("*.yaml"),
    ]
)


class _Visible(HTMLParser):
    """The text a browser shows (not the style sheet, not attributes)."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._hidden += tag in ("style", "script", "title")

    def handle_endtag(self, tag: str) -> None:
        self._hidden -= tag in ("style", "script", "title")

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def visible(page: str) -> str:
    p = _Visible()
    p.feed(page)
    return " ".join(p.parts)


@cache
def report(scenario: str) -> pddplan.results.PlanReportResult:
    return pddplan.plan_report(str(REPO / scenario))


def test_the_default_and_the_paper_scenario_are_among_those_checked() -> None:
    assert "profiles/scenarios/default.yaml" in SCENARIOS
    assert "examples/pdd-paper.yaml" in SCENARIOS


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_no_pointer_the_reader_lacks_reaches_the_page(scenario: str, tmp_path: Path) -> None:
    res = report(scenario)
    text = visible(render_html(res, {}))
    assert forbidden_in(text) == []
    md = render_markdown(res, {}, tmp_path / "plan.md")
    assert forbidden_in(md) == []


def test_the_unrewritten_report_has_such_pointers() -> None:
    # what the page is protected from: without the rewrite these reach the reader
    rep = report("profiles/scenarios/default.yaml").report()
    raw = " ".join(
        [
            *rep.answer,
            *rep.warnings,
            *(str(v) for s in rep.sections for r in s.rows for v in r.values()),
        ]
    )
    for pattern in (r"\.md\b", r"\bissue \d+", r"`pddplan ", r"\.ya?ml\b"):
        assert re.search(pattern, raw), pattern
    assert all(isinstance(re.compile(p), re.Pattern) for p in FORBIDDEN)


def test_sources_are_cited_inline_by_title_and_publisher() -> None:
    text = visible(render_html(report("profiles/scenarios/default.yaml"), {}))
    for name in ("accelerators.md", "pdd-brief.md"):
        ref = REFERENCES[name]
        assert ref.title in text and ref.publisher in text, name


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("derates (issue 12): eff 0.65", "derates: eff 0.65"),
        ("see issue 3, then x", "then x"),
        ("off by 14%; check with `pddplan simulate`", f"off by 14%; {ADVICE}"),
        (
            "more slots; write the plan with `pddplan solve -f json -o plan.json` (the same "
            "options) and check it with `pddplan simulate --plan plan.json`",
            f"more slots; {ADVICE}",
        ),
        (
            "and pddplan calibrate --link identifies that product",
            "and a calibration against measured transfers identifies that product",
        ),
        ("which pddplan models separately", "which pddplan models separately"),
        ("copied from profiles/chips/h800-sxm.yaml.", "copied from the h800-sxm chip profile."),
        ("no valley: not computed (--no-reprovision)", "no valley: not computed"),
        (
            "modelled (docs/links.md). TCP",
            "modelled (pddplan's documentation of the line model). TCP",
        ),
        (
            "the H800 row of accelerators.md (vendor spec)",
            f"the H800 row of '{REFERENCES['accelerators.md'].title}' "
            f"({REFERENCES['accelerators.md'].publisher}) (vendor spec)",
        ),
        (
            "an assumption (accelerators.md)",
            f"an assumption ('{REFERENCES['accelerators.md'].title}', "
            f"{REFERENCES['accelerators.md'].publisher})",
        ),
        (
            "PDD brief (pdd-brief.md sections 5-6): x",
            f"PDD brief ('{REFERENCES['pdd-brief.md'].title}', "
            f"{REFERENCES['pdd-brief.md'].publisher}; sections 5-6): x",
        ),
    ],
)
def test_for_reader_rewrites_each_kind_of_pointer(text: str, expected: str) -> None:
    assert for_reader(text) == expected
    assert forbidden_in(for_reader(text)) == []


def _headline_of(res: pddplan.results.PlanReportResult) -> str:
    return " ".join(res.report().answer)


def test_estimated_cost_of_the_default_is_its_line() -> None:
    # gpu-a and gpu-b prices are not marked estimates; the line's price is
    res = report("profiles/scenarios/default.yaml")
    plan = res.solve.plan
    split = cost_split(plan)
    total = sum(c.cost_usd_per_hour for c in split) + plan.link_cost_usd_per_hour
    ec = estimated_cost(plan)
    assert ec.total_usd_per_hour == pytest.approx(total)
    assert ec.estimated_usd_per_hour == pytest.approx(plan.link_cost_usd_per_hour)
    assert [w for w, _ in ec.items] == ["line price"]
    said = (
        f"{plan.link_cost_usd_per_hour:,.1f} of {total:,.1f} $/h "
        f"({plan.link_cost_usd_per_hour / total:.0%}) rests on estimated prices: line price."
    )
    assert said in _headline_of(res)
    assert said in visible(render_html(res, {}))


def test_estimated_cost_counts_estimated_rentals() -> None:
    # long-context rents h100-sxm and h200-sxm, whose rental prices are estimates
    res = report("examples/long-context.yaml")
    plan = res.solve.plan
    split = cost_split(plan)
    rented = sum(c.rented_usd_per_hour for c in split)
    assert rented > 0
    ec = estimated_cost(plan)
    assert ec.estimated_usd_per_hour == pytest.approx(rented + plan.link_cost_usd_per_hour)
    assert {w for w, _ in ec.items} == {f"{c.chip} rental price" for c in split} | {"line price"}
    assert f"({ec.share:.0%}) rests on estimated prices" in _headline_of(res)


def test_owned_chips_count_only_at_an_estimated_capex() -> None:
    base = dict(own={"h100-sxm": 8}, rate_rps=0.1)
    sunk = pddplan.solve(
        str(REPO / "examples/long-context.yaml"),
        overrides={"inventory.owned_cost": "sunk"},
        **base,  # type: ignore[arg-type]
    ).plan
    amortized = pddplan.solve(
        str(REPO / "examples/long-context.yaml"),
        overrides={"inventory.owned_cost": "amortized"},
        **base,  # type: ignore[arg-type]
    ).plan
    for plan, counts_owned in ((sunk, False), (amortized, True)):
        split = {c.chip: c for c in cost_split(plan)}
        assert split["h100-sxm"].owned > 0
        h100 = split["h100-sxm"]
        expected = h100.rented_usd_per_hour + (h100.owned_usd_per_hour if counts_owned else 0.0)
        got = dict(estimated_cost(plan).items)
        assert got.get("h100-sxm rental price", 0.0) + got.get(
            "h100-sxm purchase price", 0.0
        ) == pytest.approx(expected)

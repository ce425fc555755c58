"""The table format's text without rich (:mod:`pddplan.report.plain`) is rich's, byte for byte:
for the commands' reports at many widths and ``--wide``, and for random text and tables; where
it does not answer (text rich would not lay out one character a cell, an emoji code, a file
that does not take UTF-8) rich prints."""

from __future__ import annotations

import io
import random

import pytest

from pddplan import api
from pddplan.report import _print_rich, _table_blocks, render_table
from pddplan.report.plain import Block, Column, Line, Table, render, writes_plain
from pddplan.results import Report, Section

WIDTHS = [21, 26, 33, 40, 47, 60, 72, 80, 99, 100, 101, 137, 200]


def _rich(blocks: list[Block], width: int, wide: bool, buf: io.StringIO | None = None) -> str:
    buf = io.StringIO() if buf is None else buf
    _print_rich(blocks, buf, width, wide)
    return buf.getvalue()


@pytest.fixture(scope="module")
def reports() -> list[Report]:
    return [
        api.solve(explain=True).report(),
        api.sweep(axes={"rate_rps": [1, 2.5]}).report(),
        api.rank_chips().report(),
        api.bathtub(step=0.05).report(),  # a chart drawn in block characters
    ]


@pytest.mark.parametrize("wide", [False, True])
def test_reports_as_rich_lays_them_out(reports: list[Report], wide: bool) -> None:
    for rep in reports:
        for table in [None, rep.sections[0].slug]:
            for width in [100_000] if wide else WIDTHS:
                blocks = list(_table_blocks(rep, table, wide, width))
                text = render(blocks, width, soft_wrap=wide)
                assert text is not None, (rep.title, width)
                assert text == _rich(blocks, width, wide), (rep.title, table, width)


def _word(rng: random.Random) -> str:
    n = rng.choice([1, 2, 3, 5, 8, 13, 30])
    return "".join(rng.choice("abcdefghij0123456789-.,/()\u2588") for _ in range(n))


def _text(rng: random.Random, most: int) -> str:
    parts = []
    for _ in range(rng.randint(0, most)):
        parts += [_word(rng), rng.choice([" ", " ", " ", "  ", "   ", "\n"])]
    text = "".join(parts)
    if rng.random() < 0.2:
        text = " " + text
    return text.rstrip() if rng.random() < 0.2 else text


def _blocks(rng: random.Random) -> list[Block]:
    blocks: list[Block] = []
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.4:
            text = rng.choice([None, _text(rng, 12)])
            blocks.append(Line(text, bold=rng.random() < 0.5, literal=rng.random() < 0.3))
            continue
        n = rng.randint(0, 7)
        columns = [
            Column(
                _text(rng, 3),
                width=rng.choice([None, None, rng.randint(1, 30)]),
                min_width=rng.choice([None, rng.randint(1, 15)]),
                max_width=rng.choice([None, None, rng.randint(1, 20)]),
                no_wrap=rng.random() < 0.4,
                justify=rng.choice(["left", "right"]),
            )
            for _ in range(n)
        ]
        rows = [
            [_text(rng, rng.choice([0, 1, 2, 6])) for _ in range(n)]
            for _ in range(rng.randint(0, 4))
        ]
        blocks.append(Table(columns, rows))
    return blocks


@pytest.mark.parametrize("seed", range(4))
def test_random_text_and_tables_as_rich_lays_them_out(seed: int) -> None:
    rng = random.Random(seed)
    answered = 0
    for _ in range(300):
        blocks = _blocks(rng)
        wide = rng.random() < 0.15
        width = rng.choice([100_000, 50, 30] if wide else [1, 5, 10, 21, 30, 40, 60, 80, 150])
        text = render(blocks, width, soft_wrap=wide)
        if text is not None:  # None: a cell with no room, which rich draws as nothing
            answered += 1
            assert text == _rich(blocks, width, wide), (blocks, width, wide)
    assert answered > 100


def _report(title: str, note: str) -> Report:
    rows: list[dict[str, object]] = [
        {"name": "caf\u00e9 \u00e0 la carte", "cost_usd_per_hour": 12.5},
        {"name": "b"},
    ]
    return Report(title, [Section("things", rows)], notes=[note])


@pytest.mark.parametrize(
    ("title", "note"),
    [
        ("plain title", "a :warning: sign"),  # an emoji code: rich replaces it
        ("t\u00eftle", "plain note"),  # not ASCII
        ("tab\there", "plain note"),  # a tab: rich expands it
    ],
)
def test_text_it_does_not_lay_out_is_rich_s(
    title: str, note: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)  # not a terminal: 100 columns
    rep = _report(title, note)
    blocks = list(_table_blocks(rep, None, False, 100))
    assert render(blocks, 100, soft_wrap=False) is None
    buf = io.StringIO()
    render_table(rep, buf, False)
    assert buf.getvalue() == _rich(blocks, 100, False)


class _Ascii(io.StringIO):
    encoding = "ascii"


def test_only_a_utf8_file_is_written_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    assert writes_plain(io.StringIO())
    assert not writes_plain(_Ascii())
    rep = Report("plain", [Section("s", [{"a": 1}])])
    buf = _Ascii()
    render_table(rep, buf, False)
    blocks = list(_table_blocks(rep, None, False, 100))
    assert render(blocks, 100, soft_wrap=False) is not None  # the text alone would do
    assert buf.getvalue() == _rich(blocks, 100, False, _Ascii())  # rich draws the box in ASCII
    assert buf.getvalue() != _rich(blocks, 100, False)

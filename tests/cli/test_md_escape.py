"""The markdown renderers escape the user's text (scenario names, sources), as the HTML report
does; plain text is printed as it is."""

from __future__ import annotations

from pddplan.report import md_escape, render_md
from pddplan.results import Report, Section

EVIL = "x<script>alert(1)</script> [click](javascript:alert(1)) ![i](http://e/x.png)\n# h"


def test_no_html_link_image_or_line_break_survives() -> None:
    out = md_escape(EVIL)
    assert "<script" not in out and "</script" not in out
    assert "](" not in out.replace("\\](", "")
    assert "\n" not in out


def test_plain_text_is_unchanged() -> None:
    for text in ("hit rate < 0.99: P-RLD-MD; else P-MD", "[0.9, 0.93)", "> 10% (noise)", "a_b*c"):
        assert md_escape(text) == text


def test_a_backslash_cannot_undo_an_escape() -> None:
    assert md_escape("a\\](b)") == "a\\\\\\](b)"


def test_render_md_escapes_title_cells_and_notes() -> None:
    rep = Report(EVIL, [Section("s", [{"name": EVIL, "source": "ok | fine"}])], notes=[EVIL])
    out = render_md(rep)
    assert "<script" not in out and "\n# h" not in out
    assert "ok \\| fine" in out

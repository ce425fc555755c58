"""The result of ``transfer``: one payload's (or a table of payloads') time on a link."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pddplan.results.base import Report, Result, Row, Section

if TYPE_CHECKING:
    from pddplan.transfer import TransferResult as TransferTimes


@dataclass(frozen=True)
class TransferResult(Result):
    """Transfer times on a link (:class:`pddplan.transfer.TransferResult`), arranged for the
    renderers.

    Attributes
    ----------
    times : the link, the concurrent transfers and one point per payload.
    """

    times: TransferTimes

    def rows(self, section: str | None = None) -> list[Row]:
        return self.times.rows()

    def report(self) -> Report:
        t = self.times
        title = f"transfer times on {t.link} ({t.concurrent_transfers} concurrent)"
        return Report(title, [Section("transfers", t.rows())], t.to_json(), t.notes)

"""``transfer``: the time of payloads on a link shared by concurrent transfers."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from numbers import Real
from typing import TYPE_CHECKING, Any

from pddplan.api.command_options import TransferOptions
from pddplan.api.options import validate
from pddplan.api.scenario import Profiles, registry

if TYPE_CHECKING:
    from pddplan.transfer import TransferResult

_D = TransferOptions()


def transfer(
    link: str,
    *,
    payload_bytes: float | Sequence[float] | None = _D.payload_bytes,
    concurrent: int = _D.concurrent,
    profiles: Profiles = None,
) -> TransferResult:
    """Mean, p50, p90 and p99 time of payloads on a link with ``concurrent`` transfers sharing it.

    Parameters
    ----------
    link : a link profile name.
    payload_bytes : [bytes] one payload or several (default: 1 MB to 10 GB).
    concurrent : transfers on the line at once, this one included.
    """
    from pddplan.deployment import LinkNumbers
    from pddplan.transfer import DEFAULT_SIZES_BYTES, transfer_times

    def number(x: Any) -> Any:  # a number as a float; anything else as given, for the check
        return float(x) if isinstance(x, Real) and not isinstance(x, bool) else x

    if payload_bytes is None:
        sizes: list[Any] = list(DEFAULT_SIZES_BYTES)
    elif isinstance(payload_bytes, str | bytes) or not isinstance(payload_bytes, Iterable):
        sizes = [number(payload_bytes)]
    else:
        sizes = [number(x) for x in payload_bytes]
    o = validate(TransferOptions, payload_bytes=sizes, concurrent=concurrent)
    spec = registry(profiles).load("link", link)
    return transfer_times(LinkNumbers.of(spec), list(o.payload_bytes or ()), o.concurrent)

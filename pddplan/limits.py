"""Work caps: the most work one call may ask for, so that no input can run for hours.

Each cap has a default and an environment variable that raises (or lowers) it; the error names
both. docs/limits.md lists them with the schema's value ranges.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from pddplan.errors import OptionError, UsageError
from pddplan.units import MAX_NUMBER_CHARS, parse_whole_number

_FLOAT = re.compile(r"[0-9]+(\.[0-9]*)?[eE]\+?[0-9]{1,2}")


@dataclass(frozen=True)
class Cap:
    env: str
    default: int
    what: str

    def value(self) -> int:
        text = os.environ.get(self.env, "").strip()
        if not text:
            return self.default
        try:
            if _FLOAT.fullmatch(text):  # 1e6, 2.5e9: a whole number written with an exponent
                value = float(text)
                if not value.is_integer() or value > 10**MAX_NUMBER_CHARS:
                    raise ValueError(
                        f"{text!r} is not a whole number of at most {MAX_NUMBER_CHARS} digits"
                    )
                text = str(int(value))
            return parse_whole_number(text, least=1, most=10 ** (MAX_NUMBER_CHARS - 1))
        except ValueError as exc:
            raise UsageError(f"environment variable {self.env}: {exc}") from None

    def check(self, n: int | float, what: str | None = None, option: str | None = None) -> None:
        """Raise :class:`CapError` when ``n`` is above the cap.

        ``option``: the library's name of the option that asked for ``n`` (``requests``); the
        error is then an :class:`OptionCapError`, which the command line words with its flag.
        """
        cap = self.value()
        if n > cap:
            how = f"(set the environment variable {self.env} to raise it)"
            if option is not None:
                raise OptionCapError(
                    option, f": {n:,.0f} is above the cap of {cap:,} {what or self.what} {how}"
                )
            raise CapError(f"{what or self.what}: {n:,.0f} is above the cap of {cap:,} {how}")


class CapError(UsageError):
    """A call asks for more work than a cap allows (exit 2)."""


class OptionCapError(OptionError, CapError):
    """A cap passed by the value of a named option (exit 2)."""


#: The most chips of one kind a limit names (a scenario's ``limits.max_chips`` and a command's
#: ``CHIP=N`` settings: the schema and the command line take the same range).
MAX_CHIPS_PER_KIND = 10**7
#: Most chips one layout's width, expert ranks or data-parallel groups may count (``step``).
MAX_LAYOUT_CHIPS = 65_536

#: Points of a sweep grid (the product of the axes' value counts): each is a solve, and with
#: baselines three, so the cap bounds the work (10,000 points: about a minute on one core at the
#: 200 points/s of benchmarks/bench_sweep.py; 100,000 took hours).
GRID_POINTS = Cap("PDDPLAN_MAX_GRID_POINTS", 10_000, "sweep grid points")
#: Requests one simulation runs.
SIM_REQUESTS = Cap("PDDPLAN_MAX_SIM_REQUESTS", 10_000_000, "simulated requests")
#: Requests one trace may hold (hitrate, simulate --trace).
TRACE_REQUESTS = Cap("PDDPLAN_MAX_TRACE_REQUESTS", 100_000_000, "trace requests")
#: Scenarios one robust study draws.
ROBUST_SAMPLES = Cap("PDDPLAN_MAX_ROBUST_SAMPLES", 1_000_000, "robust samples")
#: Bytes of one data file read whole (a plan JSON, a calibration CSV, a capacity curve).
INPUT_BYTES = Cap("PDDPLAN_MAX_INPUT_BYTES", 64 * 1024 * 1024, "bytes of an input file")
#: Bytes of one trace after decompression (a small gzip file can inflate to terabytes).
TRACE_BYTES = Cap("PDDPLAN_MAX_TRACE_BYTES", 64 * 1024**3, "bytes of a trace")
#: Bytes of one trace line (a file without newlines, such as /dev/zero, is one endless line).
TRACE_LINE_BYTES = Cap("PDDPLAN_MAX_TRACE_LINE_BYTES", 16 * 1024 * 1024, "bytes of a trace line")
#: Target rates of one pareto grid (each is a full solve with its baselines).
PARETO_POINTS = Cap("PDDPLAN_MAX_PARETO_POINTS", 200, "pareto target rates")

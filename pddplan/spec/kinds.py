"""The profile kinds: the spec class of each and the profiles folder it lives in."""

from __future__ import annotations

from pddplan.defaults import KIND_DIRS as KIND_DIRS  # re-exported: the folders
from pddplan.spec.base import Strict
from pddplan.spec.caches import Cache
from pddplan.spec.chips import Chip
from pddplan.spec.links import Link
from pddplan.spec.models import Model
from pddplan.spec.scenario_spec import Scenario
from pddplan.spec.workloads import Workload

KINDS: dict[str, type[Strict]] = {
    "chip": Chip,
    "model": Model,
    "link": Link,
    "workload": Workload,
    "scenario": Scenario,
    "cache": Cache,
}

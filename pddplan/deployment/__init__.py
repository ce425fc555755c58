"""Binds specs to model calls: the only package that knows both the specs and the models.

It turns a chip + model + instance size into the numbers the models take (SI units), and a
workload into request classes (hit rate x input length x output length, with weights). One
module per thing bound: :mod:`~pddplan.deployment.links`, :mod:`~pddplan.deployment.models`,
:mod:`~pddplan.deployment.layouts`, :mod:`~pddplan.deployment.chips` (instances) and
:mod:`~pddplan.deployment.workloads`; their public names are re-exported here.
"""

from __future__ import annotations

from pddplan.deployment.chips import EXTEND_CHUNK_TOKENS, Instance
from pddplan.deployment.layouts import COMBINE_BYTES, FP8_BLOCK_SCALED_BYTES, Layout, layouts_for
from pddplan.deployment.links import TOKEN_ID_BYTES_PER_TOKEN, LinkNumbers
from pddplan.deployment.models import ModelNumbers, model_numbers
from pddplan.deployment.workloads import (
    RequestClasses,
    cached_prefix_tokens,
    hit_rate_points,
    length_points,
    request_classes,
)

__all__ = [
    "COMBINE_BYTES",
    "EXTEND_CHUNK_TOKENS",
    "FP8_BLOCK_SCALED_BYTES",
    "TOKEN_ID_BYTES_PER_TOKEN",
    "Instance",
    "Layout",
    "LinkNumbers",
    "ModelNumbers",
    "RequestClasses",
    "cached_prefix_tokens",
    "hit_rate_points",
    "layouts_for",
    "length_points",
    "model_numbers",
    "request_classes",
]

"""pddplan: analytical capacity planning for cross-datacenter PDD LLM inference.

PDD = Prefill (datacenter A) + Relay-Decode (datacenter A, RDMA to prefill) + Main-Decode
(datacenter B, reached over a WAN line).
"""

__version__ = "0.1.0"

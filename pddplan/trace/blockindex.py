"""Dense numbering of block hash ids, so that per-block state lives in flat numpy arrays.

Mooncake-style traces number their blocks 0, 1, 2, ...: those ids are used as they are
(*direct* mode). Ids that are negative, or much larger than the number of distinct blocks seen
(64-bit content hashes, say), switch the index to a vectorized open-addressing hash table
(*hash* mode) whose dense ids are 0 .. distinct - 1. Either way memory is proportional to the
distinct blocks, not to the trace.
"""

from __future__ import annotations

import numpy as np

_U64 = np.uint64


def _mix(keys: np.ndarray, bits: int) -> np.ndarray:
    """splitmix64 finaliser of int64 keys, top ``bits`` bits, as int64 slots."""
    with np.errstate(over="ignore"):
        z = keys.view(np.uint64) + _U64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> _U64(27))) * _U64(0x94D049BB133111EB)
        z = z ^ (z >> _U64(31))
    return (z >> _U64(64 - bits)).astype(np.int64)


class IdHashMap:
    """int64 key -> dense int64 value, assigned in order of first insertion; vectorized.

    Linear probing at load factor at most 1/2. Inserting a batch scatters the pending keys to
    their empty slots and reads back which write won, so duplicate keys in one batch end up
    with one slot and one value.
    """

    def __init__(self, bits: int = 16) -> None:
        self.n = 0
        self._alloc(bits)

    def _alloc(self, bits: int) -> None:
        self.bits = bits
        self.mask = (1 << bits) - 1
        self.keys = np.zeros(1 << bits, dtype=np.int64)
        self.vals = np.full(1 << bits, -1, dtype=np.int64)

    def _grow(self, extra: int) -> None:
        need = 2 * (self.n + extra)
        if need <= (1 << self.bits):
            return
        bits = self.bits
        while (1 << bits) < need:
            bits += 1
        used = self.vals >= 0
        keys, vals = self.keys[used], self.vals[used]
        self._alloc(bits)
        self._place(keys, vals)

    def _place(self, keys: np.ndarray, vals: np.ndarray) -> None:
        """Insert keys known to be absent and distinct."""
        pend = np.arange(len(keys))
        slot = _mix(keys, self.bits)
        while pend.size:
            s = slot[pend]
            empty = self.vals[s] < 0
            es, ep = s[empty], pend[empty]
            self.vals[es] = ep  # one writer per slot wins
            won = self.vals[es] == ep
            self.keys[es[won]] = keys[ep[won]]
            self.vals[es[won]] = vals[ep[won]]
            placed = np.zeros(len(pend), dtype=bool)
            placed[np.flatnonzero(empty)[won]] = True
            pend = pend[~placed]
            slot[pend] = (slot[pend] + 1) & self.mask

    def get_or_add(self, keys: np.ndarray) -> np.ndarray:
        """Dense ids of ``keys``; unseen keys get the next ids."""
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        self._grow(len(keys))
        out = np.empty(len(keys), dtype=np.int64)
        pend = np.arange(len(keys))
        slot = _mix(keys, self.bits)
        while pend.size:
            s = slot[pend]
            v = self.vals[s]
            k = self.keys[s]
            want = keys[pend]
            found = (v >= 0) & (k == want)
            out[pend[found]] = v[found]
            done = found
            empty = v < 0
            if empty.any():
                es, ep = s[empty], pend[empty]
                self.vals[es] = -2 - ep  # claim: one writer per slot wins
                won = self.vals[es] == -2 - ep
                ws, wp = es[won], ep[won]
                ids = np.arange(self.n, self.n + len(wp), dtype=np.int64)
                self.n += len(wp)
                self.keys[ws] = keys[wp]
                self.vals[ws] = ids
                out[wp] = ids
                done = done.copy()
                done[np.flatnonzero(empty)[won]] = True
            pend = pend[~done]
            # losers of a claimed slot look at it again: it may now hold their own key
            adv = self.keys[slot[pend]] != keys[pend]
            adv |= self.vals[slot[pend]] < 0
            slot[pend[adv]] = (slot[pend[adv]] + 1) & self.mask
        return out


class BlockIndex:
    """Raw block ids -> dense ids 0 .. ``size`` - 1 (direct or hash mode, see module doc).

    Parameters
    ----------
    direct_slack : int
        Direct mode holds while the largest id is below ``direct_slack`` times the number of
        distinct ids seen (or below ``direct_floor``).
    direct_floor : int
        Ids below this never leave direct mode.
    """

    def __init__(self, direct_slack: int = 8, direct_floor: int = 1 << 22) -> None:
        self.direct_slack = direct_slack
        self.direct_floor = direct_floor
        self.mode = "direct"
        self.size = 0
        self._present = np.zeros(0, dtype=bool)
        self._distinct = 0
        self._map: IdHashMap | None = None

    def _direct_ok(self, lo: int, hi: int) -> bool:
        if lo < 0:
            return False
        if hi < max(self.direct_floor, self.direct_slack * self._distinct):
            return True
        # recount (rarely needed: only when the ids outgrow the last count)
        if hi < len(self._present):
            return True
        self._distinct = int(np.count_nonzero(self._present))
        return hi < max(self.direct_floor, self.direct_slack * (self._distinct + 1))

    def distinct(self) -> int:
        """Distinct raw ids seen so far."""
        if self.mode == "hash":
            assert self._map is not None
            return self._map.n
        self._distinct = int(np.count_nonzero(self._present))
        return self._distinct

    def map(self, raw: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Dense ids of ``raw``.

        Returns
        -------
        dense : numpy.ndarray
            Dense id of each raw id.
        relayout : numpy.ndarray or None
            When this call switched the index from direct to hash mode: for each new dense id,
            its old dense id, so that per-block arrays are re-laid out as ``arr[relayout]``.
        """
        raw = np.asarray(raw, dtype=np.int64)
        if raw.size == 0:
            return raw.copy(), None
        if self.mode == "direct":
            lo, hi = int(raw.min()), int(raw.max())
            if self._direct_ok(lo, hi):
                if hi >= len(self._present):
                    n = len(self._present)
                    grown = np.zeros(max(hi + 1, n + n // 4, 1024), dtype=bool)
                    grown[: len(self._present)] = self._present
                    self._present = grown
                self._present[raw] = True
                self.size = max(self.size, hi + 1)
                return raw, None
            old = np.flatnonzero(self._present[: self.size])
            self._map = IdHashMap()
            self._map.get_or_add(old)  # dense id i <- raw id old[i]
            self.mode = "hash"
            self._present = np.zeros(0, dtype=bool)
            dense = self._map.get_or_add(raw)
            self.size = self._map.n
            return dense, old
        assert self._map is not None
        dense = self._map.get_or_add(raw)
        self.size = self._map.n
        return dense, None

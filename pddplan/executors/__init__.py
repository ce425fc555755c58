"""Where independent tasks run: in this process, on local processes, or on a Dask cluster.

An executor maps a module-level function over items, passing the same keyword arguments to
every call, and returns the results in the items' order. The tasks are pure functions of their
arguments, so every executor returns the same results for the same inputs: ``robust`` draws its
samples before any task runs, and ``sweep`` lists its grid before.

- ``local`` (jobs 1): a plain loop in this process;
- ``local`` (jobs > 1): a :class:`concurrent.futures.ProcessPoolExecutor` with ``jobs`` workers;
- ``dask``: :mod:`dask.distributed`; a :class:`~distributed.LocalCluster` of ``jobs`` worker
  processes when no scheduler address is given, the cluster at ``scheduler`` (``tcp://host:8786``)
  when one is. Dask is an optional extra: ``pip install 'pddplan[dask]'``.

Use an executor as a context manager: its pool or cluster lives until the block ends, so the
workers keep what they cached between two maps of one run.

``map(..., progress=tick)`` calls ``tick(done)`` with the count of items finished so far, in the
caller's process, as each item finishes (in any order); the results keep the items' order.

``map(..., affinity=True)`` sends item ``i`` to worker ``i % workers``, the same one at every
map of one block: a run whose second map goes over the same items (``robust``'s two passes over
its sample chunks) finds what the first cached on that worker (each sample's solver), where a
shared queue would hand about half the chunks to the other worker, which rebuilds them. The
items should then be of about equal cost: nothing balances them. The results are the same
either way. Locally each worker is a pool of its own, started by a fork server where the
platform has one (:func:`_lane_context`).

``start(*modules, affinity=...)`` starts the workers of a block at once, each importing
``modules``, so that their start overlaps the caller's own preparation (``robust`` solves its
point plan meanwhile); the maps then run on them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from pddplan.errors import OptionError

T = TypeVar("T")
R = TypeVar("R")

#: Told the count of items finished so far.
Tick = Callable[[int], None]
#: Told how much of a long call's work is done and how much there is (``(200, 1000)``); long API
#: calls (robust, sweep, pareto, simulate) take one as ``progress=``. The one definition.
Progress = Callable[[int, int], None]

EXECUTORS = ("local", "dask")
DASK_HINT = "pip install 'pddplan[dask]'"


class Executor(Protocol):
    """Maps a function over items; results in the items' order."""

    name: str
    workers: int

    def map(
        self,
        fn: Callable[..., R],
        items: Sequence[Any],
        /,
        *,
        progress: Tick | None = None,
        affinity: bool = False,
        **shared: Any,
    ) -> list[R]: ...

    def start(self, *modules: str, affinity: bool = False) -> None: ...

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None: ...


class LocalExecutor:
    """In this process (``jobs`` 1) or on ``jobs`` local processes."""

    name = "local"

    def __init__(self, jobs: int = 1) -> None:
        self.workers = max(1, int(jobs))
        self._pool: Any = None
        self._lanes: list[Any] = []  # one single-process pool per worker, for ``affinity``
        self._entered = False

    def __enter__(self) -> LocalExecutor:
        self._entered = True
        return self

    def __exit__(self, *exc: object) -> None:
        # a block left by an error or an interrupt (Ctrl-C) stops its processes rather than
        # waiting for every chunk queued to them (a robust study went on for 16-30 s): the
        # pool then fails the futures left, which nothing reads (none is cancelled: Python
        # 3.11's pool raises in its own thread when it fails a cancelled future)
        failed = bool(exc) and exc[0] is not None
        for pool in [self._pool, *self._lanes]:
            if pool is None:
                continue
            if failed:  # the pool's own processes (ProcessPoolExecutor.terminate_workers: 3.14)
                for proc in list((getattr(pool, "_processes", None) or {}).values()):
                    proc.terminate()
            pool.shutdown(wait=not failed)
        self._pool, self._lanes, self._entered = None, [], False

    def start(self, *modules: str, affinity: bool = False) -> None:
        """Start the worker processes now, each importing ``modules``, so that their start
        runs while this process prepares the work (in a ``with`` block; the maps of the same
        ``affinity`` then find them started). Nothing to start with one worker."""
        for pool in self._pools(affinity):
            for _ in range(1 if affinity else self.workers):
                pool.submit(_import_modules, modules)

    def _pools(self, affinity: bool) -> list[Any]:
        """The process pools a map submits to (none: this process): the shared pool of
        ``workers`` processes, or, with ``affinity``, one single-process pool per worker
        (each started at its first use, kept until the block ends)."""
        if self.workers <= 1 or not self._entered:
            return []
        from concurrent.futures import ProcessPoolExecutor

        if affinity:
            if not self._lanes:
                ctx = _lane_context()
                self._lanes = [
                    ProcessPoolExecutor(max_workers=1, mp_context=ctx) for _ in range(self.workers)
                ]
            return self._lanes
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.workers)
        return [self._pool]

    def map(
        self,
        fn: Callable[..., R],
        items: Sequence[Any],
        /,
        *,
        progress: Tick | None = None,
        affinity: bool = False,
        **shared: Any,
    ) -> list[R]:
        call = functools.partial(fn, **shared) if shared else fn
        pools = self._pools(affinity) if len(items) > 1 else []
        if not pools:
            out: list[R] = []
            for it in items:
                out.append(call(it))
                if progress is not None:
                    progress(len(out))
            return out
        from concurrent.futures import as_completed

        futures = [pools[i % len(pools)].submit(call, it) for i, it in enumerate(items)]
        if progress is not None:
            for done, _ in enumerate(as_completed(futures), 1):
                progress(done)
        return [f.result() for f in futures]


def _import_modules(modules: tuple[str, ...]) -> None:
    """Import ``modules`` (a worker's start, :meth:`LocalExecutor.start`)."""
    import importlib

    for name in modules:
        importlib.import_module(name)


def _lane_context() -> Any:
    """The start method of the affinity lanes' processes: ``forkserver`` where the platform has
    it. Each lane is a pool of its own whose threads run as soon as its first task is
    submitted, so a later lane forked from this process would copy a process with threads
    (unsafe, and warned about from Python 3.12); the fork server forks from a process of one
    thread. Elsewhere, the platform's default (``spawn`` on Windows and macOS)."""
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else None)


class DaskExecutor:
    """On a Dask cluster: a LocalCluster of ``jobs`` processes, or the one at ``scheduler``."""

    name = "dask"

    def __init__(self, scheduler: str | None = None, jobs: int = 2) -> None:
        self.scheduler = scheduler
        self.workers = max(1, int(jobs))
        self._client: Any = None
        self._cluster: Any = None
        _require_dask()

    def __enter__(self) -> DaskExecutor:
        from distributed import Client, LocalCluster

        if self.scheduler:
            try:
                self._client = Client(self.scheduler, timeout="10s")
            except (OSError, ValueError, TypeError) as exc:  # TimeoutError is an OSError
                raise OptionError(
                    "scheduler", f"cannot reach a Dask scheduler at {self.scheduler}: {exc}"
                ) from None
            info = self._client.scheduler_info()
            self.workers = max(1, len(info.get("workers", {})))
        else:
            self._cluster = LocalCluster(
                n_workers=self.workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=50,
            )
            self._client = Client(self._cluster)
        return self

    def start(self, *modules: str, affinity: bool = False) -> None:
        """Nothing to do: the cluster's workers started with the block (``__enter__``), and each
        imports what a task needs at its first task."""

    def __exit__(self, *exc: object) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def map(
        self,
        fn: Callable[..., R],
        items: Sequence[Any],
        /,
        *,
        progress: Tick | None = None,
        affinity: bool = False,
        **shared: Any,
    ) -> list[R]:
        assert self._client is not None, "use the executor as a context manager"
        # the shared arguments are small (a parsed scenario, the registry's paths): they travel
        # with each task rather than being scattered (scatter reads a dict as a key mapping)
        call = functools.partial(fn, **shared) if shared else fn
        # every worker's address (scheduler_info() lists at most 5 in some distributed versions)
        addresses = sorted(self._client.nthreads()) if affinity else []
        if addresses:  # a preference: a task still runs elsewhere if its worker is gone
            futures = [
                self._client.submit(
                    call,
                    it,
                    pure=False,
                    workers=[addresses[i % len(addresses)]],
                    allow_other_workers=True,
                )
                for i, it in enumerate(items)
            ]
        else:
            futures = self._client.map(call, list(items), pure=False)
        if progress is not None:
            from distributed import as_completed

            for done, _ in enumerate(as_completed(futures), 1):
                progress(done)
        return list(self._client.gather(futures))


def _require_dask() -> None:
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise OptionError(
            "executor", f"'dask' needs dask.distributed, which is not installed: {DASK_HINT}"
        ) from None


#: Schemes of a Dask scheduler address the executor takes (a network scheduler; ``inproc://``
#: lives inside one process and ``ucx://`` needs UCX bindings).
SCHEDULER_SCHEMES = ("tcp", "tls")


def check_scheduler_address(address: str) -> None:
    """Raise :class:`OptionError` unless ``address`` is ``[tcp://|tls://]HOST:PORT``."""
    scheme, sep, rest = address.strip().rpartition("://")
    if sep and scheme not in SCHEDULER_SCHEMES:
        raise OptionError(
            "scheduler",
            f"{address!r}: the scheme must be one of {', '.join(SCHEDULER_SCHEMES)} "
            "(tcp://HOST:PORT)",
        )
    host, colon, port = rest.rpartition(":")
    if not colon or not host or not (port.isascii() and port.isdigit()):
        raise OptionError("scheduler", f"{address!r} is not HOST:PORT (tcp://HOST:PORT)")
    if not 1 <= int(port[:6]) <= 65535:
        raise OptionError("scheduler", f"{address!r}: the port must be in 1..65535")


def make_executor(executor: str = "local", *, jobs: int = 1, scheduler: str | None = None) -> Any:
    """The executor named ``executor`` (``local`` or ``dask``); raises OptionError otherwise."""
    if executor not in EXECUTORS:
        raise OptionError("executor", f"must be one of {', '.join(EXECUTORS)}, not {executor!r}")
    if jobs < 1:
        raise OptionError("jobs", "must be at least 1")
    if executor == "dask":
        if scheduler is not None:
            check_scheduler_address(scheduler)
        return DaskExecutor(scheduler, jobs=max(jobs, 1))
    if scheduler:
        raise OptionError("scheduler", "applies to the dask executor only")
    return LocalExecutor(jobs)

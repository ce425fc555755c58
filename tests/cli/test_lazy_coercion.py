"""The CLI's lazy coercion (pddplan.cli._LazyCoercion) gives what typer's own coercion gives, for
every parameter of every command, on the values it answers without typer's adapter."""

from __future__ import annotations

from typing import Any

from typer._coercion import build_runtime_param

from pddplan.cli import _LazyCoercion, command


def _params(cmd: Any) -> list[Any]:
    out = list(cmd.params)
    for sub in getattr(cmd, "commands", {}).values():
        out += _params(sub)
    return out


def test_lazy_coercion_matches_typer() -> None:
    params = [p for p in _params(command()) if getattr(p, "type_descriptor", None) is not None]
    assert params
    for p in params:
        lazy = _LazyCoercion(p.type_descriptor)
        real = build_runtime_param(p.type_descriptor)
        values: list[Any] = [None]
        if lazy.plain_str:
            values.append("table")
        if lazy.plain_list:
            values += [[], ()]
        for v in values:
            got = lazy.coerce(v, param=p, ctx=None)
            assert got == real.coerce(v, param=p, ctx=None), (p.name, v)
            assert type(got) is type(real.coerce(v, param=p, ctx=None)), (p.name, v)


def test_one_command_app_is_the_whole_apps_command() -> None:
    whole = command().commands["solve"]
    one = command("solve").commands
    assert list(one) == ["solve"]
    assert [p.name for p in one["solve"].params] == [p.name for p in whole.params]
    assert command("no-such-command").commands.keys() == command().commands.keys()

"""Context builders are plugins: each declares its sub-command of ``behavsim contexts`` beside its
code and registers it through the entry-point group ``behavsim.context_builders`` — so a package of
someone else's adds one without touching behavsim."""

from __future__ import annotations

import argparse
from importlib import metadata

import pytest

from behavsim import ContextSet
from behavsim.cli import main
from contexts.commands import BUILDERS_GROUP, add_output_option, output_path, save_set

OURS = {"generate", "collect", "collect-pydial", "import", "wizard", "select", "union", "perturb"}


def register_demo(subparsers):
    """A third party's builder: a set of N copies of one belief."""
    p = subparsers.add_parser("demo", help="N copies of one belief (a builder of a package of yours)")
    p.add_argument("--n", type=int, default=2)
    add_output_option(p)
    p.set_defaults(
        func=lambda a: save_set(ContextSet([{"beliefs": {"area": {"north": 1.0}}}] * a.n), output_path(a.output))
    )
    return p


@pytest.fixture
def with_builders(monkeypatch):
    real = metadata.entry_points

    def add(*extra):
        def entry_points(**kw):
            eps = real(**kw)
            if kw.get("group") == BUILDERS_GROUP:
                return [*eps, *(metadata.EntryPoint(name, value, BUILDERS_GROUP) for name, value in extra)]
            return eps

        monkeypatch.setattr(metadata, "entry_points", entry_points)

    return add


def test_behavsims_own_builders_are_entry_points(capsys):
    assert {ep.name for ep in metadata.entry_points(group=BUILDERS_GROUP)} == OURS
    with pytest.raises(SystemExit):
        main(["contexts", "--help"])
    listed = capsys.readouterr().out
    for name in OURS | {"info"}:
        assert f"    {name}" in listed


def test_a_package_of_yours_adds_a_builder(with_builders, tmp_path, capsys):
    with_builders(("demo", f"{__name__}:register_demo"))
    assert main(["contexts", "demo", "--n", "3", "-o", str(tmp_path / "d.jsonl")]) == 0
    assert len(ContextSet.load(tmp_path / "d.jsonl")) == 3
    assert "wrote 3 contexts" in capsys.readouterr().out


def test_a_builder_that_cannot_load_says_why(with_builders, capsys):
    with_builders(("broken", "no_such_package_of_yours.builders:register"))
    assert main(["contexts", "broken"]) == 2
    err = capsys.readouterr().err
    assert (
        "behavsim contexts broken: this builder could not be loaded: No module named 'no_such_package_of_yours'" in err
    )
    with pytest.raises(SystemExit):
        main(["contexts", "--help"])
    assert "(unavailable: No module named 'no_such_package_of_yours')" in capsys.readouterr().out


def test_union_command(tmp_path, make_grid):
    a, b = make_grid((0.0, 1.0)), make_grid((0.0, 0.5, 1.0))
    a.save(tmp_path / "a.jsonl")
    b.save(tmp_path / "b.jsonl")
    assert (
        main(
            [
                "contexts",
                "union",
                str(tmp_path / "a.jsonl"),
                str(tmp_path / "b.jsonl"),
                "-o",
                str(tmp_path / "u.parquet"),
            ]
        )
        == 0
    )
    u = ContextSet.load(tmp_path / "u.parquet")
    assert len(u) == 16 + 81 and u.fingerprint == ContextSet.concat([a, b]).fingerprint
    assert u.meta["builder"] == "union" and [p["fingerprint"] for p in u.meta["parts"]] == [
        a.fingerprint,
        b.fingerprint,
    ]


def test_register_functions_add_one_parser_each():
    from contexts._select import register_union

    sub = argparse.ArgumentParser().add_subparsers()
    parser = register_union(sub)
    assert list(sub.choices) == ["union"] and sub.choices["union"] is parser

"""The architecture's contracts (pyproject.toml [tool.importlinter], checked by `lint-imports` in
`bash run.sh lint`) cover what they claim: every private module of the core is forbidden outside it,
and every package of the project is in the layers."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _contracts() -> dict:
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    return {c["name"]: c for c in cfg["contracts"]}


def test_every_private_core_module_is_forbidden_outside_the_core():
    private = {
        ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for p in (ROOT / "behavsim").rglob("_*.py")
        if p.name != "__init__.py"
    }
    (contract,) = [c for c in _contracts().values() if c["type"] == "forbidden"]
    assert set(contract["forbidden_modules"]) == private
    assert set(contract["source_modules"]) == {"policies", "contexts", "experiments"}


def test_every_package_and_every_policies_subpackage_is_a_layer():
    layers = [c for c in _contracts().values() if c["type"] == "layers"]
    top = {d.name for d in ROOT.iterdir() if (d / "__init__.py").is_file()}
    assert set(layers[0]["layers"]) == top
    subs = {f"policies.{d.name}" for d in (ROOT / "policies").iterdir() if (d / "__init__.py").is_file()}
    # a layer of independent sub-packages is written "a | b" (import-linter: they may not import each other)
    assert {name.strip() for layer in layers[1]["layers"] for name in layer.split("|")} == subs
    assert not [p.name for p in (ROOT / "policies").glob("*.py") if p.name != "__init__.py"]

"""The architecture's contracts (pyproject.toml [tool.importlinter], checked by `lint-imports` in
`bash run.sh lint`) cover what they claim: every private module of the core is forbidden outside it,
and every package of the project is in the layers."""

import ast
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


def _private_core_imports(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of each import of a private core module (``behavsim._x``, ``behavsim.y._z``)
    in a file, and the text of its lines."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []
    for node in ast.walk(ast.parse("\n".join(lines))):
        names = []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "behavsim" and any(p.startswith("_") for p in parts[1:]):
                found.append((node.lineno, "\n".join(lines[node.lineno - 1 : node.end_lineno])))
    return found


def test_private_core_imports_in_tests_and_benchmarks_say_why():
    """Tests and benchmarks use the public API; where one reaches a private core module, the import
    line says why (``# private: ...``), so the reason is reviewed with the import."""
    unexplained = [
        f"{p.relative_to(ROOT)}:{line}"
        for folder in ("tests", "benchmarks")
        for p in sorted((ROOT / folder).rglob("*.py"))
        for line, text in _private_core_imports(p)
        if "# private:" not in text
    ]
    assert unexplained == []


def test_the_private_import_check_finds_one(tmp_path):
    f = tmp_path / "t.py"
    f.write_text("import os\nfrom behavsim._io import x\nfrom behavsim.io import y\nimport behavsim.scores._base\n")
    assert [line for line, _ in _private_core_imports(f)] == [2, 4]

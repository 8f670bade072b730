"""Every module of advisor/ and replay/ has a unit test: a test file that imports it (at the top or
inside a test), or, for a module of facts, asks a fact context for one of its facts by name.

A module reached only through the command line or another module's import does not count: a
failure there would surface far from its cause.
"""

from __future__ import annotations

import ast
from pathlib import Path

from advisor.facts import registry

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("advisor", "replay")



def modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _tested_by(tree: ast.AST, fact_modules: dict[str, str]) -> set[str]:
    """Module names a test file imports (`from p import m` may name module p.m), runs as `python -m`
    (runpy.run_module) or whose facts it asks for."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value in fact_modules):
            found.add(fact_modules[node.args[0].value])
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "run_module"
              and node.args and isinstance(node.args[0], ast.Constant)):  # runpy: `python -m package`
            found |= {node.args[0].value, f"{node.args[0].value}.__main__"}
    return found


def modules_imported_by_tests() -> set[str]:
    fact_modules = {name: f.module for name, f in registry().items()}
    found: set[str] = set()
    for path in (REPO / "tests").rglob("test_*.py"):
        found |= _tested_by(ast.parse(path.read_text(), str(path)), fact_modules)
    return found


def _is_namespace(path: Path) -> bool:
    """A package __init__ holding nothing but its docstring: tested through its modules."""
    body = ast.parse(path.read_text()).body
    return path.name == "__init__.py" and all(isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                              for s in body)


def test_every_module_has_a_unit_test():
    tested = modules_imported_by_tests()
    untested = sorted(name for name, path in modules().items()
                      if name not in tested and not _is_namespace(path))
    assert untested == [], f"modules no unit test imports: {untested}"


def test_the_check_sees_imports_inside_functions_and_fact_lookups():
    facts = {"straggler_ranks": "advisor.facts.imbalance"}
    tree = ast.parse("def test():\n    from advisor.report import plots\n    ctx.get('straggler_ranks')\n"
                     "    ctx.get('no_such_fact')\n")
    assert _tested_by(tree, facts) == {"advisor.report", "advisor.report.plots", "advisor.facts.imbalance"}

"""The code's layers (README, "How it is built"): no module imports a module of a higher layer,
the model code does not import the engine, and no two modules import each other, directly or
round a loop. Checked on the source (every import statement, also those inside functions) and by
importing each layer in a fresh interpreter."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Lowest first. A name stands for the module and everything under it; the longest name wins.
LAYERS = [
    ("base", ["replay", "advisor", "advisor.errors", "advisor.units", "advisor.formatting", "advisor.fileio"]),
    ("data model", ["advisor.profile", "advisor.expectation", "advisor.config", "advisor.verification",
                    "advisor.fixes", "advisor.findings", "advisor.lustre_tools", "advisor.metrics", "advisor.targets",
                    # the config sections other parts own: they import only advisor.config
                    "advisor.hooks.settings", "advisor.fleet.settings"]),
    ("ingest", ["advisor.collect", "advisor.ingest"]),
    ("analysis", ["advisor.campaign", "advisor.replay_plan"]),
    ("facts and replay", ["advisor.facts", "advisor.verify", "advisor.probe"]),
    ("engine, models, reports", ["advisor.engine", "advisor.models", "advisor.report"]),
    # models.check and models.holdout put the pipeline, the replayer and a model side by side
    ("pipeline", ["advisor.pipeline", "advisor.api", "advisor.models.check", "advisor.models.holdout",
                  "advisor.tune"]),  # tune races replays of fixes the diagnosis proposes
    ("entry points", ["advisor.hooks", "advisor.fleet", "advisor.commands", "advisor.cli", "advisor.__main__"]),
]
INDEPENDENT = {"advisor.models": ("advisor.engine", "advisor.facts")}  # learned models know no rules


def _modules() -> dict[str, Path]:
    found = {}
    for path in [*(REPO / "advisor").rglob("*.py"), *(REPO / "replay").rglob("*.py")]:
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()


def _owner(name: str) -> str:
    """The module of ours that `name` (a module or a name imported from one) is in, else ''."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _imports(module: str) -> set[str]:
    """Our modules `module` imports at run time (annotations under TYPE_CHECKING left out)."""
    path = MODULES[module]
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
    out = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            out |= {_owner(a.name) for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module if path.name == "__init__.py" else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}" if base else package
            out |= {_owner(f"{base}.{a.name}") if f"{base}.{a.name}" in MODULES else _owner(base)
                    for a in node.names}
    return out - {"", module}


GRAPH = {m: _imports(m) for m in MODULES}


def layer(module: str) -> tuple[int, str]:
    """(rank, the layer's name) of `module`."""
    best = (-1, "", "")
    for rank, (title, names) in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > len(best[2]):
                best = (rank, title, name)
    assert best[0] >= 0, f"{module} is in no layer: add it to LAYERS"
    return best[0], best[1]


def test_no_module_imports_a_higher_layer():
    upward = [f"{m} ({layer(m)[1]}) imports {t} ({layer(t)[1]})"
              for m, targets in GRAPH.items() for t in sorted(targets) if layer(t)[0] > layer(m)[0]]
    assert not upward, "\n".join(upward)


def test_model_code_is_independent_of_the_engine():
    crossing = [f"{m} imports {t}" for m, targets in GRAPH.items() for t in targets
                for low, banned in INDEPENDENT.items()
                if layer(m)[0] == layer(low)[0] and m.startswith(low + ".") and t.startswith(banned)]
    assert not crossing, "\n".join(crossing)


def test_the_replayer_imports_nothing_of_the_advisor():
    """replay/ runs on compute nodes with numpy and mpi4py only."""
    leaks = [f"{m} imports {t}" for m, targets in GRAPH.items() if m.startswith("replay")
             for t in targets if not t.startswith("replay")]
    assert not leaks, "\n".join(leaks)


def test_no_import_cycles():
    """Tarjan's strongly connected components of the import graph: every one is a single module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in GRAPH[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = [stack.pop()]
            while component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in MODULES:
        if module not in index:
            visit(module)
    assert not cycles, cycles


def test_the_walk_sees_imports_inside_functions():
    """The graph holds deferred imports too (pipeline.py imports the model code in its stages)."""
    assert "advisor.models.predict" in GRAPH["advisor.pipeline"]
    assert "advisor.verify" in GRAPH["advisor.pipeline"]


@pytest.mark.parametrize("rank", range(len(LAYERS)), ids=[title for title, _ in LAYERS])
def test_importing_a_layer_loads_nothing_above_it(rank):
    """In a fresh interpreter, importing every module of a layer and below loads no higher module."""
    own = sorted(m for m in MODULES if layer(m)[0] <= rank and not m.endswith("__main__"))
    code = ("import importlib, json, sys\n"
            f"for m in {own!r}: importlib.import_module(m)\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('advisor', 'replay'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = json.loads(done.stdout)
    # a package is loaded as the parent of its modules (advisor.hooks for advisor.hooks.settings)
    above = [m for m in loaded if m in MODULES and layer(m)[0] > rank
             and not any(x.startswith(m + ".") and layer(x)[0] <= rank for x in loaded)]
    assert not above, f"importing the {LAYERS[rank][0]} layer loads {above}"

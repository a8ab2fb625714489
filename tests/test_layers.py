"""The layout holds: imports point down the layers, no cycles, modules stay small, tests and benchmarks apart.

Layers, lowest first: kernel < files < index < domains < runtime < shells; `membank/__init__.py` is the
facade on top and imports only runtime and kernel. Every import counts: top-level, inside functions,
under TYPE_CHECKING, `importlib.import_module("...")` with a written name, and a channel's handler
named `Lazy("module", "function")` (domains/contract.py: imported at its first call). Module cycles are
counted as the shared tools' `imports.py` (`python3 ../shared/tools/imports.py membank`) counts them (a `from P import m` is an edge to P and to
P.m; a module importing its own package is no edge), so the two agree.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "membank"
LAYERS = ("kernel", "files", "index", "domains", "runtime", "shells")
FACADE = len(LAYERS)  # the package's own __init__: above every layer
FACADE_MAY_IMPORT = {"kernel", "runtime"}
OUTSIDE = ("tests", "benchmarks")  # the package imports neither
MAX_LINES = 500


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    line: int
    names: tuple[str, ...]  # the modules it brings in, or the package a name comes from
    base: str | None  # a from-import's package, run as well; None for `import x`


def modules(root: Path, package: str) -> dict[str, Path]:
    """Every module under root/package by dotted name; a package by its own name."""
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        name = ".".join(path.relative_to(root).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def _base(source: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = source.split(".")
    keep = len(parts) - node.level + (1 if path.name == "__init__.py" else 0)
    return ".".join(parts[:keep] + ([node.module] if node.module else []))


def _dynamic(node: ast.Call) -> str | None:
    """The written name of `importlib.import_module("x")`, `__import__("x")` or `Lazy("x", "handler")`."""
    func = node.func
    named = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if named not in ("import_module", "__import__", "Lazy") or not node.args:
        return None
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str) and not first.value.startswith("."):
        return first.value
    return None


def imports(mods: dict[str, Path]) -> list[Import]:
    out = []
    for source, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
            if isinstance(node, ast.Import):
                out.append(Import(source, node.lineno, tuple(a.name for a in node.names), None))
            elif isinstance(node, ast.ImportFrom):
                base = _base(source, path, node)
                subs = [f"{base}.{a.name}" for a in node.names]
                names = [s for s in subs if s in mods]
                if len(names) < len(subs) or not subs:  # some names come from the package itself
                    names.insert(0, base)
                out.append(Import(source, node.lineno, tuple(names), base))
            elif isinstance(node, ast.Call) and (name := _dynamic(node)):
                out.append(Import(source, node.lineno, (name,), None))
    return out


def edges(mods: dict[str, Path], found: list[Import]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for imp in found:
        for target in {*imp.names, *([imp.base] if imp.base else [])}:
            if target in mods and target != imp.source and not imp.source.startswith(target + "."):
                graph[imp.source].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            node, targets = work[-1]
            step = next(targets, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on.add(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in on:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return sorted(found)


def loop(graph: dict[str, set[str]], comp: list[str]) -> list[str]:
    """One way round a cycle: from the component's first node back to it (breadth first, shortest)."""
    start, inside = comp[0], set(comp)
    came: dict[str, str] = {}
    queue = [start]
    for node in queue:
        for target in sorted(graph[node] & inside):
            if target == start:
                path = [node]
                while path[-1] != start:
                    path.append(came[path[-1]])
                return [start, *reversed(path[:-1]), start] if node != start else [start, start]
            if target not in came:
                came[target] = node
                queue.append(target)
    return comp


def _cycle_offences(graph: dict[str, set[str]], what: str) -> list[str]:
    return [f"{what} cycle: {' <-> '.join(comp)} ({' -> '.join(loop(graph, comp))})" for comp in cycles(graph)]


def layer_of(name: str, package: str) -> int | None:
    parts = name.split(".")
    if parts == [package]:
        return FACADE
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[0] == package and parts[1] in LAYERS else None


def layer_offences(mods: dict[str, Path], found: list[Import], package: str) -> list[str]:
    out = [f"{m} is in no layer ({', '.join(LAYERS)})" for m in mods if layer_of(m, package) is None]
    for imp in found:
        here = layer_of(imp.source, package)
        for target in imp.names:
            at = f"{imp.source}:{imp.line} imports {target}"
            if target.split(".")[0] in OUTSIDE:
                out.append(f"{at}, outside the package")
                continue
            there = layer_of(target, package) if target.split(".")[0] == package else None
            if here is None or there is None or target == imp.source:
                continue
            if here == FACADE and there != FACADE and LAYERS[there] not in FACADE_MAY_IMPORT:
                out.append(f"{at}: the facade imports only {' and '.join(sorted(FACADE_MAY_IMPORT))}")
            elif there > here:
                upper = "the facade" if there == FACADE else LAYERS[there]
                out.append(f"{at}: {LAYERS[here] if here < FACADE else 'the facade'} may not import {upper}")
    return out


def domain_graph(graph: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """Domain package -> the domain packages its modules import (`membank.domains.X...`)."""
    def unit(name: str) -> str | None:
        parts = name.split(".")
        return parts[2] if len(parts) > 2 and parts[:2] == [package, "domains"] else None

    out: dict[str, set[str]] = {}
    for source, targets in graph.items():
        if (mine := unit(source)) is not None:
            out.setdefault(mine, set()).update(t for t in map(unit, targets) if t is not None and t != mine)
    for targets in list(out.values()):
        for t in targets:
            out.setdefault(t, set())
    return out


def size_offences(mods: dict[str, Path]) -> list[str]:
    sizes = {m: len(p.read_text("utf-8").splitlines()) for m, p in mods.items()}
    return [f"{m} has {n} lines (at most {MAX_LINES})" for m, n in sorted(sizes.items()) if n > MAX_LINES]


def _report(offences: list[str], what: str) -> str:
    return f"{len(offences)} {what}:\n  " + "\n  ".join(offences)


# -- the package ----------------------------------------------------------------------------------------

MODS = modules(ROOT, PACKAGE)
FOUND = imports(MODS)
GRAPH = edges(MODS, FOUND)


def test_imports_point_down_the_layers() -> None:
    offences = layer_offences(MODS, FOUND, PACKAGE)
    assert not offences, _report(offences, "imports that point up or out of the package")


def test_no_import_cycle_between_modules() -> None:
    offences = _cycle_offences(GRAPH, "import")
    assert not offences, _report(offences, "import cycles")


def test_no_cycle_between_domain_packages() -> None:
    offences = _cycle_offences(domain_graph(GRAPH, PACKAGE), "domain")
    assert not offences, _report(offences, "cycles between domain packages")


def test_no_module_over_the_line_limit() -> None:
    offences = size_offences(MODS)
    assert not offences, _report(offences, f"modules over {MAX_LINES} lines")


def test_benchmarks_import_nothing_from_tests() -> None:
    mods = modules(ROOT, "benchmarks")
    offences = [f"{i.source}:{i.line} imports {n}" for i in imports(mods) for n in i.names
                if n.split(".")[0] == "tests"]
    assert mods and not offences, _report(offences, "benchmark imports from tests/")


def test_no_test_module_imports_another() -> None:
    mods = modules(ROOT, "tests")
    tests = {m for m in mods if m.rsplit(".", 1)[-1].startswith("test_")}
    offences = [f"{i.source}:{i.line} imports {n}" for i in imports(mods) for n in i.names
                if n in tests and n != i.source]
    assert tests and not offences, _report(offences, "imports of a test module (shared helpers go in tests/helpers.py)")


# -- the guard itself, on a small package with one offence of each kind ------------------------------------


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")


def test_the_guard_finds_each_kind_of_offence(tmp_path: Path) -> None:
    _write(tmp_path, {
        "pkg/__init__.py": "from .runtime import r\nfrom .shells import s\n",
        "pkg/kernel/__init__.py": "",
        "pkg/kernel/a.py": "def later():\n    from ..shells import s\n",  # up, inside a function
        "pkg/files/__init__.py": "",
        "pkg/files/big.py": "x = 1\n" * (MAX_LINES + 1),
        "pkg/files/fine.py": "from ..kernel import a\nfrom pkg.kernel.a import later\n",
        "pkg/runtime/__init__.py": "",
        "pkg/runtime/r.py": "import importlib\nimportlib.import_module('benchmarks.thing')\n",
        "pkg/shells/__init__.py": "",
        "pkg/shells/s.py": "from ..kernel import a\nfrom .. import files\n",
        "pkg/domains/__init__.py": "",
        "pkg/domains/x/__init__.py": "",
        "pkg/domains/x/m.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.domains.y import n\n",
        "pkg/domains/y/__init__.py": "",
        "pkg/domains/y/n.py": "from ..x import m\n",
        "pkg/domains/y/channels.py": "from ..contract import Lazy\nHANDLER = Lazy('pkg.runtime.r', 'run')\n",
        "pkg/stray.py": "",
    })
    mods = modules(tmp_path, "pkg")
    found = imports(mods)
    graph = edges(mods, found)
    assert sorted(layer_offences(mods, found, "pkg")) == [
        "pkg.domains.y.channels:2 imports pkg.runtime.r: domains may not import runtime",
        "pkg.kernel.a:2 imports pkg.shells.s: kernel may not import shells",
        "pkg.runtime.r:2 imports benchmarks.thing, outside the package",
        "pkg.stray is in no layer (kernel, files, index, domains, runtime, shells)",
        "pkg:2 imports pkg.shells.s: the facade imports only kernel and runtime",
    ]
    assert _cycle_offences(graph, "import") == [
        "import cycle: pkg.domains.x.m <-> pkg.domains.y.n (pkg.domains.x.m -> pkg.domains.y.n -> pkg.domains.x.m)",
        "import cycle: pkg.kernel.a <-> pkg.shells.s (pkg.kernel.a -> pkg.shells.s -> pkg.kernel.a)",
    ]
    assert _cycle_offences(domain_graph(graph, "pkg"), "domain") == ["domain cycle: x <-> y (x -> y -> x)"]
    assert size_offences(mods) == [f"pkg.files.big has {MAX_LINES + 1} lines (at most {MAX_LINES})"]

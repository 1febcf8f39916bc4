"""The package's shape: one owner per fact, one-way layers, no cycles, no hidden imports.

These tests read the source (with ``ast``), they run nothing.  They fail when a fact
is defined again outside its owner, when a layer imports one above it, when the
import graph has a cycle, or when a function imports a project module (which hides
a dependency the layers would otherwise show).  docs/architecture.md explains the
layers and owners these rules encode.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import re
import subprocess
import sys
import tokenize
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dshlog"

#: Bottom to top: a module may import its own layer and the layers before it.
LAYERS: tuple[str, ...] = (
    "dshlog._version",
    "dshlog.errors",
    "dshlog.fastpaths",  # which body every fast path runs: the one switch (docs/architecture.md)
    "dshlog.protocol",
    "dshlog.check",
    "dshlog.model",
    "dshlog.output",
    "dshlog.migrate",
    "dshlog.forked",
    "dshlog.executor",  # how batch work runs: a policy the caller passes (docs/architecture.md)
    "dshlog.read",
    "dshlog.write",
    "dshlog.ops",
    "dshlog.browse",
    "dshlog.cli",
    "dshlog.__main__",
)
#: The facade re-exports the public API of every layer.
FACADE = "dshlog"

#: Every late import of the package (an import inside a function, or ``import_module`` called in one):
#: (module, function, what it imports) -> why, with what it keeps off the start-up of the commands
#: that do not use it (CPU, measured with ``python -X importtime`` and ``bench/startup.py`` on top of what
#: a reading command loads anyway).  Anything else is imported at the top of its module, where a
#: reader sees the dependency and the layers are checked: a late import is allowed only where it is
#: measured to matter; the test below fails on any other, and on an entry that is no longer in the code.
LATE_IMPORTS: dict[tuple[str, str, str], str] = {
    # `--version` answers before the command line (typer, the readers: about 120 ms) is loaded
    ("dshlog.__main__", "main", "dshlog.cli"): "the CLI framework, only when a command runs",
    # each command's module when that command runs (cli/app.py COMMANDS): 10-60 ms apiece
    ("dshlog.cli.app", "LazyCommands.get_command", "import_module"): "a command's module, on dispatch",
    # `import dshlog` loads a public name's owner on first use (docs/python-api.md)
    ("dshlog", "__getattr__", "import_module"): "a public name's owner, on first use",
    # validate asks rescue only of a session dsh refuses: the rescue catalogue is 19 ms
    ("dshlog.ops.validate", "_dsh_verdict", "dshlog.ops.rescuable"): "the rescue catalogue, for a refused session",
    ("dshlog.executor", "DaskExecutor.__init__", "distributed"): "Dask (an optional extra, 236 ms), for --scheduler",
    ("dshlog.executor", "ProcessPool._ensure", "multiprocessing"): "2.5 ms, for a pool of workers (-j 2 and more)",
    ("dshlog.read.cache", "open_cache", "sqlite3"): "1.3 ms, for the commands that use the cache",
    # pickle: 2-4 ms, only for an exception crossing a helper's pipe
    ("dshlog.forked", "pack_error", "pickle"): "pickle, for a helper's failure",
    ("dshlog.forked", "unpack_error", "pickle"): "pickle, for a helper's failure",
    # tempfile (and random, which it loads): 3-7 ms, only for a spool
    ("dshlog.read.source", "Reread.__init__", "tempfile"): "tempfile, to spool a stream read twice",
    ("dshlog.read.input", "LogInput._rewindable", "tempfile"): "tempfile, to spool an unseekable input",
    ("dshlog.cli.common", "DeferredStdout.__init__", "tempfile"): "tempfile, for output held until dsh's decision",
    # the migration chain: 4-7 ms, only to read a log older than v4 (a v4 log is its stored events)
    ("dshlog.read.header", "read_header", "dshlog.migrate.chain"): "the chain, for an older header",
    ("dshlog.read.view", "V4View.header", "dshlog.migrate.chain"): "the chain, for an older log's header",
    ("dshlog.read.view", "V4View._source", "dshlog.migrate.chain"): "the chain, for an older log's events",
    ("dshlog.read.children", "discover_child_facts", "dshlog.migrate.v3_v4"): "the chain, for an older log's children",
    ("dshlog.ops.validate", "_listed_by_dsh", "dshlog.migrate.chain"): "the chain, for an older log listed by dsh's read",
    ("dshlog.ops.validate", "_dsh_verdict", "dshlog.migrate.chain"): "the chain, for an older log's restore listed whole",
    # zstandard: 0.6 ms and a C library mapped, only for .zstd logs (a plain reader loads none:
    # tests/test_cli_help.py test_reading_commands_stay_light)
    ("dshlog.protocol.zstd", "FrameWalker.__init__", "zstandard"): "zstandard, to read a .zstd log",
    ("dshlog.write.writer", "frame", "zstandard"): "zstandard, to write a .zstd log",
    ("dshlog.write.writer", "LogWriter._flush", "zstandard"): "zstandard, to write a .zstd log",
    # rich: 17.6 ms, only when something is rendered with it (a terminal, show, browse)
    ("dshlog.output.screen", "Screen.console", "rich.console"): "rich, for a console",
    ("dshlog.output.screen", "text", "rich.text"): "rich, for a styled text",
    ("dshlog.output.table", "_layout", "rich.cells"): "rich, to fit a table to a terminal",
    ("dshlog.output.table", "table", "rich.table"): "rich, for a table on a terminal",
    ("dshlog.output.terminal", "renderable", "rich.padding"): "rich, for a transcript on a terminal",
    ("dshlog.output.terminal", "renderable", "rich.panel"): "rich, for a transcript on a terminal",
    ("dshlog.output.terminal", "renderable", "rich.rule"): "rich, for a transcript on a terminal",
    ("dshlog.output.terminal", "pieces", "rich.padding"): "rich, for a transcript on a terminal",
    ("dshlog.output.terminal", "pieces", "rich.text"): "rich, for a transcript on a terminal",
    ("dshlog.output.terminal", "TerminalRenderer.begin", "rich.panel"): "rich, for a transcript on a terminal",
    # the HTML page's code and Markdown: pygments 5.8 ms, markdown-it 19.4 ms, only for export --format html
    ("dshlog.output.richtext", "highlight", "pygments.lexers"): "pygments, for highlighted code",
    ("dshlog.output.richtext", "highlight", "pygments.util"): "pygments, for highlighted code",
    ("dshlog.output.richtext", "_token_class", "pygments.formatters.html"): "pygments, for highlighted code",
    ("dshlog.output.richtext", "_base_colour", "pygments.styles"): "pygments, for highlighted code",
    ("dshlog.output.richtext", "_base_colour", "pygments.token"): "pygments, for highlighted code",
    ("dshlog.output.richtext", "_styled_classes", "pygments.formatters"): "pygments, for highlighted code",
    ("dshlog.output.richtext", "code_css", "pygments.formatters"): "pygments, for highlighted code",
    ("dshlog.output.richtext", "_parser", "markdown_it"): "markdown-it, for Markdown as HTML",
}

#: The calls that import a module by name.
_IMPORT_CALLS = {"import_module", "importlib.import_module", "__import__"}


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        parts = p.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1]) if parts[-1] == "__init__" else ".".join(parts)
        out[name] = p
    return out


MODULES = _modules()
_TREES = {name: ast.parse(path.read_text()) for name, path in MODULES.items()}


def _package_of(name: str) -> str:
    return name if MODULES[name].name == "__init__.py" else name.rsplit(".", 1)[0]


def _imports(name: str) -> list[tuple[str, int, bool]]:
    """(imported dshlog module, line, inside a function) for every import of a module."""
    tree = _TREES[name]
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.ImportFrom):
                base = importlib.util.resolve_name("." * child.level + (child.module or ""), _package_of(name)) if child.level else (child.module or "")
                for alias in child.names:
                    full = f"{base}.{alias.name}"
                    found.append((full if full in MODULES else base, child.lineno, in_function))
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    found.append((alias.name, child.lineno, in_function))
            visit(child, inner)

    visit(tree, False)
    return found


def _layer(name: str) -> int | None:
    for i, prefix in enumerate(LAYERS):
        if name == prefix or name.startswith(prefix + "."):
            return i
    return None


def test_every_module_has_a_layer() -> None:
    assert [m for m in MODULES if m != FACADE and _layer(m) is None] == []


def test_layers_import_only_downwards() -> None:
    wrong = []
    for name in MODULES:
        if name == FACADE:
            continue
        mine = _layer(name)
        for target, line, _ in _imports(name):
            if not target.startswith("dshlog") or target == FACADE and name == "dshlog.__main__":
                continue
            theirs = _layer(target)
            if target == FACADE or theirs is None or mine is None or theirs > mine:
                wrong.append(f"{name}:{line} imports {target}")
    assert wrong == [], "\n".join(wrong)


def test_the_import_graph_has_no_cycle() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for name in MODULES:
        for target, _line, _ in _imports(name):
            if target in MODULES and target != name:
                graph[name].add(target)
    # Tarjan's strongly connected components, iteratively
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0
    for root in MODULES:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    cycles.append(sorted(comp))
    assert cycles == []


def _late_imports(name: str) -> list[tuple[str, str, int]]:
    """(function, imported module, line) of every import a function of module ``name`` makes.

    The function is named by its qualified name within the module (``Class.method``); an
    ``import_module`` call is named ``import_module`` whatever it loads.
    """
    found: list[tuple[str, str, int]] = []

    def visit(node: ast.AST, scope: str, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner, where = in_function, scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                where = f"{scope}.{child.name}" if scope else child.name
                inner = in_function or not isinstance(child, ast.ClassDef)
            if in_function:
                if isinstance(child, ast.ImportFrom):
                    base = importlib.util.resolve_name("." * child.level + (child.module or ""), _package_of(name)) \
                        if child.level else (child.module or "")
                    found.append((scope, base, child.lineno))
                elif isinstance(child, ast.Import):
                    found.extend((scope, alias.name, child.lineno) for alias in child.names)
                elif isinstance(child, ast.Call) and _call_name(child) in _IMPORT_CALLS:
                    found.append((scope, "import_module", child.lineno))
            visit(child, where, inner)

    visit(_TREES[name], "", False)
    return found


def test_every_late_import_is_listed() -> None:
    """An import inside a function hides a dependency from a reader and from the layer checks:
    each one is in :data:`LATE_IMPORTS`, with the start-up it saves, and every entry there is in the code."""
    seen = {(name, fn, target): line for name in MODULES for fn, target, line in _late_imports(name)}
    unlisted = [f"{name}:{line} {fn} imports {target}" for (name, fn, target), line in seen.items()
                if (name, fn, target) not in LATE_IMPORTS]
    assert unlisted == [], "import at the top of the module, or measure and list:\n" + "\n".join(unlisted)
    gone = sorted(set(LATE_IMPORTS) - set(seen))
    assert gone == [], f"listed late imports no longer in the code: {gone}"


# ------------------------------------------------------------------ facts outside their owners


def _code_nodes(owner_exempt: set[str]) -> list[tuple[str, ast.AST]]:
    out = []
    for name, tree in _TREES.items():
        if name in owner_exempt:
            continue
        for node in ast.walk(tree):
            out.append((name, node))
    return out


def _call_name(node: ast.Call) -> str:
    f = node.func
    parts = []
    while isinstance(f, ast.Attribute):
        parts.append(f.attr)
        f = f.value
    if isinstance(f, ast.Name):
        parts.append(f.id)
    return ".".join(reversed(parts))


def test_only_the_protocol_reader_parses_json() -> None:
    found = []
    for name, node in _code_nodes({"dshlog.protocol.jsjson"}):
        if isinstance(node, ast.Call) and _call_name(node) in {"orjson.loads", "json.loads", "json.load", "ijson.items", "ijson.parse", "ijson.kvitems",
                                                               "msgspec.json.decode", "msgspec.json.Decoder"}:
            found.append(f"{name}:{node.lineno} {_call_name(node)}")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(m in ("json", "ijson", "msgspec.json") for m in mods):
                found.append(f"{name}:{node.lineno} imports {mods}")
    assert found == [], "\n".join(found)


def test_only_the_protocol_writer_writes_json() -> None:
    found = []
    for name, node in _code_nodes({"dshlog.protocol.jsjson"}):
        if isinstance(node, ast.Call) and _call_name(node) in {"orjson.dumps", "json.dumps", "json.dump"}:
            found.append(f"{name}:{node.lineno} {_call_name(node)}")
    assert found == [], "\n".join(found)


def test_the_safe_integer_bound_is_spelt_once() -> None:
    found = []
    for name, node in _code_nodes({"dshlog.protocol.values"}):
        if isinstance(node, ast.Constant) and node.value in (2**53 - 1, 2**53):
            found.append(f"{name}:{node.lineno} {node.value}")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and isinstance(node.left, ast.Constant) \
                and node.left.value == 2 and isinstance(node.right, ast.Constant) and node.right.value == 53:
            found.append(f"{name}:{node.lineno} 2**53")
    # in comments and docstrings too: a text that spells the bound is a second copy to keep true
    spelt = re.compile(r"2\s*\*\*\s*53|900719925474099[12]")
    for name, path in MODULES.items():
        if name != "dshlog.protocol.values":
            found += [f"{name}:{n} {line.strip()}" for n, line in enumerate(path.read_text().splitlines(), 1) if spelt.search(line)]
    assert found == [], "\n".join(found)


def _strings(node: ast.AST) -> list[str]:
    return [e.value for e in getattr(node, "elts", []) if isinstance(e, ast.Constant) and isinstance(e.value, str)]


def _docstrings() -> set[int]:
    ids = set()
    for tree in _TREES.values():
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
                first = node.body[0]
                if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                    ids.add(id(first.value))
    return ids


def test_generation_file_names_are_spelt_only_by_the_layout() -> None:
    """No code spells a generation or lock name (docstrings and help texts may mention them)."""
    name = re.compile(r"^session(\.v[0-9]+)?\.jsonl(\.zstd)?$|^session\.lock$|session\\?\.(v|migration)")
    docs = _docstrings()
    found = []
    for mod, node in _code_nodes({"dshlog.protocol.layout"}):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs and name.search(node.value):
            found.append(f"{mod}:{node.lineno} {node.value!r}")
    assert found == [], "\n".join(found)


def test_event_type_sets_are_defined_only_in_the_vocabulary() -> None:
    """A named set of event types (a module or class constant, or any set built with
    ``set``/``frozenset``) is vocabulary.  A membership test written inline in a function
    is a switch over types, as dsh's own code has them, and may stay where it decides."""
    from dshlog.protocol.vocabulary import LEGACY_RENAMES, V0_TYPES, V4_TYPES

    known = set(V0_TYPES) | set(V4_TYPES) | set(LEGACY_RENAMES)

    def event_types(node: ast.AST) -> list[str]:
        values = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        return [v for v in values if v in known]

    def dispatch(value: ast.AST) -> bool:
        """A table from types to the functions that handle them is a switch, not a set."""
        return isinstance(value, ast.Dict) and all(isinstance(v, (ast.Name, ast.Attribute)) for v in value.values)

    found = []
    for mod, tree in _TREES.items():
        if mod == "dshlog.protocol.vocabulary":
            continue
        scopes = [tree] + [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
        for scope in scopes:
            for stmt in scope.body:
                if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None and not dispatch(stmt.value) \
                        and len(event_types(stmt.value)) >= 2:
                    found.append(f"{mod}:{stmt.lineno} {event_types(stmt.value)}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _call_name(node) in ("set", "frozenset") and len(event_types(node)) >= 2:
                found.append(f"{mod}:{node.lineno} {event_types(node)}")
    assert found == [], "\n".join(found)


def test_there_is_one_zstd_frame_walker() -> None:
    found = []
    for mod, node in _code_nodes({"dshlog.protocol.zstd"}):
        if isinstance(node, ast.Constant) and node.value in (b"\x28\xb5\x2f\xfd", 0xFD2FB528):
            found.append(f"{mod}:{node.lineno} the frame magic")
        if isinstance(node, ast.Attribute) and node.attr in ("ZstdDecompressor", "decompressobj", "stream_reader"):
            found.append(f"{mod}:{node.lineno} {node.attr}")
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("owner,names", [
    ("dshlog.protocol.jsjson", ["format_number", "js_string", "json_equal", "loads", "dumps"]),
    ("dshlog.model.summary", ["stream_usage"]),
    ("dshlog.protocol.values", ["is_safe_integer", "is_count", "is_placeholder"]),
    ("dshlog.protocol.layout", ["encode_segment", "decode_segment", "project_key", "choose_generation", "persistence_root"]),
])
def test_fact_functions_are_defined_once(owner: str, names: list[str]) -> None:
    defined = defaultdict(list)
    for mod, node in _code_nodes(set()):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.lstrip("_") in names:
            defined[node.name.lstrip("_")].append(mod)
    assert {n: mods for n, mods in defined.items() if mods != [owner]} == {}


#: Modules whose top-level names repeat another module's by design: the commands
#: (``cli/<command>.py`` names its function after its command).
NAMES_BY_DESIGN = ("dshlog.cli", "dshlog.__main__")

def _top_level_names() -> dict[str, set[str]]:
    """Public top-level functions and classes, by name: the modules that define each."""
    defined: dict[str, set[str]] = defaultdict(set)
    for mod, tree in _TREES.items():
        if any(mod == d or mod.startswith(d + ".") for d in NAMES_BY_DESIGN):
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                defined[node.name].add(mod)
    return defined


def test_a_public_name_is_defined_in_one_module() -> None:
    """A second definition of a public name is a second owner of its fact, or a name that
    says two things; either way a reader (and an import) can pick the wrong one."""
    twins = {n: sorted(mods) for n, mods in _top_level_names().items() if len(mods) > 1}
    assert twins == {}


#: The size (in syntax nodes) from which a function body is logic of its own rather than the shape
#: of a protocol (``return self``, ``self.close()``, ``yield first; yield from rest``).
_LOGIC_NODES = 10


def test_a_function_body_is_written_once() -> None:
    """Two functions (public or not, methods and nested ones too) with the same body are one piece of
    logic kept twice, as a private helper copied into a second module is: one owner, called from both."""
    bodies: dict[str, list[str]] = defaultdict(list)
    for mod, node in _code_nodes(set()):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                body = body[1:]  # the docstring
            code = ast.Module(body=body, type_ignores=[])
            if sum(1 for _ in ast.walk(code)) >= _LOGIC_NODES:
                bodies[ast.dump(code)].append(f"{mod}:{node.lineno} {node.name}")
    assert [places for places in bodies.values() if len(places) > 1] == []


def _only_delegates(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a function's body (past its docstring) is one call handed on: ``return f(...)`` or ``yield from f(...)``."""
    body = fn.body[1:] if fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant) else fn.body
    if len(body) != 1:
        return False
    stmt = body[0]
    if isinstance(stmt, ast.Return):
        return isinstance(stmt.value, ast.Call)
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.YieldFrom) and isinstance(stmt.value.value, ast.Call)


def test_no_module_only_rewraps_another() -> None:
    """A module whose every function only hands its call on is a tier of its own: a reader goes
    through it to find the code, and its names are second names of the same thing."""
    found = []
    for mod, tree in _TREES.items():
        fns = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if fns and not any(isinstance(n, ast.ClassDef) for n in tree.body) and all(_only_delegates(f) for f in fns):
            found.append(f"{mod}: {', '.join(f.name for f in fns)}")
    assert found == []


#: The facts of how to read an input that travel in a :class:`~dshlog.read.source.Source`.
_READING_OPTIONS = frozenset({"select", "format_version", "system_prompt_plugins", "plugins", "stream", "parallel"})
#: The modules a log is opened through: the library's operations, the opener and its views, the browser's index.
_OPENING_PATH = re.compile(r"^dshlog\.(ops\.\w+|read\.(input|session|view|pages))$")


def test_how_to_read_an_input_travels_as_one_value() -> None:
    """No public function on the way from a caller to the opener takes a reading option by itself:
    they travel together in a Source, so a new option is added in one place and read where it matters.
    (The command-line functions take them from the user and build the Source; below the opener,
    the container and migration layers take only the one fact each needs.)"""
    found = []
    for mod, tree in _TREES.items():
        if not _OPENING_PATH.match(mod):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                a = node.args
                taken = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]} & _READING_OPTIONS
                if taken:
                    found.append(f"{mod}.{node.name}: {', '.join(sorted(taken))}")
    assert found == []


#: What each of a log's three concerns may not reach into: the input knows no view of the events (nor dsh's
#: restore, nor the migration), the views read no bytes or rows themselves, the header decision reads no row.
_CONCERNS = {
    "dshlog.read.input": ("dshlog.read.view", "dshlog.read.session", "dshlog.check.validate", "dshlog.check.surface",
                          "dshlog.migrate"),
    "dshlog.read.session": ("dshlog.read.rows", "dshlog.protocol.zstd", "dshlog.protocol.jsjson"),
    "dshlog.read.header": ("dshlog.read.input", "dshlog.read.rows", "dshlog.read.session", "dshlog.read.view"),
}


def _imported(tree: ast.Module, mod: str) -> set[str]:
    """The project modules ``mod`` imports at its top, by their full names."""
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), mod.rsplit(".", 1)[0]) \
                if node.level else node.module or ""
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_a_log_is_cut_by_concern() -> None:
    """A log's input (container, header line, rows), dsh's decision on its header and its views live
    in three modules that reach into each other one way: the views are built over the input, which
    asks the header module for the rows' version.  And a consumer of the restore's surface takes
    part in it one way (a SurfaceShare): no callback of a command's own travels into the reader,
    the view or the validator by a parameter of its own."""
    from dshlog.check.validate import Validator
    from dshlog.read.input import LogInput
    from dshlog.read.session import SessionLog
    from dshlog.read.view import V4View

    found = [f"{mod} imports {name}" for mod, banned in _CONCERNS.items() for name in _imported(_TREES[mod], mod)
             if name.startswith(banned)]
    overridden = sorted(n for n in vars(SessionLog) if n in vars(LogInput) and not n.startswith("__"))
    found += [f"SessionLog overrides the input's {n}" for n in overridden]
    for fn in (SessionLog.v4, V4View.__init__, Validator.__init__):
        code = fn.__code__
        params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        found += [f"{fn.__qualname__} takes {p}" for p in params if "note" in p or "callback" in p]
    assert found == []


#: The migration edges name their own two versions (``v3_v4``'s target is 4 whatever the
#: current version is).
_EDGE = re.compile(r"^dshlog\.migrate\.v[0-9]+_v[0-9]+$")


def _names_a_version(node: ast.AST) -> bool:
    return "version" in ast.unparse(node).lower()


def _is_current(node: ast.AST, current: int) -> bool:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_current(e, current) for e in node.elts)
    return isinstance(node, ast.Constant) and type(node.value) is int and node.value == current


def test_the_current_format_version_is_spelt_only_by_the_protocol() -> None:
    """``version == 4`` outside ``protocol/`` would stay 4 when the format moves on: the
    current version is ``protocol.vocabulary.CURRENT_VERSION`` everywhere else."""
    from dshlog.protocol.vocabulary import CURRENT_VERSION

    found = []
    for mod, node in _code_nodes({m for m in MODULES if m.startswith("dshlog.protocol") or _EDGE.match(m)}):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_names_a_version(s) for s in sides) and any(_is_current(s, CURRENT_VERSION) for s in sides):
                found.append(f"{mod}:{node.lineno} {ast.unparse(node)}")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_names_a_version(t) for t in targets) and _is_current(node.value, CURRENT_VERSION):
                found.append(f"{mod}:{node.lineno} {ast.unparse(node)}")
        elif isinstance(node, ast.keyword) and node.arg and "version" in node.arg.lower() \
                and _is_current(node.value, CURRENT_VERSION):
            found.append(f"{mod}:{getattr(node, 'lineno', 0)} {ast.unparse(node)}")
        elif isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and isinstance(k.value, str) and "version" in k.value.lower() \
                        and _is_current(v, CURRENT_VERSION):
                    found.append(f"{mod}:{node.lineno} {ast.unparse(node)[:80]}")
    assert found == [], "\n".join(found)



def _is_int_literal(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def test_exit_codes_are_spelt_only_by_the_error_table() -> None:
    """An ``exit_code`` given as a bare number would not follow ``errors.ExitCode`` when a code
    is renumbered or documented anew: every exit code outside ``dshlog.errors`` is a member of it."""
    found = []
    for mod, node in _code_nodes({"dshlog.errors"}):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and _is_int_literal(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any("exit_code" in ast.unparse(t) for t in targets):
                found.append(f"{mod}:{node.lineno} {ast.unparse(node)}")
        elif isinstance(node, ast.keyword) and node.arg == "exit_code" and _is_int_literal(node.value):
            found.append(f"{mod}:{getattr(node, 'lineno', 0)} {ast.unparse(node)}")
    assert found == [], "\n".join(found)


# ----------------------------------------------------------------------------- a thin CLI, one environment

#: What the command line may import from the layers below it: the operations, the renderers,
#: the session opener and the store's lookups, the errors, and the facts it prints.  Decoding
#: rows (read.rows, read.container's readers, protocol.packed/zstd), parsing JSON and staging
#: files (write.transaction/atomic/writer/verify/lock) are the core's.
CLI_FORBIDDEN = (
    "dshlog.read.rows",
    "dshlog.protocol.packed",
    "dshlog.protocol.zstd",
    "dshlog.write.transaction",
    "dshlog.write.atomic",
    "dshlog.write.writer",
    "dshlog.write.verify",
    "dshlog.write.lock",
    "dshlog.migrate",
)
#: Names the command line may not import even from an allowed module (the JSON reader, row readers).
CLI_FORBIDDEN_NAMES = {"loads", "iter_array", "top_level_keys", "RowDecoder", "iter_lines", "iter_zstd_lines", "FrameWalker"}

#: The process state only ``dshlog.cli.env`` reads (and ``app.main`` its argv).
PROCESS_STATE = {"os.environ", "os.getenv", "os.getcwd", "os.getcwdb", "time.time", "time.time_ns",
                 "shutil.get_terminal_size", "os.get_terminal_size", "Path.cwd", "Path.home", "datetime.now",
                 "sys.stdout", "sys.stderr", "sys.stdin"}


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def test_the_cli_only_translates() -> None:
    """A command resolves its input, calls the core once and renders: no decoding, JSON parsing or staging."""
    found = []
    for name, tree in _TREES.items():
        if not name.startswith("dshlog.cli"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = importlib.util.resolve_name("." * node.level + (node.module or ""), _package_of(name)) if node.level else (node.module or "")
                if any(base == f or base.startswith(f + ".") for f in CLI_FORBIDDEN):
                    found.append(f"{name}:{node.lineno} imports {base}")
                for alias in node.names:
                    if alias.name in CLI_FORBIDDEN_NAMES:
                        found.append(f"{name}:{node.lineno} imports {base}.{alias.name}")
    assert not found, "\n".join(found)


def test_only_the_environment_reads_the_process() -> None:
    """Streams, isatty, the environment, the cwd and the clock are read once, by ``dshlog.cli.env``
    (``Env.from_process``); everything else gets them passed in."""
    # the library's documented default for library callers: a fork child's creation time is now
    allowed = {"dshlog.cli.env", "dshlog.__main__", "dshlog.ops.fork"}
    # ``-`` as a target names the process's standard input when no stream is passed (the library's
    # default); the command line passes its Env's stdin where it opens the log itself
    stdin_default = {"dshlog.read.container", "dshlog.read.input"}
    found = []
    for name, tree in _TREES.items():
        if name in allowed:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                dotted = _dotted(node)
                if dotted in PROCESS_STATE or dotted.endswith(".isatty") and not name.startswith("dshlog.output.screen"):
                    if dotted == "sys.stdin" and name in stdin_default:
                        continue
                    found.append(f"{name}:{node.lineno} reads {dotted}")
    assert not found, "\n".join(found)


#: The commands that only read, and what they must not load at start-up: the writers and
#: what only writers or other commands use.
READING_COMMANDS = ("info", "validate", "stats", "events", "tail", "surface", "requests", "rebuild")
NOT_FOR_READERS = ("dshlog.write", "dshlog.ops.export", "dshlog.ops.fork", "dshlog.ops.migrate", "dshlog.ops.repair", "dshlog.ops.rescue",
                   "dshlog.model.rescue", "dshlog.model.usage", "dshlog.output.html")


@pytest.mark.parametrize("command", READING_COMMANDS)
def test_a_reading_command_loads_no_writer(command: str) -> None:
    """A command's start-up pays for its own imports only (``docs/architecture.md``, "How to add a command")."""
    code = (f"import sys, dshlog.cli.app, dshlog.cli.{command}\n"
            f"print(sorted(m for m in sys.modules if m.startswith({NOT_FOR_READERS!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


#: The commands that print tables, event lines or JSON, never a transcript.
TABLE_COMMANDS = (*READING_COMMANDS, "ls", "diff")


@pytest.mark.parametrize("command", TABLE_COMMANDS)
def test_a_command_without_a_transcript_loads_no_transcript_model(command: str) -> None:
    """The transcript's item classes (about twenty dataclasses, built at import) are for ``show``, ``export`` and ``browse``."""
    code = (f"import sys, dshlog.cli.app, dshlog.cli.{command}\n"
            "print(sorted(m for m in sys.modules if m in ('dshlog.model.transcript', 'dshlog.output.renderer')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ----------------------------------------------------------------------------- the recipes in docs/architecture.md

ROOT = PACKAGE.parent
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def _recipe(heading: str) -> list[tuple[str, str]]:
    """(file, example) of each numbered row of the table under ``## heading``."""
    text = ARCHITECTURE.read_text()
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 3 and cells[0].isdigit():
            file, example = (re.search(r"`([^`]+)`", c) for c in cells[1:])
            assert file and example, line
            rows.append((file.group(1), example.group(1)))
    return rows


def _covers(kind: str, path: str) -> bool:
    """A kind is a file, or a directory (a trailing ``/``) for any file under it."""
    return path.startswith(kind) if kind.endswith("/") else path == kind


def test_the_recipe_for_a_command_is_the_shape_of_stats() -> None:
    rows = _recipe("How to add a command")
    assert len(rows) >= 10
    # the code a new command writes: at most six files (step 0 is used, not written; a model module
    # only when the command derives a new fact; the README and the library's guide are documents)
    written = [kind for kind, _ in rows[1:] if kind.startswith(("dshlog/", "tests/")) and kind != "dshlog/model/"]
    assert len(written) <= 6, written
    kinds = [kind.replace("<command>", "stats") for kind, _ in rows]
    for kind, example in zip(kinds, (e for _, e in rows)):
        assert (ROOT / example).exists(), f"{example} does not exist"
        assert _covers(kind, example), f"{example} is not a {kind}"
    from dshlog.cli.app import COMMANDS

    assert "stats" in COMMANDS
    # every project module the command imports is of a kind the recipe names (step 0's
    # second file, the shared options, counts too)
    shared = re.findall(r"`(dshlog/[^`]+)`", ARCHITECTURE.read_text().split("| 0 | ", 1)[1].split("\n", 1)[0])
    imported = {str(MODULES[t].relative_to(ROOT)) for t, _, _ in _imports("dshlog.cli.stats") if t in MODULES}
    assert imported, "dshlog.cli.stats imports no project module"
    assert sorted(p for p in imported if not any(_covers(k, p) for k in kinds + shared)) == []


def test_the_recipe_for_a_format_version_names_the_current_versions_files() -> None:
    from dshlog.protocol.vocabulary import CURRENT_VERSION

    rows = _recipe("How to add a format version")
    assert len(rows) >= 5
    for kind, example in rows:
        concrete = kind.replace("<N-1>", str(CURRENT_VERSION - 1)).replace("<N>", str(CURRENT_VERSION))
        assert (ROOT / example).exists(), f"{example} does not exist"
        assert _covers(concrete, example), f"{example} is not {concrete}"


# ----------------------------------------------------------------------------- how the tests run dshlog

TESTS = ROOT / "tests"
#: where the helpers are defined (and this file, which spells the patterns it looks for)
RUNNERS_HOME = {"conftest.py", "test_architecture.py"}
#: a command run in this process other than by ``conftest.run_env``: ``main`` called, or the fuzzer's runner
IN_PROCESS = re.compile(r"\bfrom dshlog(?:\.cli(?:\.app)?|\.__main__) import [^\n]*\bmain\b|\bdshlog\.cli(?:\.app)?\.main\b"
                        r"|\bcli\.main\(|\.run_command\(")
#: dshlog started as a process other than by ``conftest.run_process`` (or ``dshlog_argv``): its command line spelt
AS_PROCESS = re.compile(r"""['"]-m['"],\s*['"]dshlog(?:\.cli)?['"]|-m dshlog\b|with_name\(\s*['"]dshlog['"]\s*\)"""
                        r"""|\.parent\s*/\s*['"]dshlog['"]|\bDSHLOG_SCRIPT\b""")
#: The test modules that hold the ``Popen`` of a dshlog process themselves (``conftest.dshlog_argv``), and why.
NEEDS_POPEN = {
    "test_browse_tmux.py": "a real terminal: the shell tmux starts runs the console script",
    "test_cache.py": "two processes fill the cache at once",
    "test_cache_views.py": "two processes fill the cache at once",
    "test_export_stream.py": "its first line is read while the process still runs",
    "test_follow.py": "tail -f is read line by line as the log grows, then interrupted by SIGINT",
    "test_reliability_bombs.py": "started from a small parent that measures its peak RSS, killed as a group on a hang",
    "test_reliability_crash.py": "killed by SIGKILL at a random moment of its run",
    "test_search_stream.py": "its standard input is written while it runs",
    "test_ux.py": "its stdout is closed after the first byte, as `| head -c1` does",
    "test_ux_terminal.py": "on a pty; tail -f read while another command replaces the log",
}
#: The test modules whose own child process runs the command line inside it, and why.
OWN_CHILD = {
    "test_writers_contract.py": "the child patches one publication step to SIGKILL itself, then runs the command",
}


def _code(text: str) -> str:
    """``text`` with its comments and docstrings blanked, line numbers kept: what runs, and the code a child is given."""
    rows = [list(line) for line in text.splitlines(keepends=True)]
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            (row, start), (_, end) = tok.start, tok.end
            rows[row - 1][start:end] = " " * (end - start)
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for row in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                rows[row - 1] = ["\n"]
    return "".join("".join(r) for r in rows)


def _test_sources() -> dict[str, str]:
    return {str(p.relative_to(TESTS)): _code(p.read_text()) for p in sorted(TESTS.rglob("*.py")) if p.name not in RUNNERS_HOME}


def test_a_test_runs_dshlog_one_way() -> None:
    """``run_env`` in this process, ``run_process`` for a test about a process (tests/conftest.py);
    the ``Popen`` itself only where the test needs it, and a child of the test's own only where listed."""
    found = []
    popen, own = set(), set()
    for name, text in _test_sources().items():
        base = Path(name).name
        for pattern, what in ((IN_PROCESS, "runs a command in this process without conftest.run_env"),
                              (AS_PROCESS, "starts dshlog as a process without conftest.run_process")):
            for m in pattern.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                if base in OWN_CHILD:
                    own.add(base)
                else:
                    found.append(f"{name}:{line} {what}: {m.group(0)!r}")
        if re.search(r"\bdshlog_argv\(", text):
            if base in NEEDS_POPEN:
                popen.add(base)
            else:
                found.append(f"{name} holds a dshlog Popen (conftest.dshlog_argv): use conftest.run_process, or list it in NEEDS_POPEN")
    assert not found, "\n".join(found)
    assert sorted(set(NEEDS_POPEN) - popen) == [], "listed in NEEDS_POPEN but holds no Popen of dshlog"
    assert sorted(set(OWN_CHILD) - own) == [], "listed in OWN_CHILD but runs no command in a child of its own"

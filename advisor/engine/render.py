"""Message templates: a sandboxed Jinja2 environment with filters for I/O quantities.

Jinja2 is imported on first use, not with this module: a diagnosis with no finding,
from a cached catalogue, renders no template and need not pay for it. Compiling a
template costs about 2 ms and a diagnosis renders some twenty, so compiled templates
are kept across runs through Jinja2's bytecode cache API, all of them in one file of the
per-user cache directory (:func:`save` writes what a run compiled).
"""

from __future__ import annotations

import hashlib
import marshal
import os
import re
import tempfile
from functools import lru_cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.errors import ConfigError
from advisor.formatting import (counted, fmt_bytes, fmt_list, fmt_num, fmt_pct, fmt_rate, fmt_ratio, fmt_secs,
                                 shell_word,
                                 size_arg)
from advisor.units import KiB, MiB

if TYPE_CHECKING:
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment


@lru_cache(maxsize=1)
def environment() -> ImmutableSandboxedEnvironment:
    from advisor.gcpolicy import loading

    with loading():  # Jinja2's modules live as long as the process
        import jinja2
        from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined, autoescape=False,
                                        keep_trailing_newline=False, trim_blocks=True,
                                        loader=jinja2.FunctionLoader(_TEXTS.get),
                                        bytecode_cache=_bytecode_cache(jinja2.__version__))
    env.filters.update(bytes=fmt_bytes, pct=fmt_pct, secs=fmt_secs, num=fmt_num, rate=fmt_rate, ratio=fmt_ratio,
                       names=fmt_list, shell=shell_word, counted=counted,
                       kib=partial(_in_unit, unit=KiB), mib=partial(_in_unit, unit=MiB),  # kernel settings' units
                       lfs_size=partial(size_arg, upper=True),  # 4M, as `lfs setstripe -S` takes it
                       size_arg=size_arg)  # 4m, as IOR's -t, IOzone's -s and fio's size= take it
    return env


# The filter that shows each unit kind (advisor.units.KINDS) in a message; a fact of these kinds
# printed bare or through another kind's filter is a mistake the catalogue refuses at load time
# ('int' prints the raw base-unit number, for a command that takes bytes).
UNIT_FILTERS = {"bytes": {"bytes", "kib", "mib", "lfs_size", "size_arg", "int"}, "seconds": {"secs"}, "rate": {"rate"},
                "ratio": {"ratio"}, "fraction": {"pct"}}
FILTER_KIND = {f: kind for kind, filters in UNIT_FILTERS.items() for f in filters if f != "int"}


def _in_unit(value: Any, unit: int) -> int:
    """A byte count as a whole number of `unit` (read_ahead_kb, max_dirty_mb take KiB and MiB)."""
    return int(value) // unit


def _bytecode_cache(jinja2_version: str):
    """The compiled templates of earlier runs, all in one file, or None when there is no private
    place for it. One file, not Jinja2's file per template: reading a template's own file cost
    about 0.4 ms, and a fleet worker renders a hundred or more (0.03 ms each from one file).

    Each entry keeps its template's checksum (Jinja2 checks a cached template against its text
    only); the directory's key covers what else the compiled code depends on: this module
    (options, filters), Jinja2 and Python.
    """
    from jinja2 import BytecodeCache

    from advisor.engine import cache

    class BundleCache(BytecodeCache):
        """Failing to read or store the compiled templates only means compiling them."""

        def __init__(self, path: Path):
            self.path, self.entries, self.added = path, _read_bundle(path), False

        def load_bytecode(self, bucket) -> None:
            entry = self.entries.get(bucket.key)
            if entry is not None and entry[0] == bucket.checksum:
                try:
                    bucket.code = marshal.loads(entry[1])
                except Exception:  # damaged entry: compile instead
                    bucket.reset()

        def dump_bytecode(self, bucket) -> None:
            self.entries[bucket.key] = (bucket.checksum, marshal.dumps(bucket.code))
            self.added = True

    folder = cache.private_dir("templates", cache.digest(Path(__file__).read_bytes(), jinja2_version))
    return BundleCache(folder / "bundle.marshal") if folder else None


def _read_bundle(path: Path) -> dict[str, tuple[str, bytes]]:
    """The entries of the bundle file if it is there, ours alone and whole, else none."""
    from advisor.engine import cache

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return {}
    with os.fdopen(fd, "rb") as fh:
        try:
            if not cache.private(os.fstat(fd)):
                return {}
            entries = marshal.loads(fh.read())
        except Exception:  # damaged or foreign: compile again
            return {}
    ok = isinstance(entries, dict) and all(isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str)
                                           and isinstance(v[1], bytes) for v in entries.values())
    return entries if ok else {}


def save() -> None:
    """Write the templates this process compiled into the bundle file (readers see the old file or
    the new one, whole); nothing when it compiled none. What other processes stored since this one
    read the file is kept: two fleet workers each saving only their own entries left the file with
    the last writer's (91 to 112 of 112 templates over four runs from an empty cache)."""
    if environment.cache_info().currsize == 0:
        return  # Jinja2 never loaded: nothing rendered
    bundle = environment().bytecode_cache
    if bundle is None or not bundle.added:
        return
    try:
        fd, tmp = tempfile.mkstemp(dir=bundle.path.parent, prefix=".bundle-", suffix=".tmp")
    except OSError:
        return
    try:
        bundle.entries = {**_read_bundle(bundle.path), **bundle.entries}
        with os.fdopen(fd, "wb") as fh:
            fh.write(marshal.dumps(bundle.entries))
        os.replace(tmp, bundle.path)
        bundle.added = False
    except OSError:  # a full disk: no cache this time
        Path(tmp).unlink(missing_ok=True)


_TEXTS: dict[str, str] = {}
"""Template name (a hash of its text: Jinja2 quotes names into the code it generates) -> text."""


@lru_cache(maxsize=2048)
def compile_template(text: str) -> jinja2.Template:
    name = hashlib.sha1(text.encode()).hexdigest()
    _TEXTS[name] = text
    return environment().get_template(name)


def variables(text: str) -> set[str]:
    """Names a template reads and does not set itself; jinja2 syntax errors propagate.

    Walks the parsed template's Name nodes rather than meta.find_undeclared_variables,
    which runs the code generator and made loading the catalogue ten times slower.
    """
    from jinja2 import nodes

    tree = environment().parse(text)
    loaded = {n.name for n in tree.find_all(nodes.Name) if n.ctx == "load"}
    stored = {n.name for n in tree.find_all(nodes.Name) if n.ctx in ("store", "param")}
    if any(True for _ in tree.find_all(nodes.For)):
        stored.add("loop")  # the implicit loop variable of a for block
    return loaded - stored - set(environment().globals)


def check(text: str, known: set[str], where: str, kinds: dict[str, str] | None = None) -> None:
    """Load-time check: the template parses, reads only `known` names, and shows each name of
    `kinds` (name -> unit kind) with its kind's filter (:data:`UNIT_FILTERS`)."""
    import jinja2

    try:
        used = variables(text)
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(f"{where}: template error: {exc.message}") from None
    unknown = sorted(used - known)
    if unknown:
        raise ConfigError(f"{where}: template uses '{unknown[0]}', which is not in the rule's "
                          "evidence or thresholds")
    for name, shown in _shown(text):
        kind = (kinds or {}).get(name)
        if kind is None:
            continue
        expected = UNIT_FILTERS.get(kind)
        if (expected is not None and shown not in expected) or FILTER_KIND.get(shown or "", kind) != kind:
            how = f"through '{shown}'" if shown else "bare"
            want = f"use {' or '.join(sorted(expected))}" if expected else "a number of its kind takes no unit filter"
            raise ConfigError(f"{where}: '{name}' is a {kind} shown {how}: {want}")


def _shown(text: str) -> list[tuple[str, str | None]]:
    """(name, first filter or None) for every name a template prints directly or filters."""
    from jinja2 import nodes

    tree = environment().parse(text)
    out = [(n.node.name, n.name) for n in tree.find_all(nodes.Filter) if isinstance(n.node, nodes.Name)]
    for output in tree.find_all(nodes.Output):
        out += [(n.name, None) for n in output.nodes if isinstance(n, nodes.Name)]
    return out


def render(text: str, values: dict[str, Any]) -> str:
    return compile_template(text).render(values).strip()


_PRINT = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}", re.S)
_TAG = re.compile(r"\s*\{%-?\s*(if|elif|else|endif|for|endfor)\b\s*(.*?)\s*-?%\}\s*", re.S)


def outline(text: str, code: bool = False) -> str:
    """A template as a reader of the rule's page sees it, without Jinja2 syntax: each value it
    prints as ``<name>``, each condition as ``[when cond]``, each loop as ``[for each x in xs]``;
    decorative strings (separators between loop items) are left out. `code` keeps the plain
    ``<name>`` of a command line; prose quotes names in backticks (Markdown would take
    ``<name>`` for an HTML tag)."""
    quote = (lambda s: s) if code else (lambda s: f"`{s}`")

    def value(match: re.Match) -> str:
        expr = match.group(1)
        if expr[:1] in "'\"" or "loop." in expr:  # a separator or a literal decoration
            return ""
        return quote(f"<{expr.split('|')[0].strip()}>")

    def tag(match: re.Match) -> str:
        word, rest = match.group(1), " ".join(match.group(2).split())
        shown = {"if": f" [when {quote(rest)}] ", "elif": f" [else, when {quote(rest)}] ", "else": " [otherwise] ",
                 "for": f" [for each {quote(rest)}] "}.get(word, " ")
        return shown

    plain = _TAG.sub(tag, _PRINT.sub(value, text))
    if code:  # a command keeps its own spacing
        return "\n".join(line.strip() for line in plain.split("\n")).strip()
    return " ".join(plain.split())

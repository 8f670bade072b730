"""IOR sizes and command-line options: what a test was asked to do.

The text output states most parameters in its ``Options:``/``Summary:`` block,
but some only appear on the command line (``-C``, ``-e``, ``-Y``, ``-B``,
``-O lustreStripeCount=``), and table-only fragments have nothing else.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import fields
from decimal import Decimal

from advisor.ingest.ior.model import FPP, SHARED, IorParams

_SUFFIX = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
_UNIT = {"bytes": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
         "pib": 1 << 50, "kb": 1000, "mb": 10**6, "gb": 10**9, "tb": 10**12}


def parse_size(text: str) -> int | None:
    """An IOR size argument (``1m``, ``2048k``, ``47008``, ``4G``) in bytes, or None."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgtpKMGTP]?)\s*", text)
    if not m:
        return None
    return int(_exact(m.group(1)) * _SUFFIX[m.group(2).lower()])


def parse_human(text: str) -> int | None:
    """A size as IOR prints it (``1 MiB``, ``47008 bytes``, ``9.46 TiB``) in bytes, or None.

    Printed sizes are rounded to two decimals; exact values come from the summary
    table or the command line when those exist.
    """
    m = re.match(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)", text)
    if not m:
        return None
    unit = m.group(2).lower() or "bytes"
    if unit not in _UNIT:
        return None
    return round(_exact(m.group(1)) * _UNIT[unit])


def _exact(digits: str) -> Decimal:
    """The number as written: a float turns 400 digits into infinity, which no integer holds
    (the plausibility bounds then refuse the size, naming it)."""
    return Decimal(digits[:5000])


# short option -> (field, kind); kind "size"/"int"/"float"/"str" take an argument,
# "true" sets a boolean, "count" counts (-v).
_SHORT = {
    "a": ("api", "str"), "b": ("block_size", "size"), "t": ("transfer_size", "size"),
    "s": ("segments", "int"), "i": ("repetitions", "int"), "o": ("test_file", "str"),
    "N": ("tasks", "int"), "Q": ("task_offset", "int"), "D": ("stonewall_s", "float"),
    "F": ("access", "fpp"), "c": ("collective", "true"), "C": ("reorder_tasks", "true"),
    "Z": ("reorder_random", "true"), "z": ("random_offsets", "true"), "e": ("fsync", "true"),
    "Y": ("fsync_per_write", "true"), "B": ("direct_io", "true"), "w": ("write", "true"),
    "r": ("read", "true"), "k": ("keep_file", "true"),
}
# options that take an argument but map to no field (kept in `other`)
_SHORT_ARG = set("AdfGjJlMOTUX")
_SHORT_FLAG = set("EghHIKmnpPqRSuvVWxy")
_LONG = {
    "posix.odirect": ("direct_io", "true"),
    "mpiio.collective": ("collective", "true"),
    "posix.lustre.stripecount": ("stripe_count", "int"),
    "posix.lustre.stripesize": ("stripe_size", "size"),
    "lustre.stripecount": ("stripe_count", "int"),
    "lustre.stripesize": ("stripe_size", "size"),
    "blockSize": ("block_size", "size"), "transferSize": ("transfer_size", "size"),
    "segmentCount": ("segments", "int"), "repetitions": ("repetitions", "int"),
    "filePerProc": ("access", "fpp"), "reorderTasks": ("reorder_tasks", "true"),
}
_O_KEYS = {
    "lustrestripecount": ("stripe_count", "int"), "lustrestripesize": ("stripe_size", "size"),
    "stonewallingwearout": ("stonewall_wearout", "true"),
    "deadlineforstonewalling": ("stonewall_s", "float"),
}
_LAUNCH_NP = re.compile(r"(?:^|\s)(?:-n|-np|--ntasks|--np|-N)[=\s]+(\d+)")
_IOR_EXE = re.compile(r"(?:^|/)(?:IOR|ior)(?:\.exe)?$")


def _coerce(kind: str, value: str):
    if kind == "size":
        return parse_size(value)
    if kind == "int":
        try:
            return int(value)
        except ValueError:
            return None
    if kind == "float":
        try:
            return float(value)
        except ValueError:
            return None
    if kind == "true":
        return value.lower() not in ("0", "false", "no") if value else True
    if kind == "fpp":
        return FPP if value.lower() not in ("0", "false", "no") else SHARED
    return value


def _set(params: IorParams, name: str, kind: str, value: str) -> None:
    coerced = _coerce(kind, value)
    if coerced is not None:
        setattr(params, name, coerced)


def _apply_o(params: IorParams, assignment: str) -> None:
    key, _, value = assignment.partition("=")
    target = _O_KEYS.get(key.strip().lower())
    if target:
        _set(params, *target, value.strip())
    params.hints[key.strip()] = value.strip()


def split_command(command_line: str) -> tuple[str, list[str]]:
    """(launcher part, IOR arguments) of a command line that may start with mpirun/srun."""
    try:
        words = shlex.split(command_line)
    except ValueError:
        words = command_line.split()
    for i, word in enumerate(words):
        if _IOR_EXE.search(word):
            return " ".join(words[:i]), words[i + 1:]
    return "", words


def _short_cluster(params: IorParams, word: str, words: list[str], i: int) -> int:
    """Apply one ``-xyz``/``-t1m`` word; returns how many extra words it consumed."""
    letters = word[1:]
    for j, letter in enumerate(letters):
        rest = letters[j + 1:]
        if letter in _SHORT and _SHORT[letter][1] in ("true", "fpp"):
            _set(params, *_SHORT[letter], "1")
            continue
        if letter in _SHORT_FLAG:
            continue
        takes_arg = letter in _SHORT or letter in _SHORT_ARG
        if not takes_arg:
            return 0
        value, used = (rest, 0) if rest else ((words[i + 1], 1) if i + 1 < len(words) else ("", 0))
        if letter == "O":
            _apply_o(params, value)
        elif letter in _SHORT:
            _set(params, *_SHORT[letter], value)
        else:
            params.other[f"-{letter}"] = value
        return used
    return 0


def params_from_command_line(command_line: str) -> IorParams:
    """The parameters a command line sets (everything else stays None)."""
    launcher, words = split_command(command_line)
    params = IorParams()
    m = _LAUNCH_NP.search(" " + launcher)
    if m:
        params.tasks = int(m.group(1))
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("--"):
            key, eq, value = word[2:].partition("=")
            if key in _LONG:
                kind = _LONG[key][1]
                if not eq and kind not in ("true", "fpp") and i + 1 < len(words):
                    value, i = words[i + 1], i + 1
                _set(params, _LONG[key][0], kind, value)
            else:
                params.other[f"--{key}"] = value
        elif word.startswith("-") and len(word) > 1:
            i += _short_cluster(params, word, words, i)
        i += 1
    if params.write is None and params.read is None:
        if words:
            params.write = params.read = True  # IOR's default: write, then read
    else:
        params.write, params.read = bool(params.write), bool(params.read)
    return params


def fill_missing(params: IorParams, fallback: IorParams) -> None:
    """Copy into `params` every field it leaves unset that `fallback` states."""
    for f in fields(IorParams):
        mine, theirs = getattr(params, f.name), getattr(fallback, f.name)
        if isinstance(mine, dict):
            for key, value in theirs.items():
                mine.setdefault(key, value)
        elif mine in (None, "") and theirs not in (None, ""):
            setattr(params, f.name, theirs)

"""Recorder's per-rank call grammars (``N.cfg``): parsed, checked and expanded with numpy.

A grammar is a set of Sequitur rules; each rule is a list of (value, repetitions) symbols, a value
>= 0 a terminal (a call-signature id), < 0 another rule; rule -1 is the rank's whole call sequence.
Expanding it rule by rule in Python costs a few microseconds per rule (FLASH: 220,000 rules over
1,024 ranks), so many grammars are expanded together, one grammar level per pass: every rule of
one height is written from the already written rules below it. Each rule's expansion is written
once (FLASH: 1.3 times the calls), and a batch's passes touch no more memory than its calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from advisor.ingest.recorder.chains import walk

MAX_DEPTH = 256  # rules nested deeper than this are refused (FLASH's grammars nest 8 deep)


class GrammarError(ValueError):
    """A grammar that cannot be expanded: the message says why, the caller names the file."""


@dataclass(frozen=True)
class Grammar:
    """One ``.cfg``: the rules' ids, and their symbols as flat columns in rule order."""

    path: Path
    rule_ids: np.ndarray  # int64, negative
    length: np.ndarray  # int64 symbols per rule
    value: np.ndarray  # int64 per symbol: >= 0 terminal, < 0 rule id
    reps: np.ndarray  # int64 per symbol


def parse(raw: bytes, path: Path) -> Grammar:
    """Rule count, then per rule its id, its symbol count and (value, repetitions) per symbol."""
    (grammar,) = parse_all([raw], [path])
    return grammar


def parse_all(raws: list[bytes], paths: list[Path]) -> list[Grammar]:
    """Several ``.cfg`` files, their rule heads found together (:mod:`chains`)."""
    for raw, path in zip(raws, paths):
        if len(raw) < 4 or len(raw) % 4:
            raise GrammarError(f"{path}: grammar truncated")
    words = np.frombuffer(b"".join(raws) + bytes(8), "<i4")
    size = np.array([len(raw) // 4 for raw in raws], np.int64)
    begin = np.cumsum(size) - size
    count = np.maximum(words[begin], 0).astype(np.int64)
    # a rule takes two words at least: a larger count is damage (and no endless walk)
    over = np.flatnonzero(count > (size - 1) // 2)
    if over.size:
        raise GrammarError(f"{paths[int(over[0])]}: grammar truncated after 0 of {int(count[over[0]])} rules")
    heads, _ = walk(begin + 1, count, lambda at: 2 + 2 * words[np.minimum(at + 1, words.size - 1)].astype(np.int64))
    owner = np.repeat(np.arange(len(raws)), count)
    limit = (begin + size)[owner]
    length = words[np.minimum(heads + 1, words.size - 1)].astype(np.int64)
    bad = (heads + 2 > limit) | (length < 0) | (heads + 2 + 2 * length > limit)
    if bad.any():  # the first bad rule: its head is cut off (or nonsense), or its symbols are
        i = int(np.argmax(bad))
        nth = i - int(np.searchsorted(owner, owner[i]))
        head_cut = heads[i] + 2 > limit[i] or length[i] < 0
        why = (f"grammar truncated after {nth} of {int(count[owner[i]])} rules" if head_cut
               else f"grammar truncated in rule {int(words[heads[i]])}")
        raise GrammarError(f"{paths[int(owner[i])]}: {why}")
    first = np.cumsum(length) - length
    symbols = np.repeat(heads + 2 - 2 * first, 2 * length) + np.arange(2 * int(length.sum()))
    pairs = words[symbols].astype(np.int64).reshape(-1, 2)
    rule_ids = words[heads].astype(np.int64)
    rules = np.concatenate(([0], np.cumsum(count))).tolist()  # grammar g: rules[g]:rules[g + 1]
    syms = np.concatenate(([0], np.cumsum(length)))[rules].tolist()
    return [_checked(Grammar(path, rule_ids[r0:r1], length[r0:r1], pairs[s0:s1, 0], pairs[s0:s1, 1]))
            for path, r0, r1, s0, s1 in zip(paths, rules, rules[1:], syms, syms[1:])]


def _checked(g: Grammar) -> Grammar:
    if not (g.rule_ids == -1).any():
        raise GrammarError(f"{g.path}: grammar has no start rule")
    if (g.rule_ids >= 0).any():
        raise GrammarError(f"{g.path}: grammar rule id {int(g.rule_ids[g.rule_ids >= 0][0])} is not negative")
    if (g.reps < 0).any():
        raise GrammarError(f"{g.path}: grammar holds negative repetitions")
    return g


@dataclass
class _Batch:
    """Several grammars' rules numbered together (rule k of grammar g: base[g] + k)."""

    start: np.ndarray  # global index of each grammar's rule -1
    owner: np.ndarray  # grammar of each rule
    rule_of: np.ndarray  # rule of each symbol
    child: np.ndarray  # global rule of each symbol, -1 for a terminal
    value: np.ndarray  # terminal id (meaningful where child < 0)
    reps: np.ndarray
    nrules: int


def _batch(grammars: list[Grammar]) -> _Batch:
    counts = np.array([g.rule_ids.size for g in grammars], np.int64)
    base = np.cumsum(counts) - counts
    starts, children = [], []
    for g, b in zip(grammars, base.tolist()):
        slot = np.full(int(-g.rule_ids.min()) + 1, -1, np.int64)
        slot[-g.rule_ids] = np.arange(g.rule_ids.size)
        starts.append(b + slot[1])
        rule = g.value < 0
        index = np.where(rule, -g.value, 0)
        bad = rule & ((index >= slot.size) | (slot[np.minimum(index, slot.size - 1)] < 0))
        if bad.any():
            raise GrammarError(f"{g.path}: grammar references missing rule {int(g.value[bad][0])}")
        children.append(np.where(rule, b + slot[index], -1))
    lengths = np.concatenate([g.length for g in grammars])
    nrules = int(counts.sum())
    return _Batch(np.array(starts, np.int64), np.repeat(np.arange(len(grammars)), counts),
                  np.repeat(np.arange(nrules), lengths), np.concatenate(children),
                  np.concatenate([g.value for g in grammars]), np.concatenate([g.reps for g in grammars]),
                  nrules)


def expand(grammars: list[Grammar], limits: list[int]) -> list[np.ndarray]:
    """The terminal ids of each grammar's start rule, in call order.

    `limits` (calls per grammar) bound the memory a damaged or hostile grammar could claim: its
    rules may expand to at most eight times that many terminals together."""
    b = _batch(grammars)
    is_rule = b.child >= 0
    height = _heights(b, is_rule, grammars)
    # symbols grouped by their rule's height (rule order inside): a level is one slice
    sym_order = np.argsort(height[b.rule_of], kind="stable")
    bounds = np.searchsorted(height[b.rule_of][sym_order], np.arange(1, int(height.max(initial=1)) + 2))
    levels = [sym_order[lo:hi] for lo, hi in zip(bounds.tolist(), bounds[1:].tolist())]
    # lengths as floats first: a hostile grammar's repetitions would overflow integers
    length = np.zeros(b.nrules)
    with np.errstate(over="ignore", invalid="ignore"):
        for sel in levels:  # a rule's length from the lengths of the rules below it
            child = b.child[sel]
            length += np.bincount(b.rule_of[sel], minlength=b.nrules,
                                  weights=b.reps[sel] * np.where(child >= 0, length[np.maximum(child, 0)], 1.0))
        total = np.bincount(b.owner, weights=length, minlength=len(grammars))
        over = np.flatnonzero(~(total <= 8 * np.array(limits, np.float64) + 1024))  # NaN: over too
    if over.size:
        g = int(over[0])
        raise GrammarError(f"{grammars[g].path}: grammar expands to over {8 * limits[g] + 1024} calls, "
                           "far more than its timestamps")
    size = length.astype(np.int64)
    # the buffer: one slot per symbol holding its terminal, then the rules' expansions, rules
    # of one height in one block (rule order inside), so that a level is written contiguously
    nsym = b.value.size
    by_level = np.lexsort((np.arange(b.nrules), height))
    offset = np.empty(b.nrules, np.int64)
    offset[by_level] = nsym + np.cumsum(size[by_level]) - size[by_level]
    out = np.zeros(nsym + int(size.sum()), np.int32)
    out[:nsym] = np.where(is_rule, 0, b.value)
    for sel in levels:
        _write_level(b, sel, size, offset, out)
    # views of the batch's buffer: it lives while a grammar of the batch is still used
    return [out[offset[s]:offset[s] + size[s]] for s in b.start.tolist()]


def _heights(b: _Batch, is_rule: np.ndarray, grammars: list[Grammar]) -> np.ndarray:
    """Each rule's height: 1 for rules of terminals only, else one more than its tallest child."""
    parent, child = b.rule_of[is_rule], b.child[is_rule]  # symbols in rule order: parents sorted
    head = np.flatnonzero(np.concatenate(([True], parent[1:] != parent[:-1]))) if parent.size else parent
    parents = parent[head]
    height = np.ones(b.nrules, np.int64)
    for _ in range(MAX_DEPTH):
        below = np.ones(b.nrules, np.int64)
        if head.size:
            below[parents] = np.maximum.reduceat(height[child], head) + 1
        changing = below != height
        if not changing.any():
            return height
        height = below
    # heights still growing: a rule reaches itself (or nests absurdly deep)
    g = int(b.owner[np.flatnonzero(changing)[0]])
    raise GrammarError(f"{grammars[g].path}: grammar rules are recursive or nest more than {MAX_DEPTH} deep")


def _write_level(b: _Batch, sel: np.ndarray, size: np.ndarray, offset: np.ndarray, out: np.ndarray) -> None:
    """Write every rule of one height (its symbols `sel`): each symbol is its terminal's slot or
    the already written expansion of its rule, repeated; the level's rules fill one contiguous
    block of `out`."""
    if not sel.size:
        return
    rule, child, reps = b.rule_of[sel], b.child[sel], b.reps[sel]
    from_rule = child >= 0
    source = np.where(from_rule, offset[np.maximum(child, 0)], sel)  # where each symbol's piece is
    length = np.where(from_rule, size[np.maximum(child, 0)], 1)
    piece = reps * length
    begin = np.cumsum(piece) - piece
    total = int(begin[-1] + piece[-1])
    src = np.repeat(source - begin, piece) + np.arange(total)  # right for pieces written once
    again = np.flatnonzero((reps > 1) & (piece > 0))
    if again.size:  # repeated pieces: the position inside the piece, modulo the child's length
        count = piece[again]
        at = np.repeat(begin[again] - (np.cumsum(count) - count), count) + np.arange(int(count.sum()))
        which = np.repeat(again, count)
        src[at] = source[which] + (at - begin[which]) % length[which]
    first = offset[rule[0]]
    out[first:first + total] = out[src]

"""The concise terminal report of a Diagnosis (rich): job header, findings by severity with
evidence, cost and fix, the distinct fixes best first, and a footer of what could not be checked.

Every string from the diagnosis is data (names, exe and hints come from the trace): it reaches
rich as :class:`Text` or escaped markup, through :func:`advisor.formatting.printable`, so it can
neither style the report nor send control sequences to the terminal.

Colour follows rich's rules (NO_COLOR, not a TTY -> plain text); the width follows the
terminal (80 columns when not a TTY, or $COLUMNS).
"""

from __future__ import annotations

import os
import sys
import time
from typing import IO, Any

from rich.console import Console, Group
from rich.markup import escape
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from advisor.formatting import fmt_bytes, fmt_middle, fmt_num, fmt_pct, fmt_secs, printable
from advisor.findings import Diagnosis, Finding
from advisor.fixes import FixSummary, caution, fix_key
from advisor.report.assumed import Assumed, assumed
from advisor.report.layers import layer_lines
from advisor.report.units import evidence_rows

STYLE = {"high": "bold red", "warn": "yellow", "info": "cyan"}
LABEL = {"high": "HIGH", "warn": "WARN", "info": "INFO"}
MAX_FILES = 3


def console(file: IO[str] | None = None) -> Console:
    file = file or sys.stdout
    tty = hasattr(file, "isatty") and file.isatty()
    width = None if tty else int(os.environ.get("COLUMNS", "100") or 100)
    return Console(file=file, width=width, highlight=False, soft_wrap=False,
                   no_color="NO_COLOR" in os.environ or not tty, force_terminal=tty or None,
                   emoji=False)


def print_report(diagnosis: Diagnosis, out: Console | None = None, verbose: bool = False) -> None:
    out = out or console()
    if diagnosis.error:
        out.print(_text(f"{diagnosis.source.get('path', '?')}: error: {diagnosis.error}", "red"))
        return
    out.print(_header(diagnosis))
    findings = diagnosis.sorted_findings()
    if not findings:
        out.print(_text("  No problems found by the rules that could run.", "green"))
    fixes, avoid = diagnosis.fixes(), diagnosis.fixes_not_to_apply()
    numbers = {fix_key(fix.fix): i for i, fix in enumerate(fixes + avoid, 1)}
    values = assumed(findings)
    for finding in findings:
        out.print(_finding(finding, verbose, numbers.get(fix_key(finding.fix)) if finding.fix else None,
                           values.mark(finding)))
    if values.lines:
        out.print(_assumed(values))
    if fixes or avoid:
        out.print(_fixes(fixes, avoid))
    if isinstance(diagnosis.data, dict) and isinstance(diagnosis.data.get("tune"), dict):
        from advisor.report.tune import text

        lines = text(diagnosis.data["tune"], str(diagnosis.source.get("path", "")))
        out.print(Panel(Group(*map(_text, lines)), title="tuned by replay (ioadvisor tune)", title_align="left"))
    footer = _footer(diagnosis, verbose)
    if footer is not None:
        out.print(footer)


def _header(d: Diagnosis) -> Panel:
    job, s = d.job, d.summary
    lines = [f"[bold]{_markup(d.source.get('path', ''))}[/]  ({_markup(d.source.get('format', ''))})",
             _job_line(job)]
    if s:
        layer = f" in {_markup(s['io_layer'])}" if s.get("io_layer") else ""
        io = (f"read {fmt_bytes(s.get('bytes_read'))}  written {fmt_bytes(s.get('bytes_written'))}  "
              f"I/O time {fmt_secs(s.get('io_time_s'))} per process{layer}")
        if s.get("io_share") is not None:
            io += f" ({fmt_pct(s.get('io_share'))} of the run)"
        lines.append(io)
        lines.extend(f"  {_markup(line)}" for line in layer_lines(s.get("layers")))
        lines.extend(f"[dim]note: {_markup(n)}[/]" for n in s.get("counter_notes") or [])
    lines.extend(f"[dim]note: {_markup(n)}[/]" for n in d.source.get("notes") or [])
    counts = {sev: sum(f.severity == sev for f in d.findings) for sev in STYLE}
    title = "  ".join(f"[{STYLE[k]}]{v} {k}[/]" for k, v in counts.items() if v) or "no findings"
    return Panel("\n".join(lines), title="ioadvisor", subtitle=title, expand=True)


def _job_line(job: dict[str, Any]) -> str:
    """What ran: a job's id, ranks, run time and command; a node snapshot's host and time."""
    exe = _markup(_head(printable(job.get("exe") or "-"), 60))
    if not job.get("nprocs") and not job.get("runtime_s"):  # a node snapshot: no job ran
        when = job.get("start_time")
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(when)) if isinstance(when, (int, float)) else ""
        return f"{exe}  {stamp}".rstrip()
    return (f"job {_markup(job.get('jobid') or '-')}  ranks {fmt_num(job.get('nprocs', 0))}  "
            f"run time {fmt_secs(job['runtime_s']) if job.get('runtime_s') else '-'}  exe {exe}")  # 0: not stated


def _finding(f: Finding, verbose: bool, fix_no: int | None = None, assumes: str = "") -> Padding:
    """A finding with its own cost; what its fix measured or is predicted to save is the fix's,
    said once in the fixes block (`fix_no`: the fix's number there); `assumes` marks the assumed
    values it rests on, listed once after the findings."""
    head = Text.assemble((f" {LABEL[f.severity]} ", STYLE[f.severity]), " ", _text(f.code, "bold"), " ",
                         _text(f.title, "bold"))
    if f.cost_s > 0:
        head.append(f"  ~{fmt_secs(f.cost_s)} lost", style="dim")
    parts: list[Any] = [head, Padding(_text(f.message), (0, 0, 0, 7))]
    if f.confidence and (verbose or f.cost_s > 0):  # a finding without a cost states what the input says
        parts.append(Padding(_text(f"confidence {f.confidence['level']}: {f.confidence['reason']}", "dim"),
                             (0, 0, 0, 7)))
    if held := f.held_note():
        parts.append(Padding(_text(held, "dim"), (0, 0, 0, 7)))
    if same := f.same_time_note():
        parts.append(Padding(_text(same, "dim"), (0, 0, 0, 7)))
    if assumes:
        parts.append(Padding(_text(assumes, "dim"), (0, 0, 0, 7)))
    if f.files:
        shown = ", ".join(fmt_middle(printable(p), 70) for p in f.files[:MAX_FILES])
        more = f" and {fmt_num(f.file_count - MAX_FILES)} more" if f.file_count > MAX_FILES else ""
        parts.append(Padding(Text(f"files: {shown}{more}", style="dim"), (0, 0, 0, 7)))
    if f.ranks:
        parts.append(Padding(Text(f"ranks: {_ranks(f.ranks, f.rank_count)}", style="dim"), (0, 0, 0, 7)))
    if verbose and f.evidence:
        rows = evidence_rows(f.evidence, f.evidence_meta)  # verbose: all of it, as the HTML
        ev = "; ".join(f"{label}: {text}" for _, label, text in rows)
        parts.append(Padding(_text(f"evidence: {ev}", "dim"), (0, 0, 0, 7)))
    fix = Text.assemble(("fix: ", "green"), _text(f.recommendation.text))
    if warning := caution(f.verification):
        fix.append(f" ({printable(warning)})", style="bold red")
    parts.append(Padding(fix, (0, 0, 0, 7)))
    for command in f.recommendation.commands[: None if verbose else 2]:
        parts.append(Padding(Text(printable(command, multiline=True), style="bold"), (0, 0, 0, 12)))
    if fix_no is not None and (f.verification or (f.prediction and f.prediction.speedup)):
        tested = " and ".join(w for w, done in (("replayed", f.verification), ("predicted", f.prediction)) if done)
        parts.append(Padding(_text(f"{tested}: fix {fix_no} below", "magenta"), (0, 0, 0, 7)))
    return Padding(Group(*parts), (1, 0, 0, 0))


def _assumed(values: Assumed) -> Padding:
    """The assumed values, once: numbered as the findings' marks name them."""
    table = Table.grid(padding=(0, 1))
    table.add_column(justify="right", min_width=4)
    table.add_column()
    for i, text in enumerate(values.lines, 1):
        table.add_row(f"{i}.", _text(text))
    return Padding(Group(Text("Assumed values (not read from the input or the site config):", style="bold"),
                         table), (1, 0, 0, 0))


def _fixes(fixes: list[FixSummary], avoid: list[FixSummary]) -> Padding:
    """One line per distinct fix, best first: what it is, who proposes it, what it measured; then,
    numbered on, the fixes measured or predicted slower, which are not ranked."""
    parts: list[Any] = []
    if fixes:
        parts += [Text("Fixes, best first:", style="bold"), _fix_table(fixes, 1)]
    if avoid:
        parts += [Text("Do not apply as is (measured or predicted slower):", style="bold red"),
                  _fix_table(avoid, len(fixes) + 1)]
    if not any(fix.measured for fix in fixes + avoid):
        parts.append(Text("  (diagnose --verify --target DIR measures them on a mount)", style="dim"))
    return Padding(Group(*parts), (1, 0, 0, 0))


def _fix_table(fixes: list[FixSummary], first: int) -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(justify="right", min_width=4)
    table.add_column()
    for i, fix in enumerate(fixes, first):
        line = Text.assemble(_text(fix.action, "bold"), " ", _text(f"({', '.join(fix.codes)})", "dim"), " - ",
                             _text(fix.outcome(), _outcome_style(fix)))
        table.add_row(f"{i}.", line)
    return table


def _outcome_style(fix: FixSummary) -> str:
    if fix.avoid:
        return "bold red"
    return "green" if fix.verdict == "improved" else "magenta"


def _footer(d: Diagnosis, verbose: bool) -> Padding | None:
    if not d.not_checked:
        return None
    by_reason: dict[str, list[str]] = {}
    for item in d.not_checked:
        by_reason.setdefault(item.reason, []).append(item.check.split()[0])
    lines = [Text(f"Not checked ({len(d.not_checked)}):", style="bold dim")]
    for reason, checks in by_reason.items():
        shown = ", ".join(checks if verbose else checks[:6]) + ("" if verbose or len(checks) <= 6 else ", ...")
        lines.append(Padding(_text(f"{shown}: {reason}", "dim"), (0, 0, 0, 2)))  # wrapped lines keep the indent
    return Padding(Group(*lines), (1, 0, 0, 0))


def _text(text: Any, style: str = "") -> Text:
    """Data as rich text: never markup, control characters escaped."""
    return Text(printable(text), style=style)


def _markup(text: Any) -> str:
    """Data inside a markup string: brackets escaped, control characters too."""
    return escape(printable(text))


def _ranks(ranks: list[int], total: int) -> str:
    return ", ".join(map(str, ranks[:8])) + (f" and {fmt_num(total - 8)} more" if total > 8 else "")


def _head(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."

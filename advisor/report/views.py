"""What the HTML template shows, computed from a Diagnosis (plain strings and numbers).

The template only lays out; every number is formatted and every list cut to a
readable length here, so the template stays free of logic (and of trace data
handling: it autoescapes whatever these views hold).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from pathlib import PurePath

from markupsafe import escape

from advisor.findings import Diagnosis, Finding, Prediction
from advisor.verification import Verification
from replay.stats import Z95
from advisor.fixes import FixSummary, caution, fix_key, predicted_text
from advisor.formatting import fmt_kind, fmt_speedup_range, printable
from advisor.report.assumed import assumed
from advisor.report.layers import file_table, layer_lines, layer_plot
from advisor.report.plots import Plot, verification_plot
from advisor.ingest.ior.view import ior_tables
from advisor.report.units import evidence_rows, fmt_bytes, fmt_num, fmt_pct, fmt_secs

MAX_FILES = 20
_URL = re.compile(r"https?://[^\s<>\"'`]+")


def job_view(d: Diagnosis, index: int) -> dict:
    """Header, summary rows, finding cards and plots of one diagnosed input."""
    runtime = _float(d.job.get("runtime_s"))
    job_id = f"job{index}"
    fixes = d.fixes() + d.fixes_not_to_apply()  # numbered on: the slower ones are not ranked
    numbered = {fix_key(s.fix): (i, s) for i, s in enumerate(fixes, 1)}
    values = assumed(d.sorted_findings())  # listed once, each finding marked
    findings = [{**finding_view(f, i + 1, runtime, job_id, numbered), "assumes": values.mark(f)}
                for i, f in enumerate(d.sorted_findings())]
    plots, tables, problems = figure_views(d.figures) if isinstance(d.figures, dict) else ([], [], [])
    layers = layer_views((d.summary or {}).get("layers"), problems)
    plots[:0], tables[:0] = layers
    tables += result_tables(d.data)
    flag_rows(tables, d.findings)
    lost = max((f["cost_s"] for f in findings), default=0.0)  # findings overlap: their costs do not add up
    fix_rows = fixes_view(fixes, findings, d.sorted_findings(), job_id)
    return {
        "id": f"job{index}",
        "name": _job_name(d),
        "exe": str(d.job.get("exe") or ""),
        "facts": _header_facts(d, runtime),
        "expectation": _model_text(d.summary["model"]) if isinstance((d.summary or {}).get("model"), dict)
        and d.summary["model"].get("model") else "",
        "error": d.error,
        "findings": findings,
        "assumed": values.lines,
        "fixes": [r for r in fix_rows if not r["avoid"]],
        "avoid": [r for r in fix_rows if r["avoid"]],
        "counts": {s: sum(f["severity"] == s for f in findings) for s in ("high", "warn", "info")},
        "lost": fmt_secs(lost) if lost else "",
        "lost_share": fmt_pct(lost / runtime) if lost and runtime else "",
        "lost_held": max(d.findings, key=lambda f: _float(f.cost_s)).held_note() if lost else "",
        "not_checked": [(str(n.check), str(n.reason)) for n in d.not_checked],
        "notes": [str(n) for n in d.source.get("notes", []) or []],
        "plots": plots,
        "tables": tables,
        "plot_problems": problems,
        "tune": tune_view(d.data),
    }


def tune_view(data: dict | None) -> dict | None:
    """The tune section of a diagnosis that holds a tune result (``data["tune"]``), else None."""
    if not isinstance(data, dict) or not isinstance(data.get("tune"), dict):
        return None
    from advisor.report.tune import context

    return context({"input": "", "tune": data["tune"]})["section"]


def _job_name(d: Diagnosis) -> str:
    jobid = str(d.job.get("jobid") or "")
    base = PurePath(str(d.source.get("path", ""))).name
    return f"job {jobid} ({base})" if jobid else base or "input"


def _float(value) -> float:
    try:
        return float(value or 0.0)
    except (TypeError, ValueError):
        return 0.0


def _header_facts(d: Diagnosis, runtime: float) -> list[tuple[str, str]]:
    job, summary, source = d.job, d.summary or {}, d.source
    facts = [("processes", fmt_num(_float(job.get("nprocs"))))] if _float(job.get("nprocs")) > 0 else []
    if job.get("user"):
        facts.append(("user", str(job["user"])))
    if runtime > 0:  # snapshots and campaigns have no run time
        facts.append(("run time", fmt_secs(runtime) + _period(job)))
    if "bytes_read" in summary or "bytes_written" in summary:
        facts.append(("bytes moved", f"{fmt_bytes(_float(summary.get('bytes_read')))} read, "
                                     f"{fmt_bytes(_float(summary.get('bytes_written')))} written"))
    if "io_time_s" in summary:
        share = f" ({fmt_pct(_float(summary['io_share']))} of run time)" if "io_share" in summary else ""
        layer = f" in {summary['io_layer']}" if summary.get("io_layer") else ""
        facts.append(("time in I/O", fmt_secs(_float(summary["io_time_s"])) + f" per process{layer}" + share))
    facts += [("I/O time by layer", line) for line in layer_lines(summary.get("layers"))]
    for note in summary.get("counter_notes") or []:
        facts.append(("counters not believed", str(note)))
    for key, label in (("files_accessed", "files"), ("interfaces", "interfaces"), ("modules", "modules")):
        if summary.get(key) not in (None, "", []):
            facts.append((label, fmt_kind("count" if key == "files_accessed" else "enum", summary[key])))
    fmt = " ".join(str(source.get(k) or "") for k in ("format", "parser")).strip()
    if source.get("log_version"):
        fmt += f", log format {source['log_version']}"
    facts.append(("input", f"{source.get('path', '')} ({fmt})"))
    tool = d.tool or {}
    if tool.get("version"):
        facts.append(("diagnosed by", f"ioadvisor {tool['version']}, {tool.get('rules', '?')} rules"))
    return facts


def _model_text(model: dict) -> str:
    """What a learned model of the file system expects of the job, as a sentence: 'This job's
    pattern usually reaches 833-1,521 MiB/s on this file system; it reached 1,555 MiB/s, above
    that range.' The model itself follows in brackets."""
    measured, expected = model.get("measured_mib_s"), model.get("expected_mib_s")
    band = model.get("expected_interval_mib_s")
    band = band if isinstance(band, list) and len(band) == 2 and all(isinstance(b, (int, float)) for b in band) \
        else None
    if isinstance(measured, (int, float)) and isinstance(expected, (int, float)):
        usual = f"{_mib(band[0])}-{_mib(band[1])} MiB/s" if band else f"about {_mib(expected)} MiB/s"
        text = f"This job's pattern usually reaches {usual} on this file system; it reached {_mib(measured)} MiB/s"
        if band and measured > band[1]:
            text += ", above that range (faster than the model's runs of this pattern)."
        elif band and measured < band[0]:
            text += ", below that range: slower than this file system usually runs this pattern."
        else:
            text += ", within that range." if band else "."
    else:
        text = f"The model could not judge this job: {model.get('expectation') or 'no expectation'}."
    text += f" (Model: {str(model.get('model', '?')).split(';')[0]}.)"
    return text + "".join(f" {w}." for w in model.get("warnings") or [])


def _mib(x: float) -> str:
    """MiB/s as a whole number with separators ('1,521'), one decimal below 10."""
    return f"{x:,.0f}" if abs(x) >= 10 else f"{x:.1f}"


def _period(job: dict) -> str:
    start, end = job.get("start_time"), job.get("end_time")
    if not isinstance(start, (int, float)) or not isinstance(end, (int, float)):
        return ""
    try:
        a = _dt.datetime.fromtimestamp(start, _dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
        b = _dt.datetime.fromtimestamp(end, _dt.UTC).strftime("%H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return ""
    return f", {a} to {b}"


def finding_view(f: Finding, rank: int, runtime: float, job_id: str,
                 numbered: dict[str, tuple[int, FixSummary]] | None = None) -> dict:
    """A finding's row and card: its own cost and evidence; what its fix measured or is predicted
    to save is the fix's, shown once in the fixes section (`fix_ref` links there)."""
    cost = _float(f.cost_s)
    files = [str(p) for p in f.files]
    number, fix = (numbered or {}).get(fix_key(f.fix), (None, None)) if f.fix else (None, None)
    return {
        "id": f"{job_id}-f{rank}",
        "rank": rank,
        "code": str(f.code),
        "severity": f.severity if f.severity in ("high", "warn", "info") else "info",
        "category": str(f.category),
        "title": str(f.title),
        "message": str(f.message),
        "cost_s": cost,
        "cost": fmt_secs(cost) if cost else "",
        "cost_share": fmt_pct(cost / runtime) if cost and runtime else "",
        "confidence": f"{f.confidence['level']}: {f.confidence['reason']}" if f.confidence else "",
        "same_time": f.same_time_note(),
        "evidence": evidence_rows(f.evidence, f.evidence_meta),  # (JSON key, label, value)
        "files": files[:MAX_FILES],
        "more_files": max(0, f.file_count - MAX_FILES),
        "more_files_text": fmt_num(max(0, f.file_count - MAX_FILES)),
        "ranks": rank_ranges(f.ranks, total=f.rank_count),
        "fix_text": str(f.recommendation.text),
        "fix_short": first_sentence(str(f.recommendation.text)),
        # escaped here with their lines kept (a heredoc): the page escapes a newline in any other value
        "commands": [escape(printable(c, multiline=True)) for c in f.recommendation.commands],
        "fix": json.dumps(f.fix, sort_keys=True) if f.fix else "",
        "caution": caution(f.verification),
        "fix_ref": _fix_ref(job_id, number, fix) if fix and (fix.verdict or fix.predicted_speedup) else None,
        "references": [reference(r) for r in f.references],
    }


def _fix_ref(job_id: str, number: int, fix: FixSummary) -> dict:
    """Where a finding's fix was measured and predicted: the fix's number, anchor and verdict."""
    tested = " and ".join(w for w, done in (("replayed", fix.verdict), ("predicted", fix.predicted_speedup))
                          if done)
    return {"rank": number, "href": f"#{job_id}-fix{number}", "action": str(fix.action),
            "verdict": str(fix.verdict or ""), "tested": tested}


def fixes_view(fixes: list[FixSummary], cards: list[dict], findings: list[Finding], job_id: str) -> list[dict]:
    """Rows of the 'Fixes, best first' table (and of 'Do not apply as is': `avoid`), each with what its
    replay measured and what a model predicted (once per fix, whatever the number of findings
    proposing it); each code links to its finding's card."""
    card = {}
    for f in cards:
        card.setdefault(f["code"], f["id"])
    proposing: dict[str, list[Finding]] = {}
    for f in findings:
        if f.fix:
            proposing.setdefault(fix_key(f.fix), []).append(f)
    rows = []
    for i, s in enumerate(fixes, 1):
        who = proposing.get(fix_key(s.fix), [])
        v = next((f.verification for f in who if f.verification), None)
        p = next((f.prediction for f in who if f.prediction), None)
        fid = f"{job_id}-fix{i}"
        rows.append({
            "rank": i,
            "id": fid,
            "action": str(s.action),
            "codes": [(str(code), card.get(code, "")) for code in s.codes],
            "verdict": str(s.verdict or ""),
            "slower": s.slower,
            "avoid": s.avoid,
            "outcome": s.outcome(),
            "cost": fmt_secs(s.cost_s) if s.cost_s else "",
            "verification": verification_view(v, fid) if v else None,
            "prediction": _prediction(p),
            "predicted": _predicted_speedup(p),
        })
    return rows


def first_sentence(text: str, most: int = 160) -> str:
    """The first sentence of `text` (a summary cell), cut at `most` characters."""
    text = " ".join(text.split())
    match = re.search(r"(?<=[.!?])\s", text)
    sentence = text[: match.start()] if match else text
    return sentence if len(sentence) <= most else sentence[: most - 1] + "\u2026"


def rank_ranges(ranks: list[int], most: int = 16, total: int = 0) -> str:
    """[0, 1, 2, 3, 7] -> '0-3, 7' (at most `most` ranges, then a count; `total` when `ranks` lists
    only the first of them)."""
    values = sorted({int(r) for r in ranks})
    spans: list[list[int]] = []
    for r in values:
        if spans and r == spans[-1][1] + 1:
            spans[-1][1] = r
        else:
            spans.append([r, r])
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans[:most])
    if len(spans) > most or total > len(values):
        text += f", ... ({fmt_num(max(total, len(values)))} ranks)"
    return text


def reference(text: str) -> dict:
    """A reference as text plus a link when it contains an http(s) URL (never other schemes)."""
    text = str(text)
    match = _URL.search(text)
    return {"text": text, "href": match.group(0).rstrip(".,;)") if match else ""}


def verification_view(v: Verification, fid: str) -> dict:
    doc = v.to_dict()
    plot = verification_plot(doc, f"{fid}-verify") if _has_timings(doc) else None
    details = []
    for key, label in (("pairs", "pairs (rounds)"), ("np", "processes"), ("scale", "scale"),
                       ("fstype", "file system"), ("target", "target"), ("cache_policy", "cache policy"),
                       ("stop_reason", "stopped on")):
        if doc.get(key) not in (None, ""):
            details.append((label, str(doc[key])))
    if v.reproducibility_source:
        details.append(("run-to-run reproducibility", f"+-{math.expm1(Z95 * v.reproducibility):.0%} at 95 %, "
                                                      f"from {v.reproducibility_source}"))
    for side, label in (("baseline", "as recorded"), ("fixed", "with the fix")):
        if isinstance(doc.get(side), dict):
            s = doc[side]
            spread = f", run-to-run spread +-{s['spread']:.0%}" if isinstance(s.get("spread"), float) else ""
            details.append((label, f"{s['passes']} passes per sample{spread}"))
    return {"verdict": v.verdict, "reason": v.reason or v.verdict, "detail": v.detail, "details": details,
            "plot": plot}


def _has_timings(v: dict) -> bool:
    return all(isinstance(v.get(k), dict) and isinstance(v[k].get("median_s"), (int, float))
               for k in ("baseline", "fixed"))


def _predicted_speedup(p: Prediction | None) -> str:
    """A model's predicted speedup of the fix ('1.80x (1.20x-2.70x)'), when it gives one."""
    if p is None or not isinstance(p.speedup, (int, float)):
        return ""
    return predicted_text(p.speedup, p.interval) + (", extrapolated" if p.extrapolated else "")


def _prediction(p: Prediction | None) -> list[tuple[str, str]]:
    """A model's prediction of a fix, field by field (in the fix's section: the time saved is the fix's)."""
    if p is None:
        return []
    rows = []
    for label, kind, value in p.shown():
        if label == "interval" and isinstance(value, list):
            rows.append((label, fmt_speedup_range(value) or fmt_kind(kind, value)))
        else:
            rows.append((label, fmt_kind(kind, value)))
    return rows


def _plot_builders() -> list[tuple[str, object]]:
    from advisor.report import plots
    from advisor.report.surface import surface_plots
    from advisor.report.timeline import timeline_plot

    return [("io_time", plots.io_time_plot), ("access_sizes", plots.access_size_plots),
            ("ranks", plots.rank_plot), ("timeline", timeline_plot), ("osts", plots.ost_plot),
            ("top_files", plots.top_files_plot), ("campaign", plots.campaign_plots),
            ("surface", surface_plots)]


def figure_views(figures: dict) -> tuple[list[Plot], list[dict], list[str]]:
    """Plots and tables of the figure data present; a malformed section becomes a note, not a crash.

    Figure data may come from a saved (possibly hand-edited or hostile) JSON file.
    """
    plots, problems = [], []
    for key, build in _plot_builders():
        if not figures.get(key):
            continue
        try:
            made = build(figures[key])
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, ZeroDivisionError) as exc:
            problems.append(f"{key}: not drawn, malformed figure data ({type(exc).__name__})")
            continue
        plots.extend(made if isinstance(made, list) else [made])
    tables = []
    if figures.get("snapshot"):
        try:
            tables = config_tables(figures["snapshot"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            problems.append(f"snapshot: not shown, malformed figure data ({type(exc).__name__})")
    return plots, tables, problems


def layer_views(section, problems: list[str]) -> tuple[list[Plot], list[dict]]:
    """The picture of where the I/O time went, layer by layer, and the per-file layer table
    (a malformed saved section becomes a note)."""
    if not isinstance(section, dict):
        return [], []
    try:
        plot = layer_plot(section)
        title, columns, rows = file_table(section)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        problems.append(f"layers: not drawn, malformed summary data ({type(exc).__name__})")
        return [], []
    table = {**_given_table({"title": title, "columns": columns, "rows": rows}),
             "results": "Each listed file's time per process in each layer and its time above the layer below."}
    return ([plot] if plot else []), ([table] if rows else [])


def result_tables(data: dict) -> list[dict]:
    """An IOR run's tests (max/mean/min MiB/s per operation) from the diagnosis's typed data."""
    if not isinstance(data, dict) or not isinstance(data.get("ior"), dict):
        return []
    try:
        return [{**_given_table({"title": title, "columns": columns, "rows": rows}),
                 "results": "One row per test and operation: the maximum, mean and minimum bandwidth over "
                            "its repetitions, as IOR printed them (or computed from its result rows)."}
                for title, columns, rows in ior_tables(data["ior"])]
    except (KeyError, TypeError, AttributeError):  # a hand-edited saved file: the page goes on without it
        return []


def config_tables(snapshot: dict) -> list[dict]:
    """Configuration tables of a node snapshot, flagged values marked.

    Accepts ``{"tables": [{"title", "columns", "rows", "flagged": [row index]}]}``; any
    other mapping is shown as one key/value table per section.
    """
    if isinstance(snapshot.get("tables"), list):
        return [_given_table(t) for t in snapshot["tables"] if isinstance(t, dict)]
    tables = []
    flat = {k: v for k, v in snapshot.items() if not isinstance(v, dict)}
    if flat:
        tables.append(_kv_table("settings", flat))
    tables += [_kv_table(str(k), v) for k, v in snapshot.items() if isinstance(v, dict)]
    return tables


def _given_table(t: dict) -> dict:
    flagged = {int(i) for i in t.get("flagged", []) if isinstance(i, int)}
    rows = [{"cells": [_cell(c) for c in row] if isinstance(row, list) else [_cell(row)], "flagged": i in flagged,
             "codes": []} for i, row in enumerate(t.get("rows", []))]
    return {"title": str(t.get("title", "configuration")), "columns": [str(c) for c in t.get("columns", [])],
            "rows": rows, "results": ""}  # results: what a table of results (not settings) holds


def _kv_table(title: str, mapping: dict) -> dict:
    rows = []
    for key, value in mapping.items():
        flagged = isinstance(value, dict) and bool(value.get("flagged") or value.get("flag"))
        if isinstance(value, dict) and "value" in value:
            note = value.get("note") or value.get("reason") or value.get("recommended") or ""
            cells = [str(key), _cell(value["value"]), _cell(note)]
        else:
            cells = [str(key), _cell(value), ""]
        rows.append({"cells": cells, "flagged": flagged, "codes": []})
    return {"title": title, "columns": ["setting", "value", "note"], "rows": rows, "results": ""}


def _cell(value) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)[:400]
    return str(value)


def flag_rows(tables: list[dict], findings: list[Finding]) -> None:
    """Flag the table rows whose object (first cell: a device, a parameter) a finding's evidence names."""
    cited: dict[str, list[str]] = {}
    for f in findings:
        for value in f.evidence.values():
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, str) and item:
                    cited.setdefault(item, []).append(str(f.code))
    for table in tables:
        for row in table["rows"]:
            codes = cited.get(row["cells"][0], []) if row["cells"] else []
            if codes:
                row["flagged"], row["codes"] = True, sorted(set(codes))

"""The machine view: one self-contained HTML page over a fleet dataset, plus per-job pages.

It follows the per-job report's rules and reuses its parts: the same Jinja2
environment (autoescape on every value), stylesheet and script (hashed into the
same Content-Security-Policy: nothing is loaded from anywhere), and the same page
for each linked job (:func:`advisor.report.html.write_html`).
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

from advisor.fileio import write_atomic
from advisor.findings import Diagnosis
from advisor.fleet.aggregate import FleetSummary, summarise
from advisor.fleet.charts import fmt_hours, ranking_chart, weekly_chart
from advisor.fleet.expect import Expectations, expected_bandwidth
from advisor.fleet.store import FleetStore
from advisor.report.units import fmt_bytes


def write_fleet_html(dataset: str | Path, html_path: str | Path, top: int = 20, below: float = 4.0) -> int:
    """Write the machine view to `html_path` and the worst jobs' reports beside it; returns how many."""
    html_path = Path(html_path)
    summary = summarise(dataset, top)
    expectations = expected_bandwidth(dataset, below=below)
    jobs_dir = html_path.parent / (html_path.stem + ".jobs")
    wanted = {(w.path, w.content_hash) for w in summary.worst}
    wanted |= {(s.path, s.content_hash) for s in expectations.slow[:top]}
    links = _write_job_pages(FleetStore(dataset, create=False), wanted, jobs_dir)
    page = render_fleet(summary, expectations, links, str(dataset), top)
    write_atomic(html_path, page)  # readers never see half a page
    return len(set(links.values()))


def render_fleet(summary: FleetSummary, expectations: Expectations, links: dict[str, str],
                 dataset: str, top: int, generated: _dt.datetime | None = None) -> str:
    """The page; `links` maps a content hash to its per-job page (a relative URL)."""
    from advisor.report.html import render_page

    plots = [ranking_chart("by-category", "Core-hours lost by problem category", summary.categories, "categories"),
             ranking_chart("by-app", "Core-hours lost by application", summary.apps, "applications"),
             ranking_chart("by-user", "Core-hours lost by user", summary.users, "users")]
    return render_page(
        "fleet.html.j2", generated, title=f"ioadvisor fleet: {Path(dataset).name}",
        dataset=dataset, top=top, headline=_headline(summary), plots=plots,
        weekly=(weekly_chart("weekly", summary.weeks, summary.weekly, summary.weeks_left_out)
                if summary.weeks else None),
        mounts=[[m.name, fmt_hours(m.hours), str(m.jobs), str(m.findings)] for m in summary.mounts],
        worst=[_worst_row(w, links) for w in summary.worst],
        slow=_slow_view(expectations, links, top),
        errors=[[reason, str(n)] for reason, n in summary.error_reasons])


def _headline(s: FleetSummary) -> list[tuple[str, str]]:
    return [("jobs analysed", f"{s.jobs:,}"), ("not readable", f"{s.errors:,}"),
            ("jobs with findings", f"{s.with_findings:,}"),
            ("core-hours lost (estimated)", fmt_hours(s.hours_lost)),
            ("I/O core-hours recorded", fmt_hours(s.io_hours)),
            ("data moved", fmt_bytes(s.bytes_moved)),
            ("jobs started", f"{s.first} to {s.last}" if s.first else "unknown")]


def _worst_row(w, links: dict[str, str]) -> dict:
    return {"job": w.jobid or Path(w.path).name, "href": links.get(w.content_hash, ""), "user": w.user,
            "app": w.app, "start": w.start, "nprocs": f"{w.nprocs:,}", "hours": fmt_hours(w.hours),
            "hours_v": f"{w.hours:.6g}", "codes": ", ".join(w.codes[:6]), "path": w.path}


def _slow_view(e: Expectations, links: dict[str, str], top: int) -> dict:
    rows = [{"job": s.jobid or Path(s.path).name, "href": links.get(s.content_hash, ""), "user": s.user,
             "app": s.app, "start": s.start, "nprocs": f"{s.nprocs:,}",
             "observed": f"{s.observed_mib_s:,.1f}", "expected": f"{s.expected_mib_s:,.1f}",
             "factor": f"{s.factor:.1f}", "lost": f"{s.lost_s:.3g}", "path": s.path} for s in e.slow[:top]]
    note = e.reason or (f"A model trained on {e.jobs_used:,} jobs of this dataset predicts each job's bandwidth "
                        f"from its counters (never from a model that saw that job); its predictions miss by "
                        f"a factor of {e.median_factor:.2f} typically. {len(e.slow):,} jobs ran at least "
                        f"{e.below:g}x below that.")
    return {"note": note, "rows": rows}


def _write_job_pages(store: FleetStore, wanted: set[tuple[str, str]], folder: Path) -> dict[str, str]:
    """Per-job report pages (by content hash) for `wanted` (path, hash) pairs."""
    from advisor.report.html import write_html

    links: dict[str, str] = {}
    if not wanted:
        return links
    folder.mkdir(parents=True, exist_ok=True)
    for batch in store.scan_jobs(["path", "content_hash", "diagnosis"]):
        cols = batch.to_pydict()
        for path, digest, doc in zip(cols["path"], cols["content_hash"], cols["diagnosis"]):
            if (path, digest) not in wanted or digest in links or not doc:
                continue
            diagnosis = Diagnosis.from_dict(json.loads(doc))  # with the figures the worker drew
            write_html(folder / f"{digest}.html", [diagnosis])
            links[digest] = f"{folder.name}/{digest}.html"
    return links

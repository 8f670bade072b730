"""The self-contained HTML report: one file, inline CSS, SVG and a little JavaScript.

Everything from a trace (file names, exe and arguments, hints, host names) is
attacker-controlled: the Jinja2 environment autoescapes every value, plots escape
their own text (:mod:`advisor.report.svg`), and the page's Content-Security-Policy
allows only the inline style and script whose SHA-256 hashes it names, so nothing
is loaded from the network or the disk and injected markup could not run.
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from advisor.fileio import write_atomic
from advisor import __version__
from advisor.formatting import printable
from advisor.findings import Diagnosis
from advisor.report import tune
from advisor.report.views import job_view


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("advisor._reports", "templates"),
        autoescape=True,  # every template, whatever its file name
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_shown,
    )
    return env


def _shown(value: Any) -> Any:
    """Every value a template prints, before autoescape: control characters, bidi overrides
    and the like made visible (autoescape handles markup, not those). Markup (our assets and
    plots, escaped where they were built) is left as it is."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return printable(value)
    return value


@lru_cache(maxsize=4)
def _asset(name: str) -> Markup:
    """One of our own assets, inserted verbatim (it is hashed into the CSP; it holds no trace data)."""
    text = resources.files("advisor._reports").joinpath("assets", name).read_text(encoding="utf-8")
    if "</" in text:  # would end the <style>/<script> element early
        raise ValueError(f"asset {name} must not contain '</'")
    return Markup(text)


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def content_security_policy(css: str, js: str) -> str:
    """A policy that forbids every load and allows only the page's own style and script."""
    return ("default-src 'none'; "
            f"style-src '{_sha256(css)}'; script-src '{_sha256(js)}'; "
            "img-src 'none'; font-src 'none'; connect-src 'none'; media-src 'none'; object-src 'none'; "
            "frame-src 'none'; worker-src 'none'; manifest-src 'none'; base-uri 'none'; form-action 'none'")


def render_page(template: str, generated: _dt.datetime | None = None, **context: Any) -> str:
    """A self-contained page from `template`: our stylesheet and script inline, a policy that
    allows only them, the version and the time (UTC) it was generated."""
    css, js = _asset("report.css"), _asset("report.js")
    generated = generated or _dt.datetime.now(_dt.UTC)
    return _environment().get_template(template).render(
        css=css, js=js, csp=content_security_policy(css, js),
        version=__version__, generated=generated.strftime("%Y-%m-%d %H:%M UTC"), **context)


def render_html(diagnoses: list[Diagnosis], *, generated: _dt.datetime | None = None) -> str:
    """The report page for one or more diagnoses (one section per job, in the given order)."""
    jobs = [job_view(d, i) for i, d in enumerate(diagnoses)]
    return render_page("report.html.j2", generated, jobs=jobs, title=_page_title(jobs))


def _page_title(jobs: list[dict]) -> str:
    if len(jobs) == 1:
        return f"ioadvisor report: {jobs[0]['name']}"
    return f"ioadvisor report: {len(jobs)} inputs"


def write_html(path: str | Path, diagnoses: list[Diagnosis]) -> None:
    """Write the report atomically: a reader never sees a half-written page."""
    write_atomic(path, render_html(diagnoses))


def write_tune_html(path: str | Path, doc: dict[str, Any]) -> None:
    """The page of one tune result (``ioadvisor tune --html``)."""
    title = f"ioadvisor tune: {Path(doc['input']).name}"
    write_atomic(path, render_page("tune.html.j2", title=title, **tune.context(doc)))

"""`ioadvisor report RESULT.json [--html FILE] [--text]`: re-render a saved diagnosis.

RESULT.json is what `ioadvisor diagnose --json` wrote: one ``ioadvisor/diagnosis/v1``
document, or a list of them. Its figure data re-renders the plots without the log.
A file that is not JSON, or not that schema, is one error line (exit status 2).
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from pathlib import Path

import click

from advisor.errors import InputError
from advisor.findings import SCHEMA_ID, Diagnosis

MAX_BYTES = 512 * 1024 * 1024  # a saved diagnosis is kilobytes; refuse to slurp anything huge


@lru_cache(maxsize=1)
def _validator():
    import jsonschema

    schema = json.loads(resources.files("advisor").joinpath("schemas/diagnosis-v1.json").read_text())
    return jsonschema.Draft202012Validator(schema)


def load_diagnoses(path: str | Path) -> list[Diagnosis]:
    """The diagnoses saved in `path`; InputError (one line) when it is not a saved diagnosis."""
    name = str(path)
    path = Path(path)
    try:
        if path.is_dir():
            raise InputError(name, "is a directory, not a saved diagnosis (ioadvisor diagnose --json)")
        if path.stat().st_size > MAX_BYTES:
            raise InputError(name, f"too large for a saved diagnosis ({path.stat().st_size} bytes)")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(name, "no such file") from None
    except UnicodeDecodeError:
        raise InputError(name, "not a saved diagnosis (not UTF-8 text)") from None
    except OSError as exc:
        raise InputError(name, f"cannot read: {exc.strerror or exc}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(name, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise InputError(name, "not valid JSON (nested too deeply)") from None
    docs = doc if isinstance(doc, list) else [doc]
    if not docs:
        raise InputError(name, "holds no diagnosis (an empty list)")
    return [_diagnosis(name, d, i if len(docs) > 1 else None) for i, d in enumerate(docs)]


def _diagnosis(name: str, doc, index: int | None) -> Diagnosis:
    where = f" (item {index})" if index is not None else ""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA_ID:
        found = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise InputError(name, f"not an {SCHEMA_ID} document{where} (schema: {str(found)[:60]!r})")
    error = next(iter(sorted(_validator().iter_errors(doc), key=lambda e: list(e.path))), None)
    if error is not None:
        at = "/".join(str(p) for p in error.absolute_path) or "top level"
        raise InputError(name, f"invalid {SCHEMA_ID} document{where} at {at}: {_short(error.message)}")
    try:
        return Diagnosis.from_dict(doc)
    except (TypeError, KeyError, ValueError) as exc:
        raise InputError(name, f"invalid {SCHEMA_ID} document{where}: {_short(str(exc))}") from None


def _short(text: str, most: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= most else text[: most - 3] + "..."


@click.command(name="report")
@click.argument("result", type=click.Path(dir_okay=True, path_type=str))
@click.option("--html", "html_out", metavar="FILE", default=None, help="Write the self-contained HTML report.")
@click.option("--text", "text_out", is_flag=True, help="Print the terminal report (the default without --html).")
@click.option("-v", "--verbose", is_flag=True, help="Terminal report: evidence, all commands, every unchecked rule.")
def command(result, html_out, text_out, verbose):
    """Re-render a saved diagnosis (JSON) as HTML or terminal text."""
    diagnoses = load_diagnoses(result)
    if html_out:
        from advisor.report.html import write_html

        try:
            write_html(Path(html_out), diagnoses)
        except OSError as exc:
            raise InputError(html_out, f"cannot write: {exc.strerror or exc}") from None
    if text_out or not html_out:
        from advisor.report.terminal import console, print_report

        out = console()
        for diagnosis in diagnoses:
            print_report(diagnosis, out, verbose=verbose)

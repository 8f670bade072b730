"""`ioadvisor rules`: the rule catalogue; `ioadvisor rules [explain] CODE`: one rule in full."""

from __future__ import annotations

import re
from pathlib import Path

import click
from rich.markdown import Markdown
from rich.table import Table
from rich.text import Text

from advisor.engine.expr import Node, unparse
from advisor.engine.render import outline
from advisor.errors import ConfigError, InputError


class _RulesGroup(click.Group):
    """`ioadvisor rules CODE` is short for `ioadvisor rules explain CODE` (as `ruff rule CODE`)."""

    def resolve_command(self, ctx, args):
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            return "explain", self.commands["explain"], args
        return super().resolve_command(ctx, args)


@click.group(name="rules", cls=_RulesGroup, invoke_without_command=True)
@click.option("--category", default=None, help="Only rules of this category.")
@click.option("--write-docs", "docs_path", type=click.Path(dir_okay=False), hidden=True,
              help="Regenerate the catalogue part of this Markdown file (docs/rules.md).")
@click.pass_context
def command(ctx, category, docs_path):
    """List the rule catalogue, or explain one rule: `ioadvisor rules CODE`."""
    if ctx.invoked_subcommand is not None:
        return
    from advisor.engine.rules import load_catalogue
    from advisor.report.terminal import STYLE, console

    rules = sorted(load_catalogue().rules, key=lambda r: r.code)
    if docs_path:
        from advisor.fileio import write_atomic

        try:
            current = Path(docs_path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(docs_path, f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
        write_atomic(docs_path, docs_page(current, rules))
        return
    if category:
        rules = [r for r in rules if r.category == category]
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("code", "name", "category", "severity", "title"):
        table.add_column(column)
    for rule in rules:
        table.add_row(rule.code, rule.name, rule.category, Text(rule.severity, style=STYLE[rule.severity]),
                      rule.title)
    out = console()
    out.print(table)
    out.print(Text(f"{len(rules)} rules. `ioadvisor rules CODE` explains one.", style="dim"))


@command.command(name="explain")
@click.argument("code")
def explain(code):
    """What rule CODE checks, why it matters, how to fix it, with an example."""
    from advisor.engine.rules import load_catalogue
    from advisor.report.terminal import console

    rule = load_catalogue().get(code)
    if rule is None:
        raise ConfigError(f"no rule {code!r} (see `ioadvisor rules`)")
    console().print(Markdown(markdown(rule)))


DOCS_MARKER = "<!-- generated below by `ioadvisor rules --write-docs docs/rules.md`: do not edit -->"


def docs_page(current: str, rules) -> str:
    """`current` (docs/rules.md) with everything below DOCS_MARKER rebuilt from `rules`: an index
    table, then every rule's page (what `ioadvisor rules CODE` prints)."""
    if DOCS_MARKER not in current:
        raise ConfigError(f"the docs page has no marker line {DOCS_MARKER!r}")
    index = ["| code | name | reads | category | severity up to |", "|---|---|---|---|---|"]
    index += [f"| [{r.code}](#{_anchor(_heading(r))}) | {r.name} | {', '.join(r.inputs)} | {r.category} "
              f"| {r.severity} |" for r in rules]
    pages = "\n\n".join(markdown(r) for r in rules)
    from advisor.engine.worked_examples import severity_section

    return (f"{current.split(DOCS_MARKER)[0]}{DOCS_MARKER}\n\n{severity_section()}\n## Rules\n\n"
            + "\n".join(index) + f"\n\n{pages}")


def _heading(rule) -> str:
    return f"{rule.code} {rule.name}: {rule.title}"


def _anchor(heading: str) -> str:
    """The id GitHub's Markdown gives a heading (lower case, punctuation dropped, spaces to '-')."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _severity_note(rule) -> str:
    if rule.cost is None or not rule.cost_sets_severity:
        return "(declared: the rule estimates no cost)"
    rests = {"timing": "timings, weighed against the job's timing noise",
             "counts": "counts, certain however short the run"}[rule.evidence_kind]
    return f"(lowered by the cost's share of the run; the cost rests on {rests})"


def _pools(rule) -> str:
    """' (the same seconds as IO003, MPI002 when they fire: time pool small_writes)', or ''."""
    if not rule.time_pools:
        return ""
    from advisor.engine.rules import load_catalogue

    sharing = sorted(r.code for r in load_catalogue().rules
                     if r.code != rule.code and set(r.time_pools) & set(rule.time_pools))
    return (f" (the same seconds as {', '.join(sharing)} when they fire: time pool "
            f"{', '.join(rule.time_pools)}; counted once)")


def _evidence(rule) -> str:
    """'small writes (`small_write_count`, ops), ...': each evidence value's label, JSON key and unit kind."""
    from advisor.facts import meta_of

    items = [(meta_of(name) or {"label": name, "kind": "text"}, name) for name in rule.evidence]
    return ", ".join(f"{m['label']} (`{name}`, {m['kind']})" for m, name in items) or "none"


def _alternative(fix: dict) -> str:
    """'`layout: shared` when `own_file_meta_share >= 0.5`': one fix alternative as the docs show it."""
    shown = ", ".join(f"{k}: {'=' + unparse(v) if isinstance(v, Node) else v}" for k, v in fix.items() if k != "when")
    return f"`{shown}`" + (f" when `{unparse(fix['when'])}`" if "when" in fix else "")


def markdown(rule) -> str:
    """The rule's documentation page (also used to build docs/rules.md)."""
    thresholds = ", ".join(f"`{k} = {v}`" for k, v in rule.thresholds.items()) or "none"
    fix = "; otherwise ".join(map(_alternative, rule.fix or [])) or "none (advice only)"
    return f"""# {_heading(rule)}

Category `{rule.category}`, severity up to `{rule.severity}`
{_severity_note(rule)}.

## What it does
{rule.docs['what']}

## Why it matters
{rule.docs['why']}

## How to fix it
{rule.docs['how']}

## Example
{rule.docs['example']}

## Details
- Condition: `{' '.join(rule.condition_text.split())}`
- Thresholds: {thresholds} (override in the site config: `[thresholds.{rule.code}]`)
- Evidence: {_evidence(rule)}
- Cost: `{' '.join(rule.cost_text.split()) or 'not estimated'}`{_pools(rule)}
- Replay fix: {fix}
- Recommendation: {outline(rule.recommendation['text'])}
- References: {', '.join(rule.references) or 'none'}
- Defined in {rule.source.rsplit('/', 1)[-1]}
{_commands(rule.recommendation["commands"])}"""


def _commands(commands: list[str]) -> str:
    """The rule's commands as one fenced code block: printed verbatim, one per line (C comments,
    `*` and shell quoting are not Markdown)."""
    if not commands:
        return ""
    fence = "`" * max(3, 1 + max((len(run) for c in commands for run in re.findall(r"`+", c)), default=0))
    body = "\n".join(outline(c, code=True) for c in commands)
    return f"\nCommands it suggests (a finding fills in the job's values):\n\n{fence}\n{body}\n{fence}\n"

"""Values the findings assumed (neither the input nor the site config gave them), listed once per
report: each with the config key (or the run option) that makes it exact, numbered, and a mark on
each finding naming the numbers it rests on. Shared by the terminal and the HTML report."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from advisor.findings import Finding


@dataclass
class Assumed:
    """The report's assumed values, in the order findings first use them."""

    lines: list[str] = field(default_factory=list)
    marks: dict[int, list[int]] = field(default_factory=dict)  # id(finding) -> numbers in `lines`

    def mark(self, finding: Finding) -> str:
        """'assumes 1, 2, 3' (the numbers of the 'Assumed values' list), '' for a finding that assumes nothing."""
        numbers = self.marks.get(id(finding))
        return f"assumes {', '.join(map(str, numbers))} (see Assumed values)" if numbers else ""


def assumed(findings: Iterable[Finding]) -> Assumed:
    out, index = Assumed(), {}
    for finding in findings:
        numbers = []
        for a in finding.assumptions or []:
            text = line(a)
            if text not in index:
                out.lines.append(text)
                index[text] = len(out.lines)
            numbers.append(index[text])
        if numbers:
            out.marks[id(finding)] = numbers
    return out


def line(a: Mapping[str, Any]) -> str:
    """One assumed value and what makes it exact: 'an RPC size of 1 MiB (Lustre's default) (assumed
    Lustre default; this job ran on ext4): set [system] rpc_size in the site config'."""
    value = str(a.get("value", ""))
    if a.get("ran_on"):
        value += f" (assumed Lustre default; this job ran on {a['ran_on']})"
    how = f"set {a['key']} in the site config" if a.get("key") else str(a.get("how") or "")
    return f"{value}: {how}" if how else value

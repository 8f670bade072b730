"""IOzone's automatic mode (``-a``) as record-size x file-size surfaces: the figure data of one output
and the heat maps the HTML report draws from it.

Each cell is one table (or report, or workbook) value; rows are file sizes, columns record sizes, the
shade the value on a log scale against the surface's best (six levels, the report's ``lv1``-``lv6``).
The page-cache cliff, where file sizes outgrow memory and rates fall tenfold, is what the picture shows.
"""

from __future__ import annotations

import math

from advisor.ingest.iozone import IozoneProfile
from advisor.report.plots import LEFT, RIGHT, TOP, WIDTH, Plot, with_table
from advisor.report.svg import Svg
from advisor.report.units import fmt_bytes, fmt_num

SURFACE_TESTS = ("write", "read")  # the columns drawn (the data table of each holds every cell)
LEVELS = 6
CELL_HEIGHT = 14


def surface_data(profile: IozoneProfile) -> dict | None:
    """{unit, tests: [{test, files_kib, records_kib, values: rows x columns (null: not run)}]}, or None
    when the output has no automatic-mode cell of the tests drawn."""
    run = profile.iozone
    tests = []
    for test in SURFACE_TESTS:
        cells = {(m.file_kib, m.record_kib): m.value for m in run.measurements
                 if m.test == test and m.source != "throughput" and m.file_kib and m.record_kib}
        if not cells:
            continue
        files, records = sorted({f for f, _ in cells}), sorted({r for _, r in cells})
        tests.append({"test": test, "files_kib": files, "records_kib": records,
                      "values": [[cells.get((f, r)) for r in records] for f in files]})
    return {"unit": run.unit, "tests": tests} if tests else None


def surface_plots(fig: dict) -> list[Plot]:
    """One heat map per test of the surface section."""
    return [_heat_map(t, str(fig.get("unit", "kB/s"))) for t in fig["tests"]]


def _heat_map(t: dict, unit: str) -> Plot:
    test, files, records = str(t["test"]), [int(f) for f in t["files_kib"]], [int(r) for r in t["records_kib"]]
    values = [[None if v is None else float(v) for v in row] for row in t["values"]]
    pid = "surface-" + "".join(c if c.isalnum() else "-" for c in test)
    present = [v for row in values for v in row if v]
    best = max(present)
    worst = min(present)
    height = TOP + CELL_HEIGHT * len(files) + 60
    width_cell = (WIDTH - LEFT - RIGHT) / max(len(records), 1)
    alt = (f"IOzone {test}: {len(present)} cells, {len(files)} file sizes x {len(records)} record sizes; "
           f"from {fmt_num(worst)} to {fmt_num(best)} {unit}.")
    svg = Svg(WIDTH, height, f"IOzone {test}: record size x file size", alt)
    tone = "c-write" if "write" in test else "c-read"
    rows = []
    for i, (file_kib, row) in enumerate(zip(files, values)):
        y = TOP + i * CELL_HEIGHT
        svg.text(LEFT - 6, y + CELL_HEIGHT - 3, fmt_bytes(file_kib * 1024), "tick", "end")
        for j, (record_kib, v) in enumerate(zip(records, row)):
            if not v:
                continue
            where = f"{fmt_bytes(file_kib * 1024)} file, {fmt_bytes(record_kib * 1024)} records"
            svg.rect(LEFT + j * width_cell, y, width_cell - 1, CELL_HEIGHT - 1, f"{tone} lv{_level(v, worst, best)}",
                     f"{where}: {fmt_num(v)} {unit}")
            rows.append([fmt_bytes(file_kib * 1024), fmt_bytes(record_kib * 1024), fmt_num(v)])
    bottom = TOP + CELL_HEIGHT * len(files)
    for j, record_kib in enumerate(records):
        svg.text(LEFT + (j + 0.5) * width_cell, bottom + 14, fmt_bytes(record_kib * 1024), "tick", "middle")
    svg.text((LEFT + WIDTH) / 2, height - 22, "record size (columns); file size (rows)", "label", "middle")
    svg.text((LEFT + WIDTH) / 2, height - 8, f"shade: {unit} on a log scale, {fmt_num(worst)} to {fmt_num(best)}",
             "legend", "middle")
    plot = Plot(pid, f"IOzone {test}: record size x file size", svg.markup(pid), alt)
    return with_table(plot, ["file size", "record size", f"{test} ({unit})"], rows)


def _level(value: float, worst: float, best: float) -> int:
    """1..LEVELS: where `value` lies between the worst and the best cell, on a log scale."""
    if best <= worst:
        return LEVELS
    share = (math.log(value) - math.log(worst)) / (math.log(best) - math.log(worst))
    return 1 + min(LEVELS - 1, int(share * LEVELS))

"""LUSTRE records of darshan-parser output -> the columns and layouts the log reader builds.

darshan-util 3.4.6 and later print each record as ``LUSTRE_NUM_COMPONENTS``,
``LUSTRE_NUM_STRIPES`` and per component ``LUSTRE_COMP<k>_*`` (the stripe pattern
and flags as words, the pool name, the OST ids); earlier darshan-util printed
``LUSTRE_OSTS``, ``LUSTRE_MDTS``, ``LUSTRE_STRIPE_OFFSET/SIZE/WIDTH`` and
``LUSTRE_OST_ID_<i>``. Both become what libdarshan-util hands pydarshan (it
up-converts the old form to one component): numeric ``LUSTRE_COMP<k>_*`` columns
and one :class:`~advisor.profile.LustreLayout` per file. The file-system OST/MDT
counts that only the old form carries are kept on the layout.
"""

from __future__ import annotations

import numpy as np

from advisor.ingest.darshan_records import LUSTRE_COMP_COUNTERS, LUSTRE_PATTERNS, lustre_component
from advisor.ingest.dxt_dump import DumpFormatError
from advisor.profile import LustreLayout, ModuleRecords

_PATTERN_VALUES = {name: value for value, name in LUSTRE_PATTERNS.items()}
# darshan-util's flag words, bit 0 first (lustreapi LCME_FL_*).
_FLAG_BITS = ("stale", "prefrd", "prefwr", "offline", "init", "nosync", "extension",
              "parity", "compress", "partial", "nocompr", "neg")
_NOT_SET = -1


def lustre_records(table) -> tuple[ModuleRecords, dict[int, LustreLayout]]:
    """Columns (-1 where a record has fewer components) and a layout per record id."""
    ids, ranks, rows, layouts = [], [], [], {}
    for rank, rid, counters in table.rows():
        try:
            row, layout = _record(int(rid), counters)
            ids.append(int(rid))
            ranks.append(int(rank))
        except (ValueError, KeyError) as exc:
            raise DumpFormatError(f"malformed LUSTRE record {rid} ({exc})") from None
        rows.append(row)
        layouts.setdefault(layout.record_id, layout)
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    counters = {n: np.array([row.get(n, _NOT_SET) for row in rows], dtype=np.int64) for n in names}
    return ModuleRecords(module="LUSTRE", ids=np.array(ids, dtype=np.uint64),
                         ranks=np.array(ranks, dtype=np.int64), counters=counters), layouts


def _record(rid: int, c: dict[str, str]) -> tuple[dict[str, int], LustreLayout]:
    if "LUSTRE_STRIPE_WIDTH" in c:
        return _old_form(rid, c)
    row = {"LUSTRE_NUM_COMPONENTS": int(c["LUSTRE_NUM_COMPONENTS"]),
           "LUSTRE_NUM_STRIPES": int(c["LUSTRE_NUM_STRIPES"])}
    layout = LustreLayout(record_id=rid)
    for k in range(1, row["LUSTRE_NUM_COMPONENTS"] + 1):
        pre = f"LUSTRE_COMP{k}_"
        values = {name: _value(name, c[pre + name]) for name in LUSTRE_COMP_COUNTERS}
        row.update({pre + name: v for name, v in values.items()})
        osts = [int(c[f"{pre}OST_ID_{j}"]) for j in range(max(values["STRIPE_COUNT"], 0))]
        pool = c.get(pre + "POOL_NAME", "N/A")
        layout.components.append(lustre_component(values, osts, "" if pool == "N/A" else pool))
    return row, layout


def _old_form(rid: int, c: dict[str, str]) -> tuple[dict[str, int], LustreLayout]:
    """Pre-3.4.6 darshan-util output, up-converted the way libdarshan-util does."""
    width = int(c["LUSTRE_STRIPE_WIDTH"])
    values = dict(zip(LUSTRE_COMP_COUNTERS, (int(c["LUSTRE_STRIPE_SIZE"]), width, _NOT_SET, _NOT_SET,
                                             0, _NOT_SET, _NOT_SET)))
    row = {"LUSTRE_NUM_COMPONENTS": 1, "LUSTRE_NUM_STRIPES": width}
    row.update({f"LUSTRE_COMP1_{name}": v for name, v in values.items()})
    osts = [int(c[f"LUSTRE_OST_ID_{j}"]) for j in range(width)]
    layout = LustreLayout(record_id=rid, components=[lustre_component(values, osts, "")])
    layout.osts = _count(c.get("LUSTRE_OSTS"))
    layout.mdts = _count(c.get("LUSTRE_MDTS"))
    return row, layout


def _value(name: str, text: str) -> int:
    """A component counter; darshan-util prints the pattern and the flags as words."""
    if text == "N/A":
        return _NOT_SET
    if name == "STRIPE_PATTERN" and text in _PATTERN_VALUES:
        return _PATTERN_VALUES[text]
    if name == "FLAGS" and not text.lstrip("-").isdigit():
        return sum(1 << _FLAG_BITS.index(word) for word in text.split(","))
    return int(text)


def _count(text: str | None) -> int | None:
    return int(text) if text is not None and int(text) >= 0 else None

"""Untrusted JSON documents (IOR summaries, node snapshots): decoding and schema checks.

Both give one-line InputErrors: a document nested deeper than the decoder's recursion
limit, an integer of thousands of digits (Python refuses to convert it), or a value of
the wrong type or beyond its schema's bounds never reaches the code that reads it.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from advisor.errors import InputError

MAX_DEPTH = 64
"""Levels of nesting a document may have: IOR's JSON and our snapshots have 6. Deeper ones
that still decode (up to Python's recursion limit) would fail later, where the parsed profile
is pickled back from the parsing child."""


def decode(text: str, path: str, what: str) -> Any:
    """`text` decoded; InputError for nesting too deep or an absurd integer.

    json.JSONDecodeError (malformed text) propagates: callers that recover broken
    documents (IOR -v output) handle it themselves.
    """
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise InputError(path, f"{what} nested too deeply to be read") from None
    except ValueError as exc:  # "Exceeds the limit (4300 digits) for integer string conversion"
        raise InputError(path, f"{what} holds an implausible number ({str(exc).split(';')[0]})") from None
    if _deeper_than(doc, MAX_DEPTH):
        raise InputError(path, f"{what} nested more than {MAX_DEPTH} levels deep")
    return doc


def _deeper_than(doc: Any, limit: int) -> bool:
    """Whether lists and objects nest more than `limit` levels (walked without recursion)."""
    stack = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        for child in children:
            if isinstance(child, (dict, list)):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


@cache
def schema(name: str) -> dict[str, Any]:
    """The JSON schema ``advisor/schemas/<name>.json``."""
    return json.loads(resources.files("advisor").joinpath(f"schemas/{name}.json").read_text())


def validate(doc: Any, name: str, path: str, what: str) -> None:
    """InputError naming the first place where `doc` breaks the schema `name`."""
    import jsonschema  # only when a JSON input is read: it costs ~0.3 s to import

    errors = sorted(jsonschema.Draft202012Validator(schema(name)).iter_errors(doc),
                    key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        where = "/".join(str(p) for p in errors[0].absolute_path) or "document"
        raise InputError(path, f"invalid {what} at {where}: {_message(errors[0])}")


def _message(error) -> str:
    """jsonschema's message, without repeating a value of thousands of characters."""
    text = error.message
    return text if len(text) <= 200 else text[:120] + " ... " + text[-60:]

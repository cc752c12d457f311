"""What a name in params/ may be: a file stem or mapping key that can never be read as a path.

Scenario, model and workload names become file names under params/ and folder names under outputs/
(the run folder, the model's config.json), so a name holds no path separator and no '..', and is short
enough for any file system.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator

MAX_NAME_CHARS = 64
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
NAME_RULE = ("1 to 64 characters of letters, digits, '.', '_' and '-', starting with a letter or digit, "
             "without '..' or a path separator")


def shown(value: Any, limit: int = 100) -> str:
    """A value as an error message quotes it: repr, cut to `limit` characters with the full length said."""
    text = repr(value)
    if len(text) <= limit:
        return text
    size = f"{len(value)} characters" if isinstance(value, str) else f"{len(text)} characters as written"
    return f"{text[:limit]}... ({size})"


def name_problem(value: Any) -> str | None:
    """Why `value` is not a name, or None when it is one."""
    if not isinstance(value, str):
        return f"{shown(value)} is a {type(value).__name__}, not a name ({NAME_RULE})"
    if not NAME_RE.fullmatch(value) or ".." in value:
        return f"{shown(value)} is not a name: names are {NAME_RULE}"
    return None


def _valid_name(value: str) -> str:
    if problem := name_problem(value):
        raise ValueError(problem)
    return value


Name = Annotated[str, AfterValidator(_valid_name)]

"""Building one typed entry from a file's fields, with errors that name file, entry, field and value."""

from __future__ import annotations

from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from accelbench.config.names import shown
from accelbench.errors import AccelbenchError

MAX_PROBLEMS_SHOWN = 5


def build(cls: type[BaseModel], data: Any, path: Path, kind: str | None = None, **extra: Any) -> Any:
    """`cls` from one entry's fields. `name` in `extra` is the entry's name (file stem or mapping key): a
    `name:` field that differs is refused. Errors name the file, the entry (for a mapping file), the field
    and the value."""
    name = extra.get("name")
    keyed = name is not None and name != path.stem
    where = f"{path}: {kind or 'entry'} '{name}'" if keyed else str(path)
    if not isinstance(data, dict):
        field = name if keyed else "<document>"
        raise AccelbenchError(f"{where}: field '{field}': expected a mapping of fields, got {_kind_of(data)}")
    if name is not None and "name" in data and data["name"] != name:
        owner = "entry's key" if keyed else "file"
        raise AccelbenchError(f"{where}: field 'name' is {shown(data['name'])} but the {owner} is named "
                              f"'{name}'; valid: '{name}', or leave the field out")
    try:
        return cls(**{**extra, **data})
    except ValidationError as e:
        problems = [problem(cls, err) for err in e.errors()]
        more = f"; and {len(problems) - MAX_PROBLEMS_SHOWN} more" if len(problems) > MAX_PROBLEMS_SHOWN else ""
        raise AccelbenchError(f"{where}: {'; '.join(problems[:MAX_PROBLEMS_SHOWN])}{more}") from None


def problem(cls: type[BaseModel], err: Any) -> str:
    """One validation error as "field 'a.b': reason (got value)", listing the valid fields where a key is unknown."""
    loc, msg = tuple(err["loc"]), err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden" and (valid := fields_at(cls, loc[:-1])):
        msg += f" (valid fields here: {', '.join(valid)})"
    value = err.get("input")
    if loc and err["type"] not in ("value_error", "missing") and not isinstance(value, (dict, BaseModel)):
        msg += f" (got {shown(value)})"
    return f"field '{'.'.join(map(str, loc))}': {msg}" if loc else msg


def fields_at(cls: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The fields of the model found by following `loc` down from `cls`; [] where it leads elsewhere."""
    model: Any = cls
    for part in loc:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        if field is None:
            return []
        ann = field.annotation
        options = get_args(ann) if get_origin(ann) in (Union, UnionType) else (ann,)
        models = [o for o in options if isinstance(o, type) and issubclass(o, BaseModel)]
        if not models:
            return []
        model = models[0]
    return list(model.model_fields)


def _kind_of(data: Any) -> str:
    return "an empty document" if data is None else f"a {type(data).__name__} ({shown(data)})"

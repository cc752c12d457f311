"""Reading a params/ YAML file strictly: UTF-8, one document of plain data, every refusal naming file and field.

PyYAML's safe loader still takes anchors and aliases (a few lines can expand to gigabytes), duplicate keys
(the last one silently wins), non-string keys, merge keys and typed tags (!!binary, !!set, timestamps), and
nests without bound (RecursionError). Here each is refused when the file is read, naming where it is.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, MappingStartEvent, ScalarEvent, SequenceStartEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from accelbench.errors import AccelbenchError

# No params file comes near these: the largest committed one (instances.yaml) is ~25 kB and nests 4 deep
# (a model's hf_config.text_config.rope_scaling: 4). They bound what a hostile or corrupted file can cost.
MAX_FILE_BYTES = 1 << 20
MAX_DEPTH = 16
# The plain-data tags: strings, numbers, booleans, null, lists and mappings (what JSON holds).
PLAIN_TAGS = frozenset(f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "seq", "map"))


class Refused(yaml.YAMLError):
    """A construct this loader refuses, with the dotted field path where it stands."""

    def __init__(self, field: str, message: str, node_or_event: Any = None) -> None:
        mark = getattr(node_or_event, "start_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        super().__init__(f"field '{field or '<document>'}'{where}: {message}")


def _label(index: Any) -> str | None:
    if isinstance(index, ScalarNode):
        return str(index.value)
    if isinstance(index, int):
        return str(index)
    return None


class _StrictComposer(Composer):
    """Refuses anchors, aliases and nesting deeper than MAX_DEPTH; remembers each node's field path."""

    def __init__(self) -> None:
        super().__init__()
        self.field_path: list[str] = []
        self.paths: dict[int, str] = {}

    def field(self) -> str:
        return ".".join(self.field_path)

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        label = _label(index)
        if label is not None:
            self.field_path.append(label)
        try:
            if self.check_event(AliasEvent):
                event = self.peek_event()
                raise Refused(self.field(), f"YAML alias '*{event.anchor}' refused: write the value out "
                                            f"(aliases let a few lines expand without bound)", event)
            event = self.peek_event()
            if isinstance(event, (ScalarEvent, SequenceStartEvent, MappingStartEvent)) and event.anchor is not None:
                raise Refused(self.field(), f"YAML anchor '&{event.anchor}' refused: write each value out", event)
            if len(self.field_path) > MAX_DEPTH:
                raise Refused(self.field(), f"nested {len(self.field_path)} levels deep; at most {MAX_DEPTH}", event)
            node = super().compose_node(parent, index)
            self.paths[id(node)] = self.field()
            return node
        finally:
            if label is not None:
                self.field_path.pop()


class _StrictConstructor(SafeConstructor):
    """Plain data only: string keys, each once, no merge keys, no typed tags."""

    def _field(self, node: Node, key: str | None = None) -> str:
        base = self.paths.get(id(node), "")  # type: ignore[attr-defined]
        return ".".join(p for p in (base, key) if p)

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        if node.tag not in PLAIN_TAGS:
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            hint = " (quote a date: \"2026-11-30\")" if tag == "!!timestamp" else ""
            raise Refused(self._field(node), f"YAML tag '{tag}' refused{hint}; values are strings, numbers, "
                                             f"booleans, null, lists and mappings", node)
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as e:  # e.g. `!!int abc`, or an int of more than 4300 digits
            raise Refused(self._field(node), f"not a valid {node.tag.rsplit(':', 1)[-1]}: {e}", node) from None

    def construct_mapping(self, node: Node, deep: bool = False) -> dict[str, Any]:
        if not isinstance(node, MappingNode):
            raise Refused(self._field(node), "expected a mapping", node)
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise Refused(self._field(node, "<<"), "YAML merge key '<<' refused: write the fields out", key_node)
            key = self.construct_object(key_node, deep=True)  # a list or mapping key, whole, for the message
            if not isinstance(key, str):
                raise Refused(self._field(node, str(key)), f"key {key!r} is a {type(key).__name__}; keys are "
                                                           f"strings (quote it)", key_node)
            if key in mapping:
                raise Refused(self._field(node, key), "key appears twice in one mapping; keep one", key_node)
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping

    def construct_sequence(self, node: Node, deep: bool = False) -> list[Any]:
        if not isinstance(node, SequenceNode):
            raise Refused(self._field(node), "expected a list", node)
        return [self.construct_object(child, deep=deep) for child in node.value]


class _PyStrictLoader(Reader, Scanner, Parser, _StrictComposer, _StrictConstructor, Resolver):
    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        _StrictComposer.__init__(self)
        _StrictConstructor.__init__(self)
        Resolver.__init__(self)


StrictLoader: type = _PyStrictLoader
if yaml.__with_libyaml__:  # libyaml's scanner and parser, several times faster; the composer above stays
    from yaml.cyaml import CParser

    class _CStrictLoader(_StrictComposer, CParser, _StrictConstructor, Resolver):  # type: ignore[misc]
        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            _StrictComposer.__init__(self)
            _StrictConstructor.__init__(self)
            Resolver.__init__(self)

    StrictLoader = _CStrictLoader


def loads(text: str) -> Any:
    """One YAML document of plain data; raises yaml.YAMLError (Refused among them)."""
    loader = StrictLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def read_yaml(path: Path) -> Any:
    """The file's one document, or AccelbenchError naming the file and, where it can, the field."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise AccelbenchError(f"{path}: cannot be read ({e.strerror or e})") from None
    if len(raw) > MAX_FILE_BYTES:
        raise AccelbenchError(f"{path}: {len(raw)} bytes; a params file holds at most {MAX_FILE_BYTES}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise AccelbenchError(f"{path}: not UTF-8 text: byte {raw[e.start]:#04x} at offset {e.start} "
                              f"(line {line}); save the file as UTF-8") from None
    try:
        return loads(text)
    except Refused as e:
        raise AccelbenchError(f"{path}: {e}") from None
    except yaml.YAMLError as e:
        raise AccelbenchError(f"{path}: not valid YAML{_line(e, text)}: {e}") from None


def _line(e: yaml.YAMLError, text: str) -> str:
    """' (line N)' where the error says where it stands."""
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    if mark is not None:
        return f" (line {mark.line + 1})"
    position = getattr(e, "position", None)  # a ReaderError: an unacceptable character
    return f" (line {text[:position].count(chr(10)) + 1})" if isinstance(position, int) else ""


def plain_data_problem(value: Any, field: str = "", depth: int = 0) -> tuple[str, str] | None:
    """(field path, why) for the first part of `value` that JSON could not hold as written, else None.

    What a params file passes on verbatim (a model's hf_config becomes config.json; NxDI settings reach the
    Neuron compiler) must be plain data: string keys, finite numbers, integers within 64 bits.
    """
    if depth > MAX_DEPTH:
        return field, f"nested more than {MAX_DEPTH} levels deep"
    if value is None or isinstance(value, (bool, str)):
        return None
    if isinstance(value, int):
        return None if -(1 << 63) <= value < (1 << 63) else (field, f"{value} does not fit in 64 bits")
    if isinstance(value, float):
        return None if math.isfinite(value) else (field, f"{value} is not a finite number")
    if isinstance(value, list):
        for i, item in enumerate(value):
            if problem := plain_data_problem(item, f"{field}.{i}" if field else str(i), depth + 1):
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return field, f"key {key!r} is a {type(key).__name__}; keys are strings"
            if problem := plain_data_problem(item, f"{field}.{key}" if field else key, depth + 1):
                return problem
        return None
    return field, f"a {type(value).__name__}; values are strings, numbers, booleans, null, lists and mappings"

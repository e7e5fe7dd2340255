"""Tables of kinds (bert.kind_tables) in tests: a toy kind added the way a new optimizer or clip mode is added (its
name in the Literal, its entry in the table), and the scan that finds a kind's name compared outside its table.

`added_kind` puts a kind into a table and its name into the Literal a settings module reads its field with, for
the length of a test; `name_comparisons` is the grep that holds "the names are compared in their table module
only", made precise with the syntax tree: a comparison (==, !=, in, is, match) with a kind's name, a dict keyed
by one, a subscript by one, or a module-level constant holding one, in the product's code (bert/, compliance/,
benchmarks/, acceptance/) outside the module named.
"""

from __future__ import annotations

import ast
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

import pytest

from bert import typed_config
from tests.helpers.repo import REPO

PRODUCT_FOLDERS = ("bert", "compliance", "benchmarks", "acceptance")


@contextmanager
def added_kind(monkeypatch: pytest.MonkeyPatch, table: dict, kind: object, settings_module: object,
               literal_name: str) -> Iterator[None]:
    """`kind` in `table` and its name among the values of the Literal `literal_name` of `settings_module` (where the
    settings dataclass's field annotation is resolved), until the block ends."""
    values = typing.get_args(getattr(settings_module, literal_name))
    monkeypatch.setitem(table, kind.name, kind)
    monkeypatch.setattr(settings_module, literal_name, Literal[(*values, kind.name)])
    typed_config._type_hints.cache_clear()  # the field types are read again, with the new Literal
    try:
        yield
    finally:
        monkeypatch.undo()
        typed_config._type_hints.cache_clear()


def _constants(node: ast.AST) -> list[object]:
    """The constants `node` is, or holds as a tuple, list or set."""
    if isinstance(node, ast.Constant):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [value for item in node.elts for value in _constants(item)]
    return []


def _compared(tree: ast.Module) -> Iterator[tuple[int, object]]:
    """(line, constant) of every constant compared, matched, used as a dict key or subscript, or held by a module
    level constant."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for part in (node.left, *node.comparators):
                yield from ((node.lineno, value) for value in _constants(part))
        elif isinstance(node, ast.MatchValue):
            yield from ((node.lineno, value) for value in _constants(node.value))
        elif isinstance(node, ast.Dict):
            yield from ((node.lineno, value) for key in node.keys if key is not None for value in _constants(key))
        elif isinstance(node, ast.Subscript):
            yield from ((node.lineno, value) for value in _constants(node.slice))
    for statement in tree.body:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
            yield from ((statement.lineno, value) for value in _constants(statement.value))


def name_comparisons(names: tuple[str, ...], table_module: str) -> list[str]:
    """Where the product's code compares one of `names` outside `table_module` (a path below the repository), as
    "path:line: name"."""
    found = []
    for folder in PRODUCT_FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            relative = path.relative_to(REPO).as_posix()
            if relative == table_module:
                continue
            tree = ast.parse(path.read_text(), relative)
            found += [f"{relative}:{line}: {value!r}" for line, value in _compared(tree) if value in names]
    return found


"""Every product module reads in one sitting and every function fits a screen: no module of bert/, compliance/,
benchmarks/ or acceptance/ over MAX_MODULE_LINES lines, no function or method over MAX_FUNCTION_LINES (from its
`def` to its last line, docstring and nested functions included). A module that grows past the bound is split by
job, not by line count."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers.repo import REPO

PRODUCT = ("bert", "compliance", "benchmarks", "acceptance")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def product_modules(root: Path) -> list[Path]:
    return sorted(path for folder in PRODUCT for path in (root / folder).rglob("*.py"))


def long_modules(root: Path = REPO, limit: int = MAX_MODULE_LINES) -> dict[str, int]:
    """Each module under `root` longer than `limit` lines, by its path from `root`, and its lines."""
    lines = {str(path.relative_to(root)): len(path.read_text().splitlines()) for path in product_modules(root)}
    return {name: count for name, count in lines.items() if count > limit}


def long_functions(root: Path = REPO, limit: int = MAX_FUNCTION_LINES) -> dict[str, int]:
    """Each function under `root` longer than `limit` lines, as path:line name, and its lines."""
    found = {}
    for path in product_modules(root):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > limit:
                    found[f"{path.relative_to(root)}:{node.lineno} {node.name}"] = length
    return found


def test_no_product_module_is_over_the_bound():
    assert long_modules() == {}


def test_no_function_is_over_the_bound():
    assert long_functions() == {}


def test_the_bounds_find_a_long_module_and_a_long_function(tmp_path):
    def function(name: str, lines: int) -> list[str]:
        return [f"def {name}():", *(f"    x{i} = {i}" for i in range(lines - 2)), "    return x0"]

    fits, over = function("fits", MAX_FUNCTION_LINES), function("over", MAX_FUNCTION_LINES + 1)
    (tmp_path / "acceptance").mkdir()
    (tmp_path / "acceptance" / "fits.py").write_text("\n".join(fits + [""] * (MAX_MODULE_LINES - len(fits))) + "\n")
    (tmp_path / "bert" / "model").mkdir(parents=True)
    (tmp_path / "bert" / "model" / "long.py").write_text("\n".join(["", *over, *[""] * MAX_MODULE_LINES]) + "\n")
    assert long_functions(tmp_path) == {"bert/model/long.py:2 over": MAX_FUNCTION_LINES + 1}
    assert long_modules(tmp_path) == {"bert/model/long.py": MAX_MODULE_LINES + MAX_FUNCTION_LINES + 2}

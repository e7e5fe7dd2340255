"""The field table of docs/descriptors.md is generated from the docstrings under the descriptor's fields: the
page and the code agree, every field has its docstring, and each logged MLPerf hyperparameter is named."""

import dataclasses
from dataclasses import dataclass

import pytest

from bert.descriptor_fields import BEGIN, END, PAGE, field_rows, field_table, main, page_with_table
from bert.mllog import HYPERPARAMETER_KEYS
from bert.system import RunSpec


def test_the_page_shows_the_table_the_code_generates():
    page = PAGE.read_text()
    assert page_with_table(page, field_table()) == page, ("docs/descriptors.md's field table is not the code's: run "
                                                          "python -m bert.descriptor_fields --write")


def test_every_run_field_has_a_row_with_its_docstring_owner_and_default():
    rows = {row.path: row for row in field_rows()}
    top = {f"run.{f.name}" for f in dataclasses.fields(RunSpec)}
    assert top <= set(rows) and all(rows[path].doc for path in rows)
    assert rows["run.optimizer.beta_1"].default == "0.9" and rows["run.optimizer.beta_1"].owner == \
        "bert/optim/settings.py"
    assert rows["run.balance"].owner == "bert/data/balance.py" and rows["run.clip"].owner == \
        "bert/distributed/clip_settings.py"
    assert rows["run.global_batch_size"].default == "required"
    assert rows["run.token_sizes"].kind == "an integer, 0 or more and at most 64"
    assert {"run.launch.cpu_binding.mode", "run.search.<field>.low", "run.dataset.synthetic.seed"} <= set(rows)


def test_each_row_says_whether_its_field_is_flat_in_run_or_in_a_block():
    rows = {row.path: row for row in field_rows()}
    assert rows["run.clip"].group == "`ClipSpec`: flat in `run`"
    assert rows["run.precision"].group == "`PrecisionSpec`: flat in `run`"
    assert rows["run.optimizer.beta_1"].group == "`OptimizerSpec`: the block `run.optimizer`"
    assert "| **`OptimizerSpec`: the block `run.optimizer`** |" in field_table()


def test_each_logged_hyperparameter_is_named_under_its_field():
    docs = " ".join(row.doc for row in field_rows())
    assert [key for key in HYPERPARAMETER_KEYS if f"MLPerf key {key}" not in docs
            and f"MLPerf keys {key}" not in docs and f"and {key}" not in docs] == []


@dataclass(frozen=True, kw_only=True)
class _Undocumented:
    documented: int = 1
    """A field with its docstring."""
    bare: int = 2


def test_a_field_without_a_docstring_is_named():
    with pytest.raises(ValueError, match=r"_Undocumented.bare \(x.bare\) has no docstring"):
        field_rows(_Undocumented, "x")


def test_the_page_needs_its_markers_and_the_command_prints_the_table(capsys):
    with pytest.raises(ValueError, match="needs the lines"):
        page_with_table("# a page without the table\n", "| t |\n")
    assert page_with_table(f"a\n{BEGIN}\nold\n{END}\nb\n", "| new |\n") == f"a\n{BEGIN}\n| new |\n{END}\nb\n"
    assert main([]) == 0 and capsys.readouterr().out == field_table()
    assert main(["--check"]) == 2

"""`mlperf-bert hpo` on a bad --storage or --trials: one line before Optuna sees it, never a SQLAlchemy
traceback, and never a study kept silently in memory."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from bert.cli import main
from bert.system import load_descriptor


def _hpo(tmp_path, small_dataset, *args: str):
    system = load_descriptor("cpu_micro").variant(
        {"max_samples": 64, "log_weights_initialization": False,
         "search": {"optimizer.base_learning_rate": {"low": 0.01, "high": 0.02}}},
        name="micro_search").write(tmp_path / "systems").path
    return CliRunner().invoke(main, ["hpo", "--system", str(system), "--data-dir", str(small_dataset), *args])


@pytest.mark.parametrize("storage, message", [
    ("sqlite:///", "names no file, so the study would live in memory and be lost at exit"),
    ("sqlite:///:memory:", "names no file, so the study would live in memory and be lost at exit"),
    ("sqlite:////no/such/folder/hpo.db", "the folder /no/such/folder does not exist; create it"),
    ("a study please", "not a database URL; use e.g. sqlite:///hpo.db"),
    ("postgresql://user@localhost:1/db", "the database driver for it is not installed"),
    ("sqlite:///{tmp}/notes.txt", "cannot open the study database (file is not a database)"),
    ("sqlite:///{tmp}", "cannot open the study database (unable to open database file)"),
])
def test_a_bad_storage_is_one_line_and_runs_no_trial(tmp_path, small_dataset, storage, message):
    (tmp_path / "notes.txt").write_text("not a database, but kept\n")
    storage = storage.format(tmp=tmp_path)
    result = _hpo(tmp_path, small_dataset, "--storage", storage, "--trials", "1")
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.exception
    assert result.output == f"Error: --storage {storage!r}: {result.output.split(': ', 2)[2]}"
    assert message in result.output and result.output.count("\n") == 1
    assert "Trial" not in result.output
    assert (tmp_path / "notes.txt").read_text() == "not a database, but kept\n"


@pytest.mark.parametrize("trials", ["0", "-2"])
def test_trials_must_be_at_least_one(tmp_path, small_dataset, trials):
    result = _hpo(tmp_path, small_dataset, "--storage", f"sqlite:///{tmp_path / 'hpo.db'}", "--trials", trials)
    assert result.exit_code == 2 and f"Invalid value for '--trials': {trials} is not in the range x>=1" in result.output
    assert not (tmp_path / "hpo.db").exists()

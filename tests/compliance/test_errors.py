"""The errors of the compliance commands (compliance.errors): a request a command does not serve is a UsageError, input
it cannot work on an InputError, and every error a compliance module defines is one of the two, so that the
command line says each in one line (tests/bert/cli/test_compliance.py: exit 2 and exit 1)."""

import importlib
import inspect
import pkgutil

import pytest

import compliance
from compliance.check import check_tree
from compliance.checkers import require_ruleset
from compliance.errors import InputError, UsageError
from compliance.files import UnreadableFile
from compliance.package import build_package
from tests.compliance.fakes import write_runs

# Raised by the one reader (compliance.files) and turned into a finding by whatever reads a submitter's file.
READER_ONLY = (UnreadableFile,)


def test_every_error_a_compliance_module_defines_is_an_input_error():
    defined = {}
    for module in pkgutil.iter_modules(compliance.__path__):
        loaded = importlib.import_module(f"compliance.{module.name}")
        for name, cls in inspect.getmembers(loaded, inspect.isclass):
            if issubclass(cls, Exception) and cls.__module__ == loaded.__name__:
                defined[f"{loaded.__name__}.{name}"] = cls
    assert len(defined) >= 8  # InputError, UsageError and the commands' own kinds
    stray = [name for name, cls in defined.items() if not issubclass(cls, (InputError, *READER_ONLY))]
    assert stray == []


def test_a_request_not_served_is_a_usage_error_and_input_that_fails_is_not(tmp_path):
    with pytest.raises(UsageError, match="no such file or folder"):
        check_tree(tmp_path / "missing")
    with pytest.raises(UsageError, match="BERT was retired"):
        require_ruleset("6.0.0")
    logs = write_runs(tmp_path / "logs", count=9)
    with pytest.raises(InputError, match="not packaged, nothing written") as refused:
        build_package("cpu_micro", logs, "MLPerf", tmp_path / "out")
    assert not isinstance(refused.value, UsageError) and not (tmp_path / "out").exists()

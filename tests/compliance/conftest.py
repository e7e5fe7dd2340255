"""The package of the session's ten real cpu_micro runs (tests/conftest.py: micro_runs), made once and shared; and a
results repository of fake runs that the tests read and never change."""

from __future__ import annotations

import pytest

from tests.compliance.fakes import write_round
from tests.helpers.compliance import MicroPackage, cli


@pytest.fixture(scope="session")
def micro_package(micro_system_path, micro_runs, tmp_path_factory) -> MicroPackage:
    out = tmp_path_factory.mktemp("package")
    result = cli("package", "--system", micro_system_path, "--logs", micro_runs, "--org", "MLPerf", "--out", out)
    return MicroPackage(micro_system_path, micro_runs, out, out / "MLPerf", result)


@pytest.fixture(scope="session")
def round_tree(tmp_path_factory):
    """A results repository of three submitters (tests.compliance.fakes.write_round)."""
    return write_round(tmp_path_factory.mktemp("round") / "training_results")

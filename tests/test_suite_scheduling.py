"""How run_tests.sh spreads the suite over its workers: the tests of one costly session fixture (tests/conftest.py,
SHARED_ON_ONE_WORKER) form one pytest-xdist group, so that the fixture is made once, not once per worker; and every
test's id stays short enough to be exported to the processes it starts."""

import subprocess
import sys

import pytest

from tests.helpers.repo import REPO

GROUPED = "tests/compliance/test_package.py::test_package_writes_the_tree_and_its_check_passes"


def test_the_tests_of_the_ten_runs_are_one_group_of_the_workers():
    pytest.importorskip("xdist")
    # --setup-plan collects on two real workers and makes no fixture: the ids they report carry the group.
    proc = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "--setup-plan",
                           "-p", "no:cacheprovider", GROUPED], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"{GROUPED}@micro_runs" in proc.stdout, proc.stdout[-2000:]


def test_every_test_id_fits_in_the_environment_of_the_processes_it_starts(request):
    # Linux refuses to start a process with an environment string over 128 KiB; the ids also stay readable.
    longest = max(request.session.items, key=lambda item: len(item.nodeid)).nodeid
    assert len(longest) < 1024, longest[:200]

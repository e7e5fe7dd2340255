"""`mlperf-bert system ...` (bert.cli.systems): what the commands print of a descriptor."""

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from bert.cli import main
from bert.descriptor_files import SEARCH_PATH_ENV
from tests.helpers.repo import REPO
from tests.helpers.systems import unchecked_descriptor, write_unchecked


def test_system_show_prints_the_resolved_descriptor(tmp_path):
    base = unchecked_descriptor({"dataset.dir": str(REPO / "data" / "cpu_micro")})
    write_unchecked(tmp_path, "micro_base", base)
    write_unchecked(tmp_path, "child", {"base": "micro_base", "run": {"seed": 11}})
    shown = subprocess.run([sys.executable, "-m", "bert.cli", "system", "show", str(tmp_path / "child.json")],
                           capture_output=True, text=True, check=True, cwd=REPO).stdout
    expected = dict(base, run=dict(base["run"], seed=11))
    assert json.loads(shown) == expected


@pytest.mark.parametrize("named", ["no_such_folder", "a_file"])
def test_system_list_with_a_search_path_that_names_no_folder_is_one_line(tmp_path, monkeypatch, named):
    (tmp_path / "a_file").write_text("")
    monkeypatch.setenv(SEARCH_PATH_ENV, str(tmp_path / named))
    result = CliRunner().invoke(main, ["system", "list"])
    assert result.exit_code == 1 and result.output == (
        f"Error: {SEARCH_PATH_ENV}={tmp_path / named}: {tmp_path / named} is not a folder; name the folders that hold "
        "your site's descriptors, separated by ':'\n")

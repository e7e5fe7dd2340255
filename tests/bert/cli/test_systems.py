"""`mlperf-bert system ...` (bert.cli.systems): what the commands print of a descriptor."""

import json
import subprocess
import sys

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

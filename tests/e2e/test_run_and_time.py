"""The whole wrapper, as a user runs it: ./run_and_time.sh <system>, then the official checker on its log."""

import os
import subprocess

from bert.mlperf_rules import DEFAULT_RULESET
from compliance.checkers import compliance_check
from tests.helpers.repo import REPO


def test_run_and_time_writes_compliant_logs_and_never_overwrites(tmp_path):
    env = dict(os.environ, NEXP="2", SEED="41", LOGDIR=str(tmp_path / "logs"), DATADIR=str(tmp_path / "data"))
    proc = subprocess.run([str(REPO / "run_and_time.sh"), "cpu_micro"], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = [line for line in proc.stdout.splitlines() if line.startswith("RESULT,bert,")]
    assert [r.split(",")[2] for r in results] == ["41", "42"]
    logs = sorted((tmp_path / "logs" / "cpu_micro").glob("result_*.txt"))
    assert [p.name for p in logs] == ["result_0.txt", "result_1.txt"]
    for log in logs:
        assert compliance_check(log, DEFAULT_RULESET).passed
    first = logs[0].read_text()
    env["NEXP"] = "1"
    again = subprocess.run([str(REPO / "run_and_time.sh"), "cpu_micro"], env=env, capture_output=True,
                           text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert logs[0].read_text() == first
    assert (tmp_path / "logs" / "cpu_micro" / "result_2.txt").is_file()

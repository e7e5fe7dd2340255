"""The official tools in a process of their own (compliance.tool_runner, as compliance.tool_runs starts it): each
log's verdict and output are the compliance checker's own, and each finished step prints `done` for the progress."""

import json
import os
import subprocess
import sys

from bert.mlperf_rules import DEFAULT_RULESET
from tests.compliance.fakes import truncated, write_runs
from tests.helpers.repo import REPO


def test_each_log_gets_the_compliance_checkers_verdict_and_each_step_says_done(tmp_path):
    logs = write_runs(tmp_path / "logs", count=2)
    cut = truncated(logs / "result_1.txt")
    request, result = tmp_path / "request.json", tmp_path / "result.json"
    request.write_text(json.dumps({"ruleset": DEFAULT_RULESET, "logs": [str(logs / "result_0.txt"), str(cut)]}))
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run([sys.executable, "-m", "compliance.tool_runner", str(request), str(result)], cwd=work,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["done", "done"]
    verdicts = json.loads(result.read_text())
    assert set(verdicts) == {"logs", "rcp", "systems"} and verdicts["rcp"] == {} == verdicts["systems"]
    good, bad = verdicts["logs"][str(logs / "result_0.txt")], verdicts["logs"][str(cut)]
    assert good["passed"] and not bad["passed"]
    assert "Required EXACTLY_ONE occurrence of 'run_stop' but found 0" in bad["output"]

"""A log is judged by what it says, not only by its last line: a `success` that no eval at the log's own
target backs, a second run_stop, or a run_stop before run_start never passes `check`, `package` or `score`; a
log that the official checker fails never passes a folder as the dropped run. The sound log of a run that did
not converge still may be that run."""

from __future__ import annotations

import json

import pytest

from tests.compliance.fakes import CLOSED_RUN, edit_lines, micro_system, write_package, write_run, write_runs
from tests.helpers.compliance import cli

FORGED = 3  # the run whose log is tampered with


def _event(line: str) -> dict:
    return json.loads(line.split(":::MLLOG ", 1)[1])


def _line(event: dict) -> str:
    return f":::MLLOG {json.dumps(event)}"


def _below_target(log) -> None:
    write_run(log, seed=50, accuracies=(0.01, 0.01, 0.01))  # run_stop success; the target is 0.06


def _stopped_twice(log) -> None:
    stop = next(line for line in log.read_text().splitlines() if '"key": "run_stop"' in line)
    again = _event(stop)
    again["metadata"]["status"], again["time_ms"] = "aborted", again["time_ms"] + 1
    log.write_text(log.read_text() + _line(again) + "\n")


def _stop_before_start(log) -> None:
    lines = log.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if '"key": "run_start"' in line)
    stop = next(i for i, line in enumerate(lines) if '"key": "run_stop"' in line)
    event = _event(lines[stop])
    event["time_ms"] = _event(lines[start])["time_ms"] - 3360  # scored as -0.056 minutes
    moved = [line for i, line in enumerate(lines) if i != stop]
    moved.insert(start, _line(event))
    log.write_text("\n".join(moved) + "\n")


FORGERIES = {
    "success below the target": (_below_target, "run_stop says success, but no eval_accuracy between run_start and "
                                                "run_stop reached the target 0.06 (best: 0.0100)"),
    "two run_stop lines": (_stopped_twice, "2 run_stop lines (status success, aborted): a run stops once"),
    "run_stop before run_start": (_stop_before_start, "is not after run_start"),
}


@pytest.mark.parametrize("forge", FORGERIES, ids=list(FORGERIES))
def test_package_refuses_a_forged_log_and_writes_nothing(tmp_path, forge):
    logs = write_runs(tmp_path / "logs")
    tamper, message = FORGERIES[forge]
    tamper(logs / f"result_{FORGED}.txt")
    result = cli("package", "--system", "cpu_micro", "--logs", logs, "--org", "Org", "--out", tmp_path / "out")
    said = " ".join(result.output.split())
    assert result.exit_code == 1 and "not packaged, nothing written" in said, result.output
    assert message in said and f"result_{FORGED}.txt does not count" in said
    assert "only the sound log of a run that did not converge can be the run olympic scoring drops" in said
    assert not (tmp_path / "out").exists()


def test_check_fails_a_folder_with_a_forged_log_or_one_the_official_checker_fails(tmp_path):
    forged = write_runs(tmp_path / "forged")
    _stop_before_start(forged / f"result_{FORGED}.txt")
    result = cli("check", forged)
    assert result.exit_code == 1 and "VERDICT: FAIL" in result.output
    assert "is not after run_start" in " ".join(result.output.split())
    failing = write_runs(tmp_path / "failing")  # sound to the eye, but without the cache_clear the rules require
    edit_lines(failing / f"result_{FORGED}.txt", lambda line: None if '"key": "cache_clear"' in line else line)
    result = cli("check", failing)
    said = " ".join(result.output.split())
    assert result.exit_code == 1 and "VERDICT: FAIL" in said
    assert f"result_{FORGED}.txt does not count (fails the compliance checker)" in said


def test_score_fails_a_package_whose_log_claims_a_success_it_did_not_reach(tmp_path):
    org = write_package(tmp_path / "Org")
    _below_target(org / "results" / "cpu_micro" / "bert" / f"result_{FORGED}.txt")
    result = cli("score", org)
    said = " ".join(result.output.split())
    assert result.exit_code == 1 and "VERDICT: FAIL" in said
    assert FORGERIES["success below the target"][1] in said


def test_the_sound_log_of_a_run_that_did_not_converge_is_still_the_dropped_run(tmp_path):
    """Closed division, where the official checker fails that log for its missed target alone."""
    system = micro_system("closed", 448)
    logs = write_runs(tmp_path / "logs", system=system, **CLOSED_RUN)
    write_run(logs / f"result_{FORGED}.txt", seed=77, system=system, accuracies=(0.4, 0.5, 0.6),
              status="aborted", interval=CLOSED_RUN["interval"])
    result = cli("check", logs)
    said = " ".join(result.output.split())
    assert result.exit_code == 0 and "VERDICT: PASS" in said, result.output
    assert f"1 run does not count (result_{FORGED}.txt: " in said and "olympic scoring accepts it as the" in said

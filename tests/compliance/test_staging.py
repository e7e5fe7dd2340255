"""What the official tools get (compliance.staging): copies of exactly the BERT logs and system JSONs the harness
judged; never another benchmark's folder, a planted rules file's code, a file swapped after it was read, or a path
made of a log's value."""

import json
import os
import shutil

import pytest

from compliance import tool_runs
from compliance.result_log import read_result_log
from compliance.staging import path_value_findings, read_staged
from tests.compliance.fakes import edit_events, write_other_benchmark, write_package, write_run
from tests.helpers.compliance import cli


def _planted_rules(tmp_path) -> tuple[str, object]:
    """A rules file that writes a marker when the compliance checker loads it, and the submission_division value
    that makes the checker load it (it names `{division}_common.yaml` under its own folder)."""
    marker, rules = tmp_path / "code-ran", tmp_path / "planted"
    (tmp_path / "planted_common.yaml").write_text(f"- BEGIN:\n    CODE: \"open({str(marker)!r}, 'w').write('ran')\"\n")
    return "../" * 40 + str(rules).lstrip("/"), marker


def _division(value: str, first: bool = True):
    """An edit that sets the first submission_division line to `value`, or adds a second line with it."""
    def edit(_, event):
        if event["key"] != "submission_division":
            return event
        return dict(event, value=value) if first else [event, dict(event, value=value)]
    return edit


@pytest.fixture
def hostile(tmp_path):
    """A submission whose own BERT system is genuine, beside logs that name the planted rules: in another
    benchmark's folder of that system, in a system of another benchmark only, and in a second system's bert/
    folder (on the first submission_division line of one log, on a second such line of another)."""
    division, marker = _planted_rules(tmp_path)
    org = write_package(tmp_path / "Org")
    for folder in ("cpu_micro", "detector"):
        log = write_other_benchmark(org, folder, "retinanet")
        edit_events(log, _division(division))
    shutil.copytree(org / "results" / "cpu_micro" / "bert", org / "results" / "forged" / "bert")
    shutil.copyfile(org / "systems" / "cpu_micro.json", org / "systems" / "forged.json")
    edit_events(org / "results" / "forged" / "bert" / "result_3.txt", _division(division))
    edit_events(org / "results" / "forged" / "bert" / "result_4.txt", _division(division, first=False))
    return org, marker


def test_no_code_shipped_in_a_submission_runs_in_check_score_or_report(hostile, tmp_path):
    org, marker = hostile
    for args in (["check", org], ["score", org], ["report", org, "-o", tmp_path / "report"]):
        result = cli(*args)
        assert not marker.exists(), f"mlperf-bert {args[0]} ran the code of a rules file planted in the submission"
        assert result.exit_code == 1
    output = " ".join(cli("check", org).output.split())
    assert "skipped (no bert/ results): detector" in output
    assert "results/forged/bert/result_3.txt: submission_division is '../../../" in output
    assert "results/forged/bert/result_4.txt: line 6: submission_division is '../../../" in output and \
        "the official tools name a file they load after this value" in output
    assert "PASS package checker (results/cpu_micro)" in output
    assert "NOT RUN package checker (results/forged)" in output


def test_the_tools_get_copies_of_exactly_the_bert_logs_and_system_json(tmp_path, monkeypatch):
    org = write_package(tmp_path / "Org")
    bench = org / "results" / "cpu_micro" / "bert"
    write_other_benchmark(org, "cpu_micro", "retinanet")
    (bench / "scaling.json").write_text('{"scaling_factor": 0.5}')  # would halve the open division's score
    (bench / "package_checker_params").write_text("rcp-bypass")
    os.mkfifo(bench / "notes")
    (bench / "power" / "result_0").mkdir(parents=True)
    (bench / "power" / "result_0" / "node_0.txt").write_text("")
    handed = []
    run_tools = tool_runs.run_tools

    def recording(request, timeout, advance):
        for system in request.get("systems", []):
            staged = tool_runs.Path(system["org"])
            handed.append(sorted(str(p.relative_to(staged)) for p in staged.rglob("*") if p.is_file()))
        return run_tools(request, timeout, advance)
    monkeypatch.setattr(tool_runs, "run_tools", recording)
    result = cli("score", org)
    logs = [f"results/cpu_micro/bert/result_{i}.txt" for i in range(10)]
    assert handed == [sorted(["systems/cpu_micro.json", *logs])]
    assert result.exit_code == 0, result.output
    logs = [read_result_log(bench / f"result_{i}.txt") for i in range(10)]
    minutes = sorted(log.run_minutes for log in logs)
    assert f"{sum(minutes[1:-1]) / 8:.5f}" in result.output  # unscaled: the planted scaling.json never counted


def test_the_copy_is_what_was_read_and_judged(tmp_path):
    source = write_run(tmp_path / "result_0.txt", seed=1)
    copy = tmp_path / "staged" / "result_0.txt"
    log = read_staged(source, copy)
    judged = copy.read_bytes()
    source.write_text(source.read_text().replace('"value": "open"', '"value": "closed"'))
    assert log.path == source and copy.read_bytes() == judged and log.division == "open"
    os.unlink(source)
    os.mkfifo(source)
    unreadable = read_staged(source, tmp_path / "staged" / "again.txt")
    assert unreadable.unreadable and not (tmp_path / "staged" / "again.txt").exists()


@pytest.mark.parametrize("key, value", [("submission_division", "../x"), ("submission_benchmark", "bert/../../x"),
                                        ("submission_division", {"a": 1}), ("submission_benchmark", "BERT")])
def test_a_value_the_tools_would_name_a_file_after_is_refused_on_any_line(tmp_path, key, value):
    log = write_run(tmp_path / "result_0.txt", seed=1)
    assert path_value_findings(read_result_log(log)) == []
    edit_events(log, lambda _, e: [e, dict(e, value=value)] if e["key"] == key else e)
    (found,) = path_value_findings(read_result_log(log))
    assert found.blocks and f"{key} is {json.loads(json.dumps(value))!r}"[:40] in found.message

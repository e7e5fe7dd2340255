"""Copies of one run judged by what a run measured (compliance.copies): what a copy keeps whatever was edited around
it, and what is no evidence of one (short or rounded measurements, one seed on two systems of a deterministic
implementation)."""

from __future__ import annotations

import shutil

from compliance.findings import ERROR
from compliance.folder_rules import copied_runs
from compliance.package_rules import package_judgement
from compliance.result_log import read_result_log, result_logs_in
from tests.compliance.fakes import (
    CLOSED_RUN,
    compressed,
    edit_events,
    micro_system,
    time_of,
    with_value,
    write_run,
    write_runs,
)


def _copied(logs):
    return copied_runs(logs, [read_result_log(p) for p in result_logs_in(logs)])


def _retouched_copy(source, copy, seed, touch) -> None:
    shutil.copyfile(source, copy)
    with_value(copy, "seed", "value", seed)
    touch(copy)


def test_copies_are_judged_by_what_a_run_measured(tmp_path):
    """Copies with another seed and one field no tool reads changed (metadata.lineno, metadata.file), or one line
    moved by a few ms, or every time after run_start moved by seconds: the same measurements, refused. Genuine runs
    (their own accuracies) are none."""
    logs = write_runs(tmp_path / "logs", accuracies=(0.3, 0.5, 0.6, 0.65, 0.68, 0.7, 0.71))
    assert _copied(logs) == []
    source = logs / "result_0.txt"
    touches = {
        1: lambda c: edit_events(c, lambda i, e: dict(e, metadata=dict(e["metadata"], lineno=7)) if i == 20 else e),
        2: lambda c: edit_events(c, lambda i, e: dict(e, metadata=dict(e["metadata"], file="x.py")) if i == 3 else e),
        3: lambda c: with_value(c, "eval_accuracy", "time_ms", time_of(c, "eval_accuracy") + 4),
        4: lambda c: compressed(c, 1.2),  # every time moved: the accuracies alone, of another seed
    }
    for index, touch in touches.items():
        _retouched_copy(source, logs / f"result_{index}.txt", 1000 + index, touch)
    (found,) = _copied(logs)
    assert found.level == ERROR
    for index in (1, 2, 3):
        assert f"result_{index}.txt of result_0.txt: 7 of its 7 evals measure the same accuracy at the same " \
               "epoch_num, within 100 ms" in found.message
    assert "result_4.txt of result_0.txt: 7 of its 7 evals measure the same accuracy at the same epoch_num as a run " \
           "of another seed (1004, 1)" in found.message


def test_short_or_rounded_measurements_are_no_evidence_of_a_copy(tmp_path):
    """Logs that round their accuracies to two digits, or hold two evals, repeat each other by chance (and a
    deterministic system repeats its timings closely): such runs are never called copies. Nor are the runs of one
    seed on two systems of a deterministic implementation (Dell's v3.0 package holds one): the same accuracies,
    other times."""
    logs = tmp_path / "logs"
    logs.mkdir()
    for index in range(3):
        log = write_run(logs / f"result_{index}.txt", seed=index, accuracies=(0.3, 0.5, 0.6, 0.65, 0.7, 0.72))
        edit_events(log, lambda _, e: dict(e, value=round(e["value"], 2)) if e["key"] == "eval_accuracy" else e)
    for index in (3, 4):
        write_run(logs / f"result_{index}.txt", seed=index, accuracies=(0.3, 0.72))
        shutil.copyfile(logs / "result_3.txt", logs / "result_4.txt") if index == 4 else None
    with_value(logs / "result_4.txt", "seed", "value", 99)
    with_value(logs / "result_4.txt", "eval_accuracy", "time_ms", time_of(logs / "result_4.txt", "eval_accuracy") + 30)
    assert _copied(logs) == []
    one, two = micro_system(system_name="one"), micro_system(system_name="two")
    same_seed = {"one": [read_result_log(write_run(tmp_path / "one.txt", seed=7, system=one, **CLOSED_RUN))],
                 "two": [read_result_log(compressed(write_run(tmp_path / "two.txt", seed=7, system=two, **CLOSED_RUN),
                                                    0.8))]}
    assert package_judgement(tmp_path, {}, same_seed) == []
    again = {"one": same_seed["one"], "two": [read_result_log(shutil.copyfile(tmp_path / "one.txt",
                                                                             tmp_path / "three.txt"))]}
    (copied,) = package_judgement(tmp_path, {}, again)
    assert copied.message.startswith("results/two/bert/three.txt is a copy of results/one/bert/one.txt (8 of its 8 "
                                     "evals measure the same accuracy at the same epoch_num, within 100 ms")

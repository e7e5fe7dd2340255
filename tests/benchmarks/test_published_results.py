"""`check` and `score` against the official tools on published results (benchmarks/published_results.py).

The comparison itself runs only when MLPERF_BERT_PUBLISHED_RESULTS names a folder of published MLPerf training
results (ORG/systems/<system>.json beside ORG/results/<system>/bert/, e.g. a checkout of
mlcommons/training_results_v5.0) and takes about 20 s a system; MLPERF_BERT_PUBLISHED_RULESET gives its ruleset
(default 5.0.0). What the comparison rests on is tested always."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks.published_results import (
    PublishedSystem,
    Took,
    Verdict,
    agree,
    compare,
    published_systems,
    record_round,
    time_lines,
)
from bert.mlperf_rules import DEFAULT_RULESET

PUBLISHED = os.environ.get("MLPERF_BERT_PUBLISHED_RESULTS")


def test_systems_of_a_published_tree_and_when_verdicts_agree(tmp_path):
    for org, name, files in (("NVIDIA", "tyche_ngpu8", ["result_0.txt"]), ("Dell", "XE9680", ["result_01.txt"]),
                             ("krai", "no_json", ["result_0.txt"]), ("QCT", "no_logs", ["scaling.json"])):
        bench = tmp_path / org / "results" / name / "bert"
        bench.mkdir(parents=True)
        for file in files:
            (bench / file).write_text("")
        if name != "no_json":
            (tmp_path / org / "systems").mkdir(exist_ok=True)
            (tmp_path / org / "systems" / f"{name}.json").write_text("{}")
    assert [s.label for s in published_systems(tmp_path)] == ["Dell/XE9680", "NVIDIA/tyche_ngpu8"]
    assert agree(Verdict(True, 3.50220711), Verdict(True, 3.50224))
    assert not agree(Verdict(True, 3.5022), Verdict(True, 3.5024))
    assert not agree(Verdict(True, 3.5022), Verdict(False, 3.5022, "forged"))
    assert not agree(Verdict(True, 3.5022), Verdict(True, None))


def test_each_round_keeps_its_own_section_with_its_times(tmp_path):
    results = tmp_path / "published_results_results.md"
    times = time_lines(Took(100.0, 90.0), Took(120.0, 99.0))
    assert times[-1] == "ours / official: 1.20x wall, 1.10x CPU"
    record_round(results, "Training v5.0 (ruleset 5.0.0)", ["five", *times], ["--ruleset", "5.0.0"], "")
    record_round(results, "Training v4.1 (ruleset 4.1.0)", ["four"], ["--ruleset", "4.1.0"], "")
    record_round(results, "Training v5.0 (ruleset 5.0.0)", ["five again"], ["--ruleset", "5.0.0"], "")
    text = results.read_text()
    assert text.startswith("# published_results results\n\n## Training v5.0 (ruleset 5.0.0)\n")
    assert text.count("## Training v4.1") == 1 and "four" in text and "five again" in text
    assert "five\n" not in text and text.count("- machine: ") == 2 and text.count("- date: ") == 2


@pytest.mark.skipif(not PUBLISHED, reason="MLPERF_BERT_PUBLISHED_RESULTS names no folder of published results")
def test_check_and_score_agree_with_the_official_tools_on_every_published_bert_system(tmp_path):
    ruleset = os.environ.get("MLPERF_BERT_PUBLISHED_RULESET", DEFAULT_RULESET)
    systems: list[PublishedSystem] = published_systems(Path(PUBLISHED))
    assert systems, f"{PUBLISHED}: no ORG/results/<system>/bert/ with its ORG/systems/<system>.json"
    differing = []
    for system in systems:
        theirs, mine, _, _ = compare(system, ruleset, tmp_path)
        if not agree(theirs, mine):
            differing.append(f"{system.label}: official {theirs}, ours {mine}")
    assert not differing, "\n".join(differing)

"""A text corpus through the whole data pipeline, then trained with run_and_time.sh (verbose: the MLPerf lines on
the console too, each the result file's) and checked."""

import os
import shutil
import subprocess

from click.testing import CliRunner

from bert.cli import main
from bert.mlperf_rules import DEFAULT_RULESET
from bert.system import load_descriptor
from compliance.checkers import compliance_check
from tests.helpers.repo import REPO

SHAPE = ("--max-seq-length", "64", "--max-predictions", "10")


def _data(*args) -> None:
    result = CliRunner().invoke(main, ["data", *map(str, args), "--quiet"])
    assert result.exit_code == 0, result.output


def test_text_to_verified_shards_to_a_compliant_run(tmp_path, text_corpus):
    data = tmp_path / "data"
    _data("vocab", "--text", text_corpus / "train", "--size", 1500, "--out", data / "vocab.txt")
    _data("prepare", "--text", text_corpus / "train", "--vocab", data / "vocab.txt", "--out", data / "train",
          *SHAPE, "--dupe-factor", 3, "--workers", 1)
    _data("prepare", "--text", text_corpus / "eval.txt", "--vocab", data / "vocab.txt", "--out",
          tmp_path / "eval_shards", *SHAPE, "--dupe-factor", 1, "--workers", 1)
    _data("eval-set", "--input", tmp_path / "eval_shards", "--out", data / "eval.hdf5", "--samples", 256, *SHAPE)
    (data / "train" / "prepare.json").unlink()  # the dataset holds shards, the eval file and the vocabulary
    _data("verify", data, "--max-seq-length", 64, "--max-predictions", 10)
    system = load_descriptor("cpu_micro").variant(
        {"dataset": {"dir": str(data)}, "notes": "cpu_micro's shape on a text corpus prepared by the data pipeline."},
        name="prepared_micro").write(tmp_path / "systems").path
    env = dict(os.environ, NEXP="1", SEED="5", LOGDIR=str(tmp_path / "logs"), MLPERF_BERT_VERBOSE="1")
    proc = subprocess.run([str(REPO / "run_and_time.sh"), str(system)], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    log = tmp_path / "logs" / "prepared_micro" / "result_0.txt"
    assert '"status": "success"' in log.read_text().splitlines()[-1]
    assert compliance_check(log, DEFAULT_RULESET).passed
    assert [line for line in proc.stdout.splitlines() if line.startswith(":::MLLOG ")] == log.read_text().splitlines()
    assert any(line.startswith("step ") and " seq/s " in line for line in proc.stdout.splitlines())
    assert proc.stdout.splitlines()[-1].startswith("next: mlperf-bert check ")
    shutil.rmtree(data)

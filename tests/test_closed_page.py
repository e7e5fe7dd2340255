"""docs/closed.md's commands, typed into one bash session as written, in a fresh copy of the repository: from a
download to a scored package. The page's last section names the four stand-ins (no network, no Slurm cluster,
no GPU, no TensorFlow here), made before the session: a synthetic download, a stand-in descriptor of the page's
name, the stand-in's weights where the TF checkpoint would be, and an `sbatch` that runs the job here. The page's
own closed descriptor is checked beside: it gets the RCP's values, and its pre-flight refuses the dataset the
synthetic download made."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import torch

from bert.closed_division import input_problems
from bert.descriptor_files import SEARCH_PATH_ENV
from bert.mlperf_rules import DEFAULT_RULESET
from bert.model.config import named_config
from bert.model.pretraining import BertForPreTraining
from bert.rcp import point_for
from bert.system import load_descriptor
from compliance.provenance import folder_name_for
from tests.helpers.compliance import MICRO_EVAL
from tests.helpers.downloads import official_download
from tests.helpers.readme import readme_commands
from tests.helpers.repo import REPO, fresh_copy, this_python_env

PAGE = REPO / "docs" / "closed.md"
NAME = "site_h100_8x8"
STANDS_IN = ("mlc-r2-downloader.sh", "pip install")  # lines the test does not type: it made their result itself
ORG = folder_name_for(load_descriptor("cpu_micro").description["submitter"])  # the stand-in's submitter, as a folder


def _run(argv: list[str], cwd: Path, env: dict) -> str:
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout


def _synthetic_download(checkout: Path, env: dict) -> None:
    """download/ as the R2 downloader lays out the text (results4/, the md5 list, vocab.txt), of synthetic text."""
    text = checkout / "synthetic_text"
    cli = ["python", "-m", "bert.cli", "data"]
    _run([*cli, "synth-text", "--out", str(text), "--megabytes", "0.6", "--parts", "2", "--quiet"], checkout, env)
    _run([*cli, "vocab", "--text", str(text / "train"), "--size", "1500", "--out", str(text / "vocab.txt"),
          "--quiet"], checkout, env)
    official_download(checkout / "download", text)


def _stand_in_system(checkout: Path) -> Path:
    """site/site_h100_8x8.json: cpu_micro in the open division on the page's dataset, at its sequence shape."""
    data = checkout / "data" / "mlperf_bert"
    return load_descriptor("cpu_micro").variant(
        {"max_seq_length": 512, "max_predictions_per_seq": 76, "eval": MICRO_EVAL, "dataset": {"dir": str(data)},
         "init_checkpoint": "data/mlperf_bert/phase1/model.pt",
         "notes": "A stand-in of the page's closed descriptor that a CPU trains in seconds."},
        name=NAME).write(checkout / "site").path


def _stand_in_checkpoint(checkout: Path) -> None:
    torch.manual_seed(3)
    path = checkout / "download" / "tf1_ckpt" / "model.ckpt-28252"
    path.parent.mkdir(parents=True)
    torch.save(BertForPreTraining(named_config("micro")).state_dict(), path)


def _sbatch_running_the_job_here(folder: Path) -> Path:
    """An `sbatch` that runs the job at once on this machine, as the job would (run_and_time.sh SYSTEM)."""
    folder.mkdir()
    (folder / "sbatch").write_text('#!/bin/bash\nfor a in "$@"; do case $a in --chdir=*) cd "${a#--chdir=}";; esac; '
                                   'done\necho "Submitted batch job 7"\nexec ./run_and_time.sh "${@: -1}"\n')
    (folder / "sbatch").chmod(0o755)
    return folder


@pytest.mark.long_running
def test_the_closed_pages_commands_run_as_written_to_a_scored_package(tmp_path):
    checkout = fresh_copy(tmp_path / "checkout")
    env = {**os.environ, **this_python_env(), "OMP_NUM_THREADS": "1", "SHARDS": "8"}
    env.pop(SEARCH_PATH_ENV, None)
    env["PATH"] = f"{_sbatch_running_the_job_here(tmp_path / 'bin')}:{env['PATH']}"
    _synthetic_download(checkout, env)
    _stand_in_system(checkout)
    _stand_in_checkpoint(checkout)
    lines = [line for line in readme_commands(PAGE) if not any(word in line for word in STANDS_IN)]
    assert len(readme_commands(PAGE)) - len(lines) == 3 and lines[0] == "source bootstrap.sh"
    script = "\n".join(f"{line} || exit $((100 + {i}))" for i, line in enumerate(lines))
    proc = subprocess.run(["bash", "-c", script], cwd=checkout, env=env, capture_output=True, text=True,
                          timeout=1800)
    assert proc.returncode == 0, (f"line {lines[proc.returncode - 100] if proc.returncode >= 100 else '?'!r}:\n"
                                  f"{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    said = proc.stdout + proc.stderr
    data = checkout / "data" / "mlperf_bert"
    assert (f"not the official MLPerf dataset: {Path('data/mlperf_bert')} was made from a download that is not the "
            "official one: 2 text part(s)") in said
    assert ("not the official MLPerf phase-1 checkpoint: download/tf1_ckpt/model.ckpt-28252 is a pytorch file"
            in said)
    assert len(re.findall(r"^RESULT,bert,", proc.stdout, re.M)) == 10
    described = json.loads((checkout / "submission" / ORG / "systems" / f"{NAME}.json").read_text())
    assert described["framework"] == f"PyTorch {torch.__version__} (CPU)"  # what the ten runs logged
    assert (checkout / "submission" / ORG / "results" / NAME / "bert" / "result_9.txt").is_file()
    verdicts = re.findall(r"^VERDICT: (\w+)", proc.stdout, re.M)  # check's, package's check's, score's
    assert len(verdicts) == 3 and set(verdicts) == {"PASS"}, verdicts

    # The page's own closed descriptor: the RCP's values at its batch, and a pre-flight refusing this dataset.
    (block,) = re.findall(r"```json\n(.*?)```", PAGE.read_text(), re.DOTALL)
    page_system = tmp_path / "page" / f"{NAME}.json"
    page_system.parent.mkdir()
    page_system.write_text(block)
    closed = load_descriptor(page_system)
    assert closed.division == "closed" and closed.run.optimizer.training_steps == \
        point_for(3072, DEFAULT_RULESET).hyperparameters["training_steps"]
    (dataset_line, checkpoint_line) = input_problems(closed, data, data / "phase1")
    assert dataset_line.startswith("a closed run trains on the official MLPerf dataset, but ")
    assert checkpoint_line.startswith("a closed run starts from the official MLPerf phase-1 checkpoint, but ")

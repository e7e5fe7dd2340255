"""run_and_time.sh on bad input and a bad environment: one line and exit status 2 before anything starts, never
a hang; and of two wrappers started together with ON_EXISTING=refuse, only one runs."""

from __future__ import annotations

import os
import random
import subprocess
import time
from pathlib import Path

import pytest
import torch

from bert.system import load_descriptor
from tests.helpers.datasets import copy_dataset
from tests.helpers.faults import fake_launcher, single_line_error, wrapper
from tests.helpers.logs import mllog_line
from tests.helpers.repo import REPO


@pytest.mark.parametrize("variable, value, message", [
    ("SEED", "1.5", "SEED=1.5: must be a whole number from 0 to 4294967295"),
    ("SEED", "-3", "SEED=-3: must be a whole number from 0 to 4294967295"),
    ("NEXP", "0", "NEXP=0: must be a whole number from 1 to 100000"),
    ("NEXP", "two", "NEXP=two: must be a whole number from 1 to 100000"),
    ("SEED", "4294967295", "seeds 4294967295..4294967296 of NEXP=2 runs pass the largest seed 4294967295; use a "
                           "smaller SEED"),
    ("ON_EXISTING", "overwrite", "ON_EXISTING=overwrite must be next or refuse"),
    ("NODE_RANK", "1", "NODE_RANK=1: must be a whole number from 0 to 0"),  # cpu_micro has one node
])
def test_bad_numbers_and_choices_are_one_line_and_start_nothing(tmp_path, cpu_env, variable, value, message):
    env = {**cpu_env, "NEXP": "2", "LOGDIR": str(tmp_path / "logs"), "DATADIR": str(tmp_path / "data"),
           variable: value}
    proc = wrapper("cpu_micro", env)
    assert proc.returncode == 2
    assert single_line_error(proc.stderr) == f"run_and_time: {message}"
    assert not list(tmp_path.rglob("result_*")) and not (tmp_path / "data").exists()


@pytest.mark.parametrize("system, message", [
    ("no_such_system", "no such descriptor; available: "),
    (str(REPO / "systems"), "is a folder, not a descriptor; give a descriptor file"),
])
def test_a_missing_descriptor_is_one_line(tmp_path, cpu_env, system, message):
    proc = wrapper(system, dict(cpu_env, LOGDIR=str(tmp_path / "logs")))
    assert proc.returncode == 2 and message in single_line_error(proc.stderr)  # no "unbound variable" after it


@pytest.mark.parametrize("script", ["run_and_time.sh", "run_and_time.sbatch"])
def test_help_prints_the_usage_and_an_unknown_system_is_one_line_and_exit_2(tmp_path, cpu_env, script):
    env = {k: v for k, v in cpu_env.items() if not k.startswith("SLURM_")} | {"LOGDIR": str(tmp_path / "logs")}
    helped = subprocess.run([str(REPO / script), "--help"], env=env, capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0 and helped.stderr == "", helped.stderr
    assert helped.stdout.startswith(("Launch and time MLPerf BERT runs", "Slurm batch script for run_and_time.sh"))
    assert "Exit status" in helped.stdout and "run_and_time" in helped.stdout
    unknown = subprocess.run([str(REPO / script), "nosuch"], env=env, capture_output=True, text=True, timeout=60)
    assert unknown.returncode == 2 and "nosuch.json: no such descriptor" in single_line_error(unknown.stderr)
    assert not (tmp_path / "logs").exists()


def test_a_results_folder_that_takes_no_file_fails_at_once(tmp_path, cpu_env, small_dataset):
    """sysfs refuses new files even to root, so /sys/kernel is a results folder that exists and takes no file
    wherever the tests run (a folder without write permission would not do as root): the pre-flight finds no room
    there, before a result file is claimed."""
    if not Path("/sys/kernel").is_dir():
        pytest.skip("no /sys/kernel here")
    system = load_descriptor("cpu_micro").variant(name="kernel").write(tmp_path / "systems").path
    env = dict(cpu_env, NEXP="1", SEED="1", LOGDIR="/sys", DATADIR=str(small_dataset))
    proc = wrapper(system, env, timeout=60)
    assert proc.returncode == 2
    assert single_line_error(proc.stderr) == ("pre-flight: 0.0 MiB free for the logs (at least 64 MiB): free space "
                                              "there, or set LOGDIR to another folder")


def test_of_two_wrappers_started_together_with_refuse_only_one_runs(tmp_path, cpu_env, small_dataset):
    logdir = tmp_path / "logs"
    env = dict(cpu_env, NEXP="1", SEED="1", LOGDIR=str(logdir), DATADIR=str(small_dataset), ON_EXISTING="refuse")
    env |= fake_launcher(tmp_path / "bin", f"sleep 4; echo '{mllog_line('run_stop', status='success')}' > \"$log\"")
    procs = [subprocess.Popen([str(REPO / "run_and_time.sh"), "cpu_micro"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    ended = [p.communicate(timeout=120) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 2], ended
    refused = next(err for p, (_, err) in zip(procs, ended) if p.returncode == 2)
    line = single_line_error(refused)
    assert ("is starting runs in" in line and "with ON_EXISTING=refuse" in line) or "already holds results" in line
    assert sorted(p.name for p in (logdir / "cpu_micro").iterdir()) == ["result_0.txt"]  # the lock is gone too
    again = wrapper("cpu_micro", env)
    assert again.returncode == 2 and "already holds results (result_0.txt)" in single_line_error(again.stderr)


@pytest.mark.parametrize("target", ["/nonexistent/log", "/dev/zero"])
def test_a_link_planted_at_a_partial_log_takes_no_run(tmp_path, cpu_env, small_dataset, target):
    """A dangling link at result_0.txt.partial made the start refuse ("cannot create a result file ... set LOGDIR")
    though the folder is writable; a link to /dev/zero was taken as the run's log (noclobber writes through a link
    to a device) and sealing it read without end. Either is a taken name: the run logs to result_1.txt."""
    logdir = tmp_path / "logs"
    (logdir / "cpu_micro").mkdir(parents=True)
    planted = logdir / "cpu_micro" / "result_0.txt.partial"
    planted.symlink_to(target)
    env = dict(cpu_env, NEXP="1", SEED="1", LOGDIR=str(logdir), DATADIR=str(small_dataset))
    env |= fake_launcher(tmp_path / "bin", f"echo '{mllog_line('run_stop', status='success')}' > \"$log\"")
    proc = wrapper("cpu_micro", env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(p.name for p in (logdir / "cpu_micro").iterdir()) == ["result_0.txt.partial", "result_1.txt"]
    assert planted.is_symlink() and os.readlink(planted) == target


def test_a_descriptor_path_and_site_folders_relative_to_the_users_folder_are_the_users(tmp_path, cpu_env,
                                                                                        small_dataset):
    """The wrapper works in the repository: `systems/cpu_micro.json` ran the repository's file, not the one in the
    folder the command was given in, and MLPERF_BERT_SYSTEMS=site1 was "not a folder"."""
    prepared = {"dataset.dir": str(small_dataset), "dataset.synthetic": None}
    load_descriptor("cpu_micro").variant({**prepared, "seed": 4242}).write(tmp_path / "systems")
    load_descriptor("cpu_micro").variant(prepared, name="site_micro").write(tmp_path / "site1")
    for system, extra, command in [
        ("systems/cpu_micro.json", {}, f"--system {tmp_path / 'systems' / 'cpu_micro.json'} --seed 4242 "),
        ("site_micro", {"MLPERF_BERT_SYSTEMS": "site1"}, f"--system {tmp_path / 'site1' / 'site_micro.json'} "),
    ]:
        proc = subprocess.run([str(REPO / "run_and_time.sh"), "--dry-run", system], env={**cpu_env, **extra},
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert f"python -m bert.cli train {command}" in proc.stdout, proc.stdout


def _cpu_micro_from(tmp_path, small_dataset, **run) -> Path:
    """cpu_micro reading the small dataset as a prepared one (no synthetic corpus to write), with `run` changes."""
    return load_descriptor("cpu_micro").variant({"dataset.dir": str(small_dataset), "dataset.synthetic": None, **run},
                                            name="prepared").write(tmp_path / "systems").path


@pytest.mark.parametrize("case", ["cuda", "dataset", "checkpoint"])
def test_a_start_the_pre_flight_refuses_is_one_line_with_no_result_and_nothing_written(tmp_path, cpu_env,
                                                                                         small_dataset, case):
    """A CUDA descriptor on this CPU build of torch, a missing dataset, a missing checkpoint: each is one line and
    exit status 2 before any run, even of NEXP=3: no RESULT line, no log, no results folder."""
    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()
    env = dict(cpu_env, NEXP="3", LOGDIR=str(tmp_path / "logs"), DATADIR=str(small_dataset),
               CHECKPOINTDIR=str(checkpoints))
    if case == "cuda":  # a dataset and a file where the checkpoint should be (both unfit for it: lines of their own)
        (checkpoints / "model.pt").write_bytes(b"")
        # In the open division: a closed run would also be told that this dataset and checkpoint are not official.
        system = load_descriptor("h200_1x1").variant(description={"division": "open"}).write(tmp_path / "systems").path
        expected = (f"pre-flight: h200_1x1 runs on CUDA (run.device) but torch {torch.__version__} here is a build "
                    "without CUDA: run in a CUDA container")
    elif case == "dataset":
        env["DATADIR"] = str(tmp_path / "no_data")
        system = _cpu_micro_from(tmp_path, small_dataset)
        expected = f"pre-flight: the dataset folder {tmp_path / 'no_data'} does not exist here (DATADIR, else "
    else:
        system = _cpu_micro_from(tmp_path, small_dataset, init_checkpoint="phase1/model.pt")
        expected = (f"pre-flight: the checkpoint to start from: CHECKPOINTDIR={checkpoints} holds no model.pt: "
                    "convert the MLPerf phase-1 checkpoint there")
    proc = wrapper(system, env)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    first = proc.stderr.splitlines()[0] if case == "cuda" else single_line_error(proc.stderr)
    assert first.startswith(expected) and all(line.startswith("pre-flight: ") for line in proc.stderr.splitlines())
    assert "RESULT" not in proc.stdout and not (tmp_path / "logs").exists()


def _unusable(tmp_path: Path, small_dataset: Path, case: str, env: dict) -> tuple[dict, str]:
    """The run changes and the environment of one input the first rank would refuse, and the start of the
    pre-flight's line for it."""
    if case == "a shard newer than the manifest":
        data = copy_dataset(small_dataset, tmp_path / "data")
        shard = sorted((data / "train").glob("*.hdf5"))[1]
        os.utime(shard, ns=(time.time_ns(), time.time_ns()))  # a copy that did not keep the times (cp, not cp -a)
        return {"dataset.dir": str(data)}, f"pre-flight: {shard}: modified after {data / 'manifest.json'} was written"
    if case == "a corrupt checkpoint":
        checkpoint = tmp_path / "checkpoints" / "model.pt"
        checkpoint.write_bytes(random.Random(4).randbytes(4096))
        line = f"pre-flight: the checkpoint to start from (run.init_checkpoint): {checkpoint}: not a PyTorch checkpoint"
        return {"init_checkpoint": "phase1/model.pt"}, line
    if case == "fp8 without torchao or Transformer Engine":
        hidden = tmp_path / "hidden" / "torchao"
        hidden.mkdir(parents=True)
        (hidden / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(hidden.parent), env.get("PYTHONPATH")]))
        return {"precision": "fp8"}, 'pre-flight: run.precision "fp8" needs torchao'
    env["CXX"] = "/bin/false"  # the compiler inductor takes: one that fails
    return {"compile": "required"}, ('pre-flight: encoder layers (run.compile) failed to compile and run.compile is '
                                     '"required": InvalidCxxCompiler: No working C++ compiler found')


UNUSABLE = ["a shard newer than the manifest", "a corrupt checkpoint", "fp8 without torchao or Transformer Engine",
            "compile required with a compiler that fails"]


@pytest.mark.parametrize("cases", [[case] for case in UNUSABLE] + [UNUSABLE], ids=[*UNUSABLE, "all four"])
def test_what_the_first_rank_would_refuse_the_pre_flight_refuses_first(tmp_path, cpu_env, small_dataset, cases):
    """Each existed and passed the pre-flight, so NEXP runs each started, failed the same way, printed a RESULT line
    and published an aborted log, and the wrapper exited 1. Now each is one line of the pre-flight (all four at
    once: four lines) and exit status 2 before any run: no RESULT line, no results folder."""
    (tmp_path / "checkpoints").mkdir()
    env = dict(cpu_env, NEXP="3", LOGDIR=str(tmp_path / "logs"), CHECKPOINTDIR=str(tmp_path / "checkpoints"))
    changes, expected = {}, []
    for case in cases:
        change, line = _unusable(tmp_path, small_dataset, case, env)
        changes |= change
        expected.append(line)
    proc = wrapper(_cpu_micro_from(tmp_path, small_dataset, **changes), env)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stderr.splitlines()
    assert len(lines) == len(expected) and all(line.startswith(start) for line, start in zip(lines, expected)), lines
    assert "RESULT" not in proc.stdout and not (tmp_path / "logs").exists()


def test_an_unknown_option_is_one_line_naming_the_one_meant(tmp_path, cpu_env):
    proc = subprocess.run([str(REPO / "run_and_time.sh"), "--dryrun", "cpu_micro"], env=cpu_env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert single_line_error(proc.stderr) == ("run_and_time: unknown option --dryrun; did you mean --dry-run? the "
                                              "options are --dry-run and --help")


def _path_without_slurm(folder: Path) -> str:
    """A PATH that has this machine's commands but Slurm's (a host without Slurm)."""
    folder.mkdir()
    for directory in ("/usr/local/bin", "/usr/bin", "/bin"):
        for command in Path(directory).iterdir() if Path(directory).is_dir() else []:
            if command.name not in ("sbatch", "srun", "salloc", "scontrol") and not (folder / command.name).exists():
                (folder / command.name).symlink_to(command)
    return str(folder)


def test_a_host_without_slurm_is_one_line_exit_2_for_sbatch_and_srun(tmp_path, cpu_env):
    env = dict(cpu_env, PATH=_path_without_slurm(tmp_path / "bin"), LOGDIR=str(tmp_path / "logs"))
    env.pop("SLURM_JOB_ID", None)
    submitted = subprocess.run([str(REPO / "run_and_time.sbatch"), "cpu_micro"], env=env, capture_output=True,
                               text=True, timeout=120)
    assert submitted.returncode == 2 and submitted.stdout == ""
    assert single_line_error(submitted.stderr) == (
        "run_and_time.sbatch: sbatch is not on PATH: run it on a Slurm login node (or put Slurm's commands on PATH); "
        "without Slurm, start ./run_and_time.sh cpu_micro on each host instead")
    in_job = wrapper("cpu_micro", dict(env, SLURM_JOB_ID="7"))
    assert in_job.returncode == 2 and "RESULT" not in in_job.stdout
    assert single_line_error(in_job.stderr) == (
        "run_and_time: SLURM_JOB_ID=7 is set but srun is not on PATH: run inside a Slurm job on a node that has "
        "Slurm's commands, or unset SLURM_JOB_ID to start the ranks with torchrun")
    assert not (tmp_path / "logs").exists()

"""The Slurm allocation against a descriptor: the shape to ask for, the one-line refusal of a job that got
something else, and the rendezvous at the first node's address."""

import os
import subprocess
import sys

import pytest

from bert.launch.slurm import (
    Allocation,
    allocation_problem,
    first_node_address,
    per_node_counts,
    sbatch_options,
    script_time_limit,
    slurm_time,
    time_check_line,
    time_limit_seconds,
    time_option,
)
from bert.system import load_descriptor
from tests.helpers.repo import REPO


def test_the_shape_to_ask_for_follows_the_descriptor():
    assert sbatch_options(load_descriptor("dgxa100_128x8_adam")) == ["--nodes=128", "--ntasks-per-node=8",
                                                                 "--gpus-per-node=8"]
    assert sbatch_options(load_descriptor("cpu_micro")) == ["--nodes=1", "--ntasks-per-node=1"]  # no GPU to refuse


def test_slurms_per_node_lists():
    assert per_node_counts("8") == [8]
    assert per_node_counts("72(x2),36") == [72, 72, 36]
    with pytest.raises(ValueError, match="'eight' is not a Slurm per-node count list"):
        per_node_counts("eight")


def _allocation(**env) -> Allocation:
    return Allocation.from_env({"SLURM_JOB_ID": "7", **env})


@pytest.mark.parametrize(("env", "found"), [
    ({"SLURM_JOB_NUM_NODES": "64"}, "64 node(s) but dgxa100_128x8_adam describes 128"),
    ({"SLURM_JOB_NUM_NODES": "128", "SLURM_NTASKS_PER_NODE": "4"},
     "4 task(s) per node but dgxa100_128x8_adam runs 8 process(es) per node"),
    ({"SLURM_JOB_NUM_NODES": "128", "SLURM_JOB_CPUS_PER_NODE": "128(x127),4"},
     "4 CPU(s) on a node, too few for the 8 process(es) per node"),
    ({"SLURM_JOB_NUM_NODES": "128", "SLURM_GPUS_ON_NODE": "4"}, "4 GPU(s) per node, too few for the 8 process(es)"),
])
def test_an_allocation_that_cannot_run_the_descriptor_is_named_with_the_fix(env, found):
    problem = allocation_problem(load_descriptor("dgxa100_128x8_adam"), _allocation(**env))
    assert problem.startswith(f"the allocation has {found}")
    assert problem.endswith("submit with ./run_and_time.sbatch dgxa100_128x8_adam (or: sbatch --nodes=128 "
                            "--ntasks-per-node=8 --gpus-per-node=8 run_and_time.sbatch dgxa100_128x8_adam)")
    assert "\n" not in problem


def test_an_allocation_that_fits_or_says_nothing_passes():
    system = load_descriptor("dgxa100_128x8_adam")
    assert allocation_problem(system, _allocation(SLURM_JOB_NUM_NODES="128", SLURM_NTASKS_PER_NODE="8",
                                                  SLURM_JOB_CPUS_PER_NODE="256(x128)", SLURM_GPUS_ON_NODE="8")) is None
    assert allocation_problem(system, _allocation()) is None  # a dry run's SLURM_JOB_ID=0
    # GPUs are counted only for CUDA descriptors: a CPU one runs on a node that has none to give.
    assert allocation_problem(load_descriptor("cpu_micro"), _allocation(SLURM_GPUS_ON_NODE="0")) is None


def test_the_rendezvous_is_the_first_nodes_address():
    answers = {("show", "hostnames", "gpu-a[017-018]"): "gpu-a017\ngpu-a018\n",
               ("show", "node", "--oneliner", "gpu-a017"): "NodeName=gpu-a017 Arch=x86_64 NodeAddr=10.1.0.17 "
                                                          "NodeHostName=gpu-a017 State=ALLOCATED\n"}
    assert first_node_address("gpu-a[017-018]", lambda args: answers[tuple(args)]) == "10.1.0.17"


def test_the_cli_refuses_in_one_line_and_exports_the_shape():
    env = dict(os.environ, SLURM_JOB_ID="7", SLURM_JOB_NUM_NODES="2")
    env.pop("SLURM_JOB_NODELIST", None)
    refused = subprocess.run([sys.executable, "-m", "bert.cli", "system", "allocation", "cpu_micro"], env=env,
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0
    assert refused.stderr.splitlines() == [
        "Error: the allocation has 2 node(s) but cpu_micro describes 1; submit with ./run_and_time.sbatch "
        "cpu_micro (or: sbatch --nodes=1 --ntasks-per-node=1 run_and_time.sbatch cpu_micro)"]
    shape = subprocess.run([sys.executable, "-m", "bert.cli", "system", "env", "dgxa100_8x8"], capture_output=True,
                           text=True, timeout=120, check=True)
    assert "SBATCH_OPTIONS='--nodes=8 --ntasks-per-node=8 --gpus-per-node=8'" in shape.stdout.splitlines()


def test_slurms_time_limits_and_the_option_that_asks_for_one():
    seconds = {"120": 7200, "30:15": 1815, "2:00:00": 7200, "1-12": 129600, "1-12:30": 131400,
               "1-00:00:01": 86401, "UNLIMITED": None, "infinite": None}
    assert {text: time_limit_seconds(text) for text in seconds} == seconds
    with pytest.raises(ValueError, match="'two hours' is not a Slurm time limit like 120, 2:00:00 or 1-12:00:00"):
        time_limit_seconds("two hours")
    assert slurm_time(7200) == "2:00:00" and slurm_time(7201) == "2:01:00" and slurm_time(86400 * 2.5) == "2-12:00:00"
    assert time_option(["--partition=debug", "--time=1:00:00", "-t", "90"]) == "90"
    assert time_option(["-t30", "--exclusive"]) == "30" and time_option(["--time", "5"]) == "5"
    assert time_option(["--partition=debug"]) is None
    sbatch = (REPO / "run_and_time.sbatch").read_text()
    assert script_time_limit(sbatch) == "02:00:00" and script_time_limit("#!/bin/bash\necho\n") is None


def test_the_time_check_says_how_many_runs_the_limit_lets_end_and_what_to_ask_for():
    limit = "2:00:00", "#SBATCH --time"
    assert time_check_line(10, 3823.2, *limit) == (
        "time: NEXP=10 run(s) x 63.7 min predicted (mlperf-bert simulate; start-up included) = 637.2 min, "
        "MORE than the job's time limit 2:00:00 (#SBATCH --time): Slurm would end the job after about 1 run(s); pass "
        "--time=13:17:00 to run_and_time.sbatch, or lower NEXP")
    assert time_check_line(2, 3000, *limit).endswith("= 100.0 min, within the job's time limit 2:00:00 "
                                                     "(#SBATCH --time)")
    assert time_check_line(99, 3000, "UNLIMITED", "job 7's TimeLimit").endswith("within the job's time limit UNLIMITED "
                                                                                  "(job 7's TimeLimit)")
    assert time_check_line(3, None, *limit, "run.performance is not set") == (
        "time: no prediction of a run's length (run.performance is not set); the job's time limit is 2:00:00 "
        "(#SBATCH --time)")

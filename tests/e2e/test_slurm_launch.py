"""run_and_time.sbatch under a stand-in Slurm: srun and scontrol are scripts that record what they were given."""

import os
import stat
import subprocess
from pathlib import Path

from tests.conftest import REPO, mllog_line


def _fake(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/usr/bin/env bash\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_sbatch_script_starts_the_ranks_with_srun_and_slurms_rendezvous(tmp_path, small_dataset):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # A long host list: reading only its first line must not kill scontrol with SIGPIPE (status 141).
    _fake(bin_dir, "scontrol", 'printf "gpu-a017\\ngpu-a018\\n"; seq 1 200000 | sed "s/^/gpu-b/"')
    # srun records what it was given and leaves a finished log, as the ranks would.
    _fake(bin_dir, "srun", f'printf "%s\\n" "$@" > {tmp_path}/srun_args; env > {tmp_path}/srun_env\n'
          'while [[ $1 != --log-file ]]; do shift; done\n'
          f"echo '{mllog_line('run_stop', status='success')}' > \"$2\"")
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", SLURM_JOB_ID="4242",
               SLURM_JOB_NODELIST="gpu-a[017-018]", SLURM_JOB_NUM_NODES="1", SLURM_SUBMIT_DIR=str(REPO),
               SEED="41", LOGDIR=str(tmp_path / "logs"), DATADIR=str(small_dataset))
    env.pop("MASTER_ADDR", None)
    proc = subprocess.run([str(REPO / "run_and_time.sbatch"), "cpu_micro"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert any(line.startswith("RESULT,bert,41,") for line in proc.stdout.splitlines())
    args = (tmp_path / "srun_args").read_text().splitlines()
    assert args[:4] == ["--nodes=1", "--ntasks-per-node=1", "--kill-on-bad-exit=1", "python"]
    assert args[4:7] == ["-m", "bert.cli", "train"]
    assert args[args.index("--seed") + 1] == "41"
    # The run logs to a partial name, published as result_0.txt when it ends.
    assert args[args.index("--log-file") + 1] == str(tmp_path / "logs" / "cpu_micro" / "result_0.txt.partial")
    assert [p.name for p in (tmp_path / "logs" / "cpu_micro").iterdir()] == ["result_0.txt"]
    srun_env = dict(line.split("=", 1) for line in (tmp_path / "srun_env").read_text().splitlines() if "=" in line)
    assert srun_env["MASTER_ADDR"] == "gpu-a017" and srun_env["MASTER_PORT"] == "29500"

    wrong = dict(env, SLURM_JOB_NUM_NODES="2")
    refused = subprocess.run([str(REPO / "run_and_time.sbatch"), "cpu_micro"], env=wrong, capture_output=True,
                             text=True, timeout=300)
    assert refused.returncode == 2 and "sbatch --nodes=1" in refused.stderr

"""The launch plan: what run_and_time.sh --dry-run prints and what it starts."""

import json
import os
import subprocess

from click.testing import CliRunner

from bert.cli import main
from bert.cli.simulate import predicted_job_seconds
from bert.launch.plan import Container, TrainArgs, build_plan, launch_command, missing_mounts, run_mounts
from bert.system import load_descriptor
from tests.helpers.repo import REPO


def _dry_run(system: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / "run_and_time.sh"), "--dry-run", system], env=dict(os.environ, SEED="5", **env),
                          capture_output=True, text=True, timeout=300)


def test_the_plan_of_the_papers_system_under_slurm(tmp_path):
    """What the dry run prints (run_and_time.sh's own part: the site test below), in this process."""
    proc = CliRunner().invoke(main, ["system", "plan", "dgxa100_128x8_adam", "--launcher", "slurm", "--seed", "5",
                                     "--master-addr", "node001", "--log-file", str(tmp_path / "x" / "result_0.txt")])
    assert proc.exit_code == 0, proc.output[-2000:]
    lines = proc.output.splitlines()
    assert "= 1024 ranks" in lines[0] and "16 per rank" in lines[0]
    assert any("128 node group(s) for presorting" in line for line in lines)
    assert any("DDP communication hook BucketwiseBeforeAllreduce" in line for line in lines)
    srun = next(line for line in lines if line.startswith("command"))
    assert "srun --nodes=128 --ntasks-per-node=8 --kill-on-bad-exit=1 python -m bert.cli train" in srun
    assert "--seed 5" in srun
    assert "env: MASTER_ADDR=node001" in lines and "env: NCCL_IB_HCA=mlx5" in lines
    ranks = [line.split() for line in lines if line.startswith("  rank ")]
    assert len(ranks) == 1024
    assert ranks[-1][:8] == ["rank", "1023", "node", "127", "local", "7", "group", "127"]
    run_s, _, counted = predicted_job_seconds(load_descriptor("dgxa100_128x8_adam"))  # start-up included
    assert lines[-1].startswith(f"time: NEXP=1 run(s) x {run_s / 60:.1f} min predicted (mlperf-bert simulate; "
                                f"{counted})")
    assert not list(tmp_path.iterdir())  # nothing started, nothing written


def test_plain_hosts_need_the_node_rank_and_each_node_gets_its_command(tmp_path):
    """The dry run shows every node's command anywhere; the pre-flight needs the nodes (and a real start too)."""
    shown = _dry_run("dgxa100_8x8", LOGDIR=str(tmp_path))
    assert shown.returncode == 0, shown.stderr
    commands = [line for line in shown.stdout.splitlines() if line.startswith("command (node ")]
    assert len(commands) == 8 and "--node_rank=7 '--master_addr=<address of node 0>'" in commands[7]
    assert shown.stderr.splitlines() == [
        "run_and_time: pre-flight not run: start the dry run on every host with NODE_RANK=<0..7> and "
        "MASTER_ADDR=<node 0's address>, or inside a Slurm allocation, to check the nodes"]
    refused = subprocess.run([str(REPO / "run_and_time.sh"), "dgxa100_8x8"], capture_output=True, text=True,
                             env=dict(os.environ, LOGDIR=str(tmp_path)), timeout=300)
    assert refused.returncode == 2 and "NODE_RANK" in refused.stderr and "MASTER_ADDR" in refused.stderr
    assert not list(tmp_path.iterdir())
    system = load_descriptor("dgxa100_8x8")
    plan = build_plan(system, TrainArgs(5, tmp_path / "log.txt", tmp_path), "torchrun", 0, master_addr="host0")
    assert len(plan.commands) == 8 and len(plan.ranks) == 64
    assert "--nnodes=8 --node_rank=3 --master_addr=host0 --master_port=29500 --nproc_per_node=8" in " ".join(
        plan.commands[3])
    assert plan.env["NCCL_IB_HCA"] == "mlx5" and "MASTER_ADDR" not in plan.env  # torchrun passes its own


def test_every_shard_goes_to_exactly_one_rank(tmp_path, small_dataset):
    system = load_descriptor("cpu_micro").variant({"processes_per_node": 2})
    plan = build_plan(system, TrainArgs(9, tmp_path / "log.txt", small_dataset), "torchrun", num_shards=4)
    assert [(s.rank, s.node, s.local_rank, s.group) for s in plan.ranks] == [(0, 0, 0, 0), (1, 0, 1, 0)]
    dealt = sorted(i for slot in plan.ranks for i in slot.shards)
    assert dealt == [0, 1, 2, 3] and all(len(slot.shards) == 2 for slot in plan.ranks)
    single = launch_command(system, TrainArgs(9, tmp_path / "log.txt", small_dataset), "torchrun")
    assert single[:6] == ["python", "-m", "bert.launch.torchrun", "--standalone", "--nnodes=1",
                          "--nproc_per_node=2"]


def test_one_process_starts_without_the_torchrun_agent(tmp_path, small_dataset):
    system = load_descriptor("cpu_micro").variant({"processes_per_node": 1})
    command = launch_command(system, TrainArgs(9, tmp_path / "log.txt", small_dataset), "torchrun")
    assert command[:4] == ["python", "-m", "bert.cli", "train"] and "torch.distributed.run" not in command


def test_a_site_descriptor_outside_the_repository_in_a_slurm_dry_run(tmp_path):
    """8 nodes kept in a site folder, inheriting the published dgxh100_1x8 by name: the dry run shows the container
    and its mounts, the pre-flight in it, the page cache dropped on each node, and NEXP x the predicted run against
    the job's time limit."""
    site, data, checkpoints = tmp_path / "site" / "systems", tmp_path / "data", tmp_path / "phase1"
    site.mkdir(parents=True)
    (site / "site_h100_8x8.json").write_text(json.dumps({
        "base": "dgxh100_1x8", "system": {"system_name": "Site DGX H100 (8 nodes)", "number_of_nodes": "8"},
        "run": {"global_batch_size": 3072, "rcp_hyperparameters": True, "performance": {"inter_node_gb_s": 400.0}}}))
    env = {"SLURM_JOB_ID": "0", "MLPERF_BERT_SYSTEMS": str(site), "CONT": "nvcr.io#site/bert:25.04",
           "MOUNTS": "/scratch:/scratch", "DROP_CACHES": "1", "NEXP": "100", "SBATCH_TIMELIMIT": "0:30:00",
           "DATADIR": str(data), "CHECKPOINTDIR": str(checkpoints), "LOGDIR": str(tmp_path / "logs")}
    proc = _dry_run("site_h100_8x8", **env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    # MOUNTS, then this harness, and the data, checkpoint, results and site folders through the one above them
    mounts = sorted(line.removeprefix("  mount: ") for line in lines if line.startswith("  mount: "))
    assert mounts == sorted(["/scratch:/scratch", f"{REPO}:{REPO}", f"{tmp_path}:{tmp_path}"])
    srun = next(line for line in lines if line.startswith("command (every node"))
    assert "srun --nodes=8 --ntasks-per-node=8 --kill-on-bad-exit=1 '--container-image=nvcr.io#site/bert:25.04' " \
           "--container-mounts=/scratch:/scratch," in srun
    assert f" --container-workdir={REPO} --container-env=MASTER_ADDR,MASTER_PORT python -m bert.cli train --system " \
           f"{site / 'site_h100_8x8.json'} --seed 5 " in srun and f"--checkpoint-dir {checkpoints}" in srun
    container_options = srun.split("--kill-on-bad-exit=1 ")[1].split(" python ")[0]
    assert any(line.startswith("pre-flight (every node (one task each), before the first run): srun --nodes=8 "
                               f"--ntasks=8 --ntasks-per-node=1 {container_options} python -m bert.cli system "
                               "preflight") for line in lines)
    assert any(line.startswith("cache clear (before each run, on each of the 8 node(s), one task each, outside the "
                               "container): srun --nodes=8 --ntasks=8 --ntasks-per-node=1 bash -c ") and
               line.endswith("cache_clear logged true only when all 8 say cleared, else false with a line naming the "
                             "others") for line in lines)
    time_line = lines[-1]
    assert time_line.startswith("time: NEXP=100 run(s) x ") and "MORE than the job's time limit 0:30:00 " \
           "(SBATCH_TIMELIMIT): Slurm would end the job after about " in time_line
    assert proc.stderr.splitlines() == ["run_and_time: pre-flight not run: no Slurm allocation here; run the dry run "
                                        "inside one (salloc) to check its nodes"]
    site_system = load_descriptor(site / "site_h100_8x8.json")
    missing = Container("image", run_mounts(site_system.path, site_system.init_checkpoint_path(checkpoints),
                                            TrainArgs(5, tmp_path / "logs" / "r.txt", data, checkpoint_dir=checkpoints),
                                            "/scratch:/scratch"))
    assert missing_mounts(missing) == ["/scratch"]

"""run_and_time.sbatch under a real Slurm (tests/cluster/slurm_local.sh): slurmctld and two slurmd on this host,
or each daemon on a host of its own (tests/cluster/netns.py). srun's own environment places the ranks across
hosts, the logs pass the official checker, scancel ends a run with an aborted, published log, and an allocation
that cannot run the descriptor is refused."""

import os
import time

from compliance.checkers import compliance_check
from tests.cluster.nodes import assert_ranks_follow_the_plan, micro_system
from tests.cluster.slurm import slurm_cluster
from tests.helpers.faults import assert_log_aborted, page_cache_tools
from tests.helpers.repo import REPO

JOB_TIMEOUT_S = 180


def job_env(tmp_path, data, **extra) -> dict:
    return dict(os.environ, OMP_NUM_THREADS="1", SEED="41", LOGDIR=str(tmp_path / "logs"), DATADIR=str(data),
                **extra)


def test_sbatch_runs_cpu_micro_to_a_compliant_log(slurm, tmp_path, small_dataset):
    """DROP_CACHES=1 where the page cache may not be dropped: the run goes on, its log says false and why."""
    out = tmp_path / "job.out"
    env = job_env(tmp_path, small_dataset, DROP_CACHES="1") | page_cache_tools(tmp_path / "bin", drops=False)
    job = slurm.submit("sbatch", f"--output={out}", "run_and_time.sbatch", "cpu_micro", env=env, cwd=REPO)
    ended = slurm.wait(job, JOB_TIMEOUT_S)
    output = out.read_text()
    assert (ended.state, ended.exit_code) == ("COMPLETED", "0:0"), output[-3000:]
    assert any(line.startswith("RESULT,bert,41,") for line in output.splitlines())
    results = tmp_path / "logs" / "cpu_micro"
    assert [p.name for p in results.iterdir()] == ["result_0.txt"]
    assert compliance_check(results / "result_0.txt").passed
    assert "rank 0 of 1: node 0, local rank 0 of 1," in output
    assert '"key": "cache_clear", "value": false' in (results / "result_0.txt").read_text()
    assert "run_and_time: cache_clear is logged as false: the page cache was not dropped on " in output


def test_a_two_node_job_on_hosts_of_their_own_places_its_ranks_with_srun(hosts, tmp_path, tmp_path_factory,
                                                                         small_dataset):
    """slurmctld and two slurmd each on a host of its own, each node's NodeAddr its host's address; 2 nodes x 2
    ranks submitted by ./run_and_time.sbatch with the descriptor's shape: the pre-flight runs on both nodes (one
    srun task each) with the rendezvous at the first node's NodeAddr, and srun's SLURM_PROCID, SLURM_LOCALID,
    SLURM_NTASKS and node list place every rank where the launch plan says, with its shards. DROP_CACHES=1: both
    nodes drop their page cache (one srun task each), and the log says so. LOGDIR and DATADIR are relative to the
    folder it is submitted from."""
    network = hosts(3, ["ctl", "node0", "node1"])
    # A short folder: slurmstepd's sockets below it must fit a Unix socket path (108 bytes).
    with slurm_cluster(tmp_path_factory.mktemp("slurm"), network=network) as slurm:
        system = micro_system(tmp_path, "micro_2x2", nodes=2, per_node=2)
        out = tmp_path / "job.out"
        env = job_env(tmp_path, small_dataset, DROP_CACHES="1") | page_cache_tools(tmp_path / "bin", drops=True)
        # Folders relative to where it is submitted: they meant the repository's, where the job starts.
        env |= {"LOGDIR": "logs", "DATADIR": os.path.relpath(small_dataset, tmp_path)}
        job = slurm.submit(str(REPO / "run_and_time.sbatch"), str(system.path), f"--output={out}", env=env,
                           cwd=tmp_path)
        ended = slurm.wait(job, JOB_TIMEOUT_S)
    output = out.read_text()
    assert (ended.state, ended.exit_code) == ("COMPLETED", "0:0"), output[-3000:]
    assert (ended.fields["NodeList"], ended.fields["NumNodes"], ended.fields["NumTasks"]) == ("node[0-1]", "2", "4")
    assert "pre-flight: 2 node(s) ready: " in output
    assert f"pre-flight: node 1 (node1): node 0 at {network.hosts[1].address}:{system.run.launch.master_port} " \
           "accepts the start" in output
    assert compliance_check(tmp_path / "logs" / "micro_2x2" / "result_0.txt").passed
    assert_ranks_follow_the_plan(output, system, 41, small_dataset)
    assert '"key": "cache_clear", "value": true' in (tmp_path / "logs" / "micro_2x2" / "result_0.txt").read_text()


def test_scancel_aborts_the_run_and_keeps_every_result(slurm, tmp_path, small_dataset):
    system = micro_system(tmp_path, "micro_long", nodes=1, per_node=1, max_samples=10**7,
                          **{"eval.target_accuracy": 0.99})
    results = tmp_path / "logs" / "micro_long"
    results.mkdir(parents=True)
    (results / "result_0.txt").write_text("an earlier result\n")
    out = tmp_path / "job.out"
    job = slurm.submit("sbatch", f"--output={out}", "run_and_time.sbatch", str(system.path),
                       env=job_env(tmp_path, small_dataset), cwd=REPO)
    partial = results / "result_1.txt.partial"
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while not (partial.is_file() and "block_start" in partial.read_text()):
        assert time.monotonic() < deadline and slurm.job(job).state in ("PENDING", "RUNNING"), out.read_text()
        time.sleep(0.2)
    assert slurm.run("scancel", job).returncode == 0
    ended = slurm.wait(job, JOB_TIMEOUT_S)
    output = out.read_text()
    # run_and_time.sh ended by itself (status 128 + SIGTERM), before Slurm's KillWait would SIGKILL it.
    assert (ended.state, ended.exit_code) == ("CANCELLED", "143:0"), output[-3000:]
    assert "run_and_time: stopped by SIGTERM after 1 of 1 run(s)" in output
    assert sorted(p.name for p in results.iterdir()) == ["result_0.txt", "result_1.txt"]
    assert (results / "result_0.txt").read_text() == "an earlier result\n"
    assert_log_aborted(results / "result_1.txt", "SIGTERM received")


def test_an_allocation_that_cannot_run_the_descriptor_is_refused(slurm, tmp_path, small_dataset):
    env = job_env(tmp_path, small_dataset)
    fix = "submit with ./run_and_time.sbatch cpu_micro (or: sbatch --nodes=1 --ntasks-per-node=1 run_and_time.sbatch " \
          "cpu_micro)"
    cases = {"--nodes=2": "the allocation has 2 node(s) but cpu_micro describes 1",
             "--ntasks-per-node=2": "the allocation has 2 task(s) per node but cpu_micro runs 1 process(es) per node"}
    for option, found in cases.items():
        out = tmp_path / f"job{option}.out"
        job = slurm.submit("sbatch", option, f"--output={out}", "run_and_time.sbatch", "cpu_micro", env=env, cwd=REPO)
        ended = slurm.wait(job, JOB_TIMEOUT_S)
        assert (ended.state, ended.exit_code) == ("FAILED", "2:0"), out.read_text()
        assert out.read_text().splitlines() == [f"Error: {found}; {fix}"]
    assert not (tmp_path / "logs").exists()

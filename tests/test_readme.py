"""The README's commands run as written on a fresh clone (tests/helpers/readme.py: a copy of the tracked files,
whose site folder holds quick stand-ins for cpu_tiny and cpu_micro). Each line is typed into bash as it stands:
the default run, the ten runs (the session's micro_runs, which the compliance tests share), the dry run of an
8-node system, its Slurm submission (sbatch a stand-in that only records what it was asked: this machine is no
cluster), and the submission commands on the ten runs, `mlperf-bert` found as the README says. The README's
test command, ./run_tests.sh, is what CI runs (.ci/run): the suite does not run itself."""

import subprocess

from compliance.checkers import compliance_check
from tests.helpers.readme import readme_commands
from tests.helpers.repo import REPO

COMMANDS = [
    "./run_and_time.sh",
    "./run_tests.sh",
    "SEED=7 NEXP=10 ./run_and_time.sh cpu_micro",
    "./run_and_time.sh --dry-run dgxa100_8x8",
    "./run_and_time.sbatch dgxa100_8x8",
    "source bootstrap.sh",
    "mlperf-bert check logs/cpu_micro",
    "mlperf-bert package logs/cpu_micro --system cpu_micro -o submission",
    "mlperf-bert score submission",
]


def _sbatch_stand_in(folder):
    """An `sbatch` that records its arguments and answers as sbatch does."""
    folder.mkdir(exist_ok=True)
    (folder / "sbatch").write_text(f'#!/bin/sh\necho "$@" > {folder}/sbatch.args\necho "Submitted batch job 7"\n')
    (folder / "sbatch").chmod(0o755)
    return folder


def _a_quiet_console_that_ends_with_the_summary(run: subprocess.CompletedProcess) -> None:
    """The console of a successful run: short, no MLPerf log line (they are in the result file), a line per eval
    with the time left, and last the summary: the result file, its time, the official checker's verdict, what next."""
    lines = (run.stdout + run.stderr).splitlines()
    assert len(lines) < 40 and not any(":::MLLOG" in line for line in lines), run.stdout
    evals = [line for line in lines if line.startswith("eval at ")]
    assert evals and all(" since run_start" in line and ", target " in line for line in evals)
    assert all(" left" in line for line in evals[:-1]) and "reached;" in evals[-1]
    assert evals[-1].endswith(" since run_start")
    out = run.stdout.splitlines()
    assert out[-3] == "summary (official compliance checker: training 5.0.0):"
    assert "logs/cpu_tiny/result_0.txt: success, mlm accuracy " in out[-2]
    assert out[-2].endswith(" s from run_start to run_stop; checker PASS")
    assert out[-1].startswith("next: mlperf-bert check ") and out[-1].endswith(
        "logs/cpu_tiny  (1 of the 10 runs a submission takes; NEXP=9 ./run_and_time.sh cpu_tiny adds the others)")


def test_the_readmes_commands_run_as_written(readme_checkout, micro_runs, tmp_path):
    assert readme_commands() == COMMANDS  # a new README command needs its line here
    assert (REPO / ".ci" / "run").read_text().splitlines()[-1] == COMMANDS[1]
    checkout = readme_checkout.root

    default = readme_checkout.run(COMMANDS[0])
    assert default.returncode == 0, default.stderr[-3000:]
    assert [line for line in default.stdout.splitlines() if line.startswith("RESULT,bert,")]
    assert compliance_check(checkout / "logs" / "cpu_tiny" / "result_0.txt").passed
    _a_quiet_console_that_ends_with_the_summary(default)

    ten = (checkout / "ten_runs.out").read_text().splitlines()
    assert [line.split(",")[2] for line in ten if line.startswith("RESULT,bert,")] == [str(s) for s in range(7, 17)]
    assert sorted(p.name for p in micro_runs.iterdir()) == [f"result_{i}.txt" for i in range(10)]

    dry = readme_checkout.run(COMMANDS[3])
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert sum(line.startswith("command (node ") for line in dry.stdout.splitlines()) == 8

    bin_dir = _sbatch_stand_in(tmp_path / "bin")
    submitted = readme_checkout.run(COMMANDS[4], PATH=f"{bin_dir}:{readme_checkout.env()['PATH']}")
    assert submitted.returncode == 0 and submitted.stdout.endswith("Submitted batch job 7\n"), submitted.stderr
    assert (bin_dir / "sbatch.args").read_text().split() == [
        f"--chdir={checkout}", "--nodes=8", "--ntasks-per-node=8", "--gpus-per-node=8",
        f"{checkout}/run_and_time.sbatch", "dgxa100_8x8"]
    assert submitted.stdout.startswith("time: NEXP=1 run(s) x ")  # the time check, before it submits

    # One shell, as a user types them: the first puts mlperf-bert on PATH for the others.
    session = readme_checkout.run("\n".join(f"{line} || exit $((100 + {i}))" for i, line in enumerate(COMMANDS[5:])))
    assert session.returncode == 0, f"line {COMMANDS[5 + session.returncode - 100]!r} failed:\n" \
                                    f"{session.stdout[-3000:]}{session.stderr[-3000:]}"
    org = "MLPerf BERT harness developers"  # cpu_micro's system.submitter, the folder the summarizer links to
    assert (checkout / "submission" / org / "results" / "cpu_micro" / "bert" / "result_9.txt").is_file()
    # What the commands make stays out of git's way: results, the submission, a report (`report -o report`).
    made = ["logs/cpu_micro/result_0.txt", f"submission/{org}/systems/cpu_micro.json", "report/report.md"]
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *made], cwd=REPO, capture_output=True, text=True)
    assert ignored.stdout.splitlines() == made

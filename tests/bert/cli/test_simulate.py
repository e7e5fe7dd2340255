"""`mlperf-bert simulate-balance` and `simulate` (bert.cli.simulate): the balance simulator's command line, and where
the time-to-train prediction takes its samples to converge from, and the status line that says what it does on a
terminal. The prediction the `simulate` command prints is tested with the model, in
tests/bert/simulate/test_time_to_train.py."""

import os
import pty
import subprocess
import sys
import time

import click
import pytest
from click.testing import CliRunner

from bert.cli import main
from bert.cli.simulate import _samples_to_converge
from bert.system import load_descriptor
from tests.helpers.repo import REPO


def test_command_prints_one_strategy_ending_with_its_ratio():
    result = CliRunner().invoke(main, ["simulate-balance", "--nodes", "4", "--ranks-per-node", "2",
                                       "--steps", "4", "--strategy", "stratified+local_presort"])
    assert result.exit_code == 0, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("max_over_mean=") and float(last.split("=")[1]) >= 1.0
    bad = CliRunner().invoke(main, ["simulate-balance", "--lengths", "nowhere"])
    assert bad.exit_code != 0 and "unknown length distribution" in bad.output


def test_samples_to_converge_come_from_the_option_the_descriptor_then_the_reference_point():
    declared = load_descriptor("cpu_micro")  # run.performance.samples_to_converge: 5120
    assert _samples_to_converge(declared, 777) == (777, "--samples-to-converge")
    assert _samples_to_converge(declared, None) == (5120, "run.performance.samples_to_converge")
    published = load_descriptor("h200_1x1")  # none declared: the RCP checker's point for its batch of 448
    assert _samples_to_converge(published, None) == (2414421, "reference convergence point (reference, GBS 448)")
    beyond = published.variant({"global_batch_size": 131072, "processes_per_node": 1})
    with pytest.raises(click.ClickException, match="no reference convergence point for global batch 131072; declare "
                                                   "run.performance.samples_to_converge or pass --samples-to-converge"):
        _samples_to_converge(beyond, None)


def _on_a_terminal(argv: list[str], timeout: float = 300) -> str:
    """What a command writes to a terminal (stdout and stderr on one pseudo-terminal)."""
    controller, terminal = pty.openpty()
    env = dict(os.environ, TERM="xterm", COLUMNS="120")
    proc = subprocess.Popen(argv, stdin=terminal, stdout=terminal, stderr=terminal, env=env, cwd=REPO)
    os.close(terminal)
    chunks, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the command ended and closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(controller)
    assert proc.wait(timeout=30) == 0, b"".join(chunks).decode(errors="replace")[-2000:]
    return b"".join(chunks).decode(errors="replace")


def test_simulate_says_what_it_does_while_it_works_on_a_terminal_only():
    argv = [sys.executable, "-m", "bert.cli", "simulate", "--system", "cpu_micro"]
    shown = _on_a_terminal(argv)
    # the phases that take seconds (a status shorter than the spinner's refresh may never be drawn)
    said = [shown.find(status) for status in ("loading torch and the model", "simulating 5,120 samples")]
    assert -1 not in said and said == sorted(said) and said[-1] < shown.find("predicted_time_to_train_s="), shown
    piped = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert piped.returncode == 0 and piped.stderr == "" and "loading torch" not in piped.stdout

"""`mlperf-bert simulate`: time to train from a descriptor; `simulate-balance`: the load-balance simulator."""

from __future__ import annotations

from pathlib import Path

import click

from bert.cli.common import descriptor_for_command, parse_length_bins, progress_status, system_option
from bert.data.balance import DEALS, MAX_BALANCE_LOOKAHEAD, STRATEGIES, BalanceSpec, balance_strategy
from bert.mlperf_rules import REFERENCE_PREP
from bert.step_settings import StepSpec


def format_stats(stats, label: str | None = None) -> str:
    counts = f"  bins/rank {'/'.join(map(str, stats.bin_counts))}" if stats.bin_counts else ""
    per_row = f"  {stats.sequences_per_row:.2f} sequences/row" if stats.sequences_per_row else ""
    return (f"{label or stats.strategy:<34} max/mean {stats.max_over_mean:6.3f}  "
            f"padding waste {stats.padding_waste:6.1%}  step time x{stats.step_time_ratio:6.3f}  "
            f"tokens/rank {stats.tokens_per_rank:8.0f}{counts}{per_row}")


@click.command("simulate-balance")
@click.option("--nodes", type=click.IntRange(min=1), default=128, show_default=True)
@click.option("--ranks-per-node", type=click.IntRange(min=1), default=8, show_default=True)
@click.option("--per-rank-batch", type=click.IntRange(min=1), default=16, show_default=True)
@click.option("--lengths", default="mlperf-wiki", show_default=True,
              help="A named synthetic length distribution (mlperf-wiki) or a directory of shards.")
@click.option("--strategy", type=click.Choice(STRATEGIES), default=None,
              help="Simulate this one strategy (default: all); its last line is max_over_mean=<x>.")
@click.option("--bins", "bins_text", default=None,
              help="Upper edges of the length bins (default: the lengths' quantiles, one bin per sequence of a "
                   "per-rank batch, as the trainer's run.length_bins null).")
@click.option("--deal", "deal_how", type=click.Choice(DEALS), default=BalanceSpec.presort_deal, show_default=True,
              help="How the presorting strategies deal a group's sequences (run.presort_deal).")
@click.option("--lookahead", type=click.IntRange(0, MAX_BALANCE_LOOKAHEAD), default=BalanceSpec.balance_lookahead,
              show_default=True, help="Stratified strategies: run.balance_lookahead (0: draws in order).")
@click.option("--steps", type=click.IntRange(min=1), default=64, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--unpadded/--padded", default=StepSpec.unpadded, show_default=True,
              help="How the encoder runs the unpacked strategies (run.unpadded).")
@click.option("--max-len", type=click.IntRange(min=8), default=REFERENCE_PREP.max_seq_length, show_default=True,
              help="The longest sequence (run.max_seq_length): a packed row's length.")
def simulate_balance(nodes: int, ranks_per_node: int, per_rank_batch: int, lengths: str, strategy: str | None,
                     bins_text: str | None, deal_how: str, lookahead: int, steps: int, seed: int, unpadded: bool,
                     max_len: int) -> None:
    """Simulate the load balance of each strategy. Per step: the busiest rank's tokens over the mean, the padding
    waste and the step time against perfect balance (cost model with attention's quadratic term)."""
    from bert.simulate.load_balance import named_lengths, shard_lengths
    from bert.simulate.load_balance import simulate_balance as simulate

    bins = parse_length_bins(bins_text, max_len)
    try:
        source = shard_lengths(Path(lengths)) if Path(lengths).is_dir() else named_lengths(lengths, max_len=max_len)
        chosen = [balance_strategy(name, max_len) for name in ([strategy] if strategy else STRATEGIES)]
        results = [simulate(source, nodes, ranks_per_node, per_rank_batch, s, steps=steps, seed=seed, bins=bins,
                            unpadded=unpadded, deal_how=deal_how, lookahead=lookahead)
                   for s in chosen]
    except (ValueError, FileNotFoundError) as e:
        raise click.ClickException(str(e)) from None
    click.echo(f"{nodes} nodes x {ranks_per_node} ranks, {per_rank_batch} per rank (GBS "
               f"{nodes * ranks_per_node * per_rank_batch}), lengths {lengths} (mean {source.mean():.1f}), "
               f"{steps} steps, {'unpadded' if unpadded else 'padded'} encoder, {deal_how} deal, lookahead {lookahead}")
    for stats in results:
        click.echo(format_stats(stats))
    if strategy:
        click.echo(f"max_over_mean={results[0].max_over_mean:.4f}")


def _samples_to_converge(system, given: int | None) -> tuple[int, str]:
    if given is not None:
        return given, "--samples-to-converge"
    declared = system.run.performance.samples_to_converge
    if declared is not None:
        return declared, "run.performance.samples_to_converge"
    from compliance.checkers import rcp_reference

    gbs = system.run.global_batch_size
    reference = rcp_reference(gbs)
    if reference is None:
        raise click.ClickException(f"{system.path}: no reference convergence point for global batch {gbs}; declare "
                                   "run.performance.samples_to_converge or pass --samples-to-converge")
    return round(reference.mean_samples), f"reference convergence point ({reference.source}, GBS {gbs})"


def predicted_run(system):
    """`mlperf-bert simulate`'s prediction for one run of `system` (bert.simulate.time_to_train.Prediction), or
    None and why not."""
    from bert.simulate.time_to_train import predict

    if system.run.performance is None:
        return None, "run.performance is not set"
    try:
        samples, _ = _samples_to_converge(system, None)
    except click.ClickException as e:
        return None, e.message.split(": ", 1)[-1]
    return predict(system, samples), ""


def predicted_run_seconds(system) -> tuple[float | None, str]:
    """The predicted time to train of one run of `system` (`mlperf-bert simulate`'s figure), or None and why not."""
    prediction, why_not = predicted_run(system)
    return (prediction.time_to_train_s if prediction is not None else None), why_not


def predicted_job_seconds(system) -> tuple[float | None, str, str]:
    """What one run of `system` takes in a job, as its RESULT line counts it (its start-up, compile warm-up and
    checkpoint, and the time to train), or None and why not; the third value says what of its untimed start the
    figure counts."""
    prediction, why_not = predicted_run(system)
    if prediction is None:
        return None, why_not, ""
    return prediction.end_to_end_s, "", prediction.untimed.counted()


def cap_warning(system, prediction) -> str | None:
    """A line when the predicted converging eval comes after run.max_samples: the run would stop aborted first."""
    if prediction.samples <= system.run.max_samples:
        return None
    return (f"warning: the eval that reaches the target at {prediction.samples_to_converge:,} samples runs at "
            f"{prediction.samples:,} samples, past run.max_samples {system.run.max_samples:,}: the run would stop "
            "aborted before it; raise run.max_samples (`mlperf-bert system check` says the least a closed run needs)")


@click.command("simulate")
@system_option("The descriptor, with a run.performance block", required=True)
@click.option("--samples-to-converge", type=click.IntRange(min=1), default=None,
              help="Override run.performance.samples_to_converge (default there, else the reference convergence "
                   "point of the global batch size).")
@click.option("--lengths", default="mlperf-wiki", show_default=True,
              help="Sequence lengths for the load-balance simulator: a named distribution or a directory of shards.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--calibrate", "measured_s", type=click.FloatRange(min=0, min_open=True), default=None,
              help="A time to train (seconds, run_start to run_stop) measured or published for this system: print "
                   "the run.performance.gpu_samples_per_s with which the prediction reproduces it.")
def simulate(system: str, samples_to_converge: int | None, lengths: str, seed: int,
             measured_s: float | None) -> None:
    """Predict step time and time to train from the descriptor. A breakdown table whose last line is
    predicted_time_to_train_s=<x> (with --calibrate: calibrated_gpu_samples_per_s=<x>). On a terminal a status
    line says what it is doing (loading torch, drawing lengths, simulating: some seconds each)."""
    descriptor = descriptor_for_command(system)
    if descriptor.run.performance is None:
        raise click.ClickException(f"{descriptor.path}: run.performance is not set; declare the per-GPU throughput "
                                   "and the interconnect to simulate this system (see systems/dgxa100_1x8.json)")
    samples, source = _samples_to_converge(descriptor, samples_to_converge)
    with progress_status("loading torch and the model") as say:
        from bert.simulate.load_balance import named_lengths, shard_lengths
        from bert.simulate.time_to_train import breakdown_lines, calibrated_samples_per_s, predict

        max_len = descriptor.run.max_seq_length
        try:
            say(f"reading the sequence lengths of {lengths}")
            source_lengths = (shard_lengths(Path(lengths)) if Path(lengths).is_dir()
                              else named_lengths(lengths, count=50_000, seed=seed, max_len=max_len))
            say(f"simulating {samples:,} samples: the model's size, the load balance, the step")
            prediction = predict(descriptor, samples, source_lengths, seed=seed)
            if measured_s is not None:
                say(f"calibrating the rate to {measured_s:g} s")
            rate = None if measured_s is None else calibrated_samples_per_s(descriptor, measured_s, samples,
                                                                            source_lengths, seed=seed)
        except (ValueError, FileNotFoundError) as e:
            raise click.ClickException(str(e)) from None
    click.echo(_shape_line(descriptor, source))
    worker = "GPU" if descriptor.run.device == "cuda" else "CPU process"
    warning = cap_warning(descriptor, prediction)
    if warning:
        click.echo(warning, err=True)
    for line in breakdown_lines(prediction, worker):
        click.echo(line)
    if rate is not None:
        click.echo(f"with run.performance.gpu_samples_per_s = {rate:.2f} the prediction is the {measured_s:g} s "
                   "given (the rate of the compute alone: the model adds the rest)")
        click.echo(f"calibrated_gpu_samples_per_s={rate:.4f}")


def _shape_line(system, source: str) -> str:
    """What is simulated: the launch shape, the settings that change the step, where the samples come from."""
    run = system.run
    workers = "GPU(s)" if run.device == "cuda" else "CPU process(es)"
    return (f"{system.nodes} node(s) x {run.processes_per_node} {workers}, global batch {run.global_batch_size}, "
            f"balance {run.balance}, clip {run.clip}, gradient sent in {run.grad_comm_dtype}, "
            f"{run.optimizer.name} ({run.optimizer.implementation}), "
            f"{f'{run.token_sizes} token sizes' if run.token_sizes else 'token counts unrounded'}"
            f"{', CUDA graphs' if run.cuda_graphs else ''}; samples to converge from {source}")

COMMANDS = [simulate_balance, simulate]

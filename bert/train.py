"""The training run, in the phases of its MLPerf log: `run` opens the log and ends it with run_stop whatever
happens; `_initialize` is init_start to init_stop (the model, the step, the checkpoint eval, the compile warm-up);
`_timed_run` is run_start onwards (the data read, then `_train`'s steps and evals to the target or the cap).

Everything comes from the system descriptor. The timed region (run_start to run_stop) covers reading the
data, training and every evaluation. The step does no host synchronisation: the loss is read only at the
print interval, and the eval result (all-reduced, so the same on every rank) decides when to stop.

Whatever ends a run once its log is open (an error, a numerical fault, a rank that died or hung past
run.dist_timeout_s, SIGTERM/SIGINT) ends it with run_stop status aborted and the reason in its metadata; a
failed start-up check, before run_start, too.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from bert.checkpoint import load_into
from bert.compile_warmup import compile_every_shape, compiles_anything, shape_batches
from bert.data.balance_plans import attention_width
from bert.data.dataset import DatasetFiles, check_dataset, dataset_files
from bert.data.loader import LoaderBalance, TrainLoader
from bert.data.shards import SampleLimits
from bert.distributed.cpu_binding import bind_rank
from bert.distributed.launch import (
    DistContext,
    init_distributed,
    nodes_without,
    rank0_value,
    rendezvous_store,
    shutdown,
    wait_for_all,
)
from bert.distributed.liveness import Heartbeat, describe_lost
from bert.distributed.presort import PresortExchange, build_exchange
from bert.distributed.row_exchange import RowExchange, build_row_exchange
from bert.eval import EvalSet
from bert.interrupts import RunInterrupted, SignalGuard, exit_code
from bert.mllog import ABORTED, SUCCESS, RunLog
from bert.model.config import BertConfig
from bert.model.pretraining import BertForPreTraining
from bert.model.tf_names import tensor_names
from bert.model.token_rounding import token_sizes
from bert.optim.factory import build_optimizer, build_schedule
from bert.run_progress import Goal, RunConsole
from bert.step import TrainStep
from bert.system import Descriptor


@dataclass(frozen=True)
class RunRequest:
    system: Descriptor
    seed: int
    log_path: Path | None
    data_dir: Path | None = None
    cache_cleared: bool = False
    # Called after each eval with (training samples, accuracy); returning True stops the run (hpo pruning).
    on_eval: Callable[[int, float], bool] | None = None
    nan_at_step: int | None = None  # fault-injection tests only (see bert.cli.training): a NaN loss at this step
    checkpoint_dir: Path | None = None  # the folder that holds run.init_checkpoint's file (CHECKPOINTDIR)
    verbose: bool = False  # the MLPerf lines and each print interval's figures on stdout too (bert.run_progress)


@dataclass
class Progress:
    step: int = 0
    samples: int = 0
    accuracy: float | None = None


@dataclass(frozen=True)
class Training:
    """What the timed loop (_train) works with."""

    system: Descriptor
    ctx: DistContext
    log: RunLog
    step: TrainStep
    loader: TrainLoader
    evaluate: Callable[[], float]  # the eval accuracy of the model as it stands (all-reduced: every rank's)
    on_eval: Callable[[int, float], bool] | None  # RunRequest.on_eval
    interrupted: Callable[[], None]  # raises RunInterrupted once a signal came (SignalGuard.raise_if_received)
    console: RunConsole  # what rank 0 prints: the evals' progress lines, the print intervals' when verbose


def _say(ctx: DistContext, message: str) -> None:
    if ctx.is_main:
        print(message, flush=True)


def run(request: RunRequest) -> int:
    """One MLPerf run; returns the process exit code: 0 only when the target was reached and the whole log
    written, 128 + the signal number when a signal stopped it, 2 when a part failed to compile before the clock
    and run.compile is "required" (bert.compile_warmup.CompileFailed), 1 otherwise."""
    ctx = init_distributed(request.system.run.device, request.system.run.dist_timeout_s)
    heartbeat = None
    if ctx.distributed:
        store = rendezvous_store(request.system.run.dist_timeout_s)
        heartbeat = Heartbeat(store, ctx.rank, ctx.world_size)
    try:
        log = RunLog(request.log_path, ctx.rank, echo=request.verbose)
    except Exception as e:
        print(f"error (rank {ctx.rank}): {e}", file=sys.stderr, flush=True)
        _leave(ctx, heartbeat)
        return 1
    progress = Progress()
    eval_samples = request.system.run.eval.samples

    def stop_at_once(reason: str) -> None:
        log.run_stop(ABORTED, progress.samples, eval_samples, reason)
        log.close()

    status, reason, code = ABORTED, None, 1
    with SignalGuard(on_stop_at_once=stop_at_once) as signals:
        try:
            status, reason = _run(request, ctx, log, progress, signals.raise_if_received)
        except (Exception, RunInterrupted) as e:  # the log must still end with run_stop, the reason reach the user
            if signals.received is not None and not isinstance(e, RunInterrupted):  # raised as another error
                e = RunInterrupted(signals.received)
            reason = f"{type(e).__name__}: {e}"
            code = exit_code(e.signum) if isinstance(e, RunInterrupted) else getattr(e, "exit_status", 1)
            # A signal is its own reason (and must end the run fast); any other failure of a distributed run
            # may be a lost rank, which its error does not name. The check must not be cut short by the
            # SIGTERM a launcher sends once another rank has failed.
            signals.disarm()
            if heartbeat is not None and ctx.is_main and not isinstance(e, RunInterrupted):
                reason = _with_lost_ranks(reason, heartbeat, ctx)
            print(f"error (rank {ctx.rank}): {reason}", file=sys.stderr, flush=True)
        finally:
            signals.disarm()
            log.run_stop(status, progress.samples, eval_samples, reason)
            log.close()
            _leave(ctx, heartbeat)
    if status == SUCCESS and log.file_lost:  # its run_stop did not reach the result file: no result to count
        print(f"error (rank {ctx.rank}): {log.path}: the result log could not be written to the end",
              file=sys.stderr, flush=True)
        return 1
    return 0 if status == SUCCESS else code


def _with_lost_ranks(reason: str, heartbeat: Heartbeat, ctx: DistContext) -> str:
    """The reason of a failed distributed run, naming the ranks that were lost (a collective's error does not)."""
    lost = heartbeat.lost_ranks()
    if lost:
        return f"{describe_lost(lost, ctx.local_world_size, heartbeat.lost_after_s)}; {reason}"
    return reason


def _leave(ctx: DistContext, heartbeat: Heartbeat | None) -> None:
    if heartbeat is not None:
        heartbeat.end()
    shutdown(ctx)


def _run(request: RunRequest, ctx: DistContext, log: RunLog, progress: Progress,
         interrupted: Callable[[], None]) -> tuple[str, str | None]:
    """The run's two phases as MLPerf logs them: init (init_start to init_stop), then the timed run (run_start to
    the target or the sample cap). Returns run_stop's status and reason."""
    init = _initialize(request, ctx, log, interrupted)
    console = RunConsole(Goal.of(request.system), ctx.is_main, request.verbose)
    wait_for_all(ctx)  # every rank starts the clock together, as MLPerf times the slowest
    log.run_start()
    console.start()
    return _timed_run(init, log, progress, request.on_eval, interrupted, console)


@dataclass(frozen=True)
class Initialized:
    """What init builds, before the clock, for the timed run."""

    system: Descriptor
    ctx: DistContext
    seed: int  # the run's (rank 0's)
    files: DatasetFiles
    limits: SampleLimits
    model: BertForPreTraining
    step: TrainStep
    balance: LoaderBalance

    def read_eval_set(self) -> EvalSet:
        """The eval set, read from its file: once for the checkpoint eval before the clock, once after run_start."""
        run_spec = self.system.run
        return EvalSet(self.files.eval_file, run_spec.eval.samples, self.ctx, run_spec.eval.batch_size, self.limits,
                       token_sizes(run_spec.token_sizes, run_spec.eval.batch_size, run_spec.max_seq_length))

    def accuracy(self, eval_set: EvalSet) -> float:
        """The model's eval accuracy as it stands, under the step's layout and autocast (all-reduced)."""
        return eval_set.accuracy(self.model, self.step.unpadded, self.step.autocast)


def _initialize(request: RunRequest, ctx: DistContext, log: RunLog,
                interrupted: Callable[[], None]) -> Initialized:
    """init_start to init_stop: the run described in the log, this rank placed, the data checked, the model,
    step and load balance built, the checkpoint evaluated and every compiled shape compiled."""
    system, run_spec = request.system, request.system.run
    # Each process may have drawn a seed of its own (Descriptor.run_seed, when neither --seed nor run.seed gives
    # one): the run's seed is rank 0's, which the log records.
    seed = rank0_value(request.seed, ctx)
    _log_run_description(system, ctx, log, seed, request.cache_cleared)
    _place_rank(system, ctx)  # before the model and the loader exist
    needs = system.dataset_needs(request.data_dir)
    files = dataset_files(needs)
    limits = SampleLimits(len(check_dataset(files, needs)), run_spec.max_seq_length)
    checkpoint = system.init_checkpoint_path(request.checkpoint_dir)
    model = _build_model(system.model_config(), ctx, seed, checkpoint, log, run_spec.log_weights_initialization)
    train_step = TrainStep(run_spec, ctx, model, build_optimizer(model, run_spec.optimizer),
                           build_schedule(run_spec.optimizer), request.nan_at_step)
    init = Initialized(system, ctx, seed, files, limits, model, train_step, loader_balance(system, ctx))
    if checkpoint is not None:
        _checkpoint_eval(init, checkpoint, log)
    if compiles_anything(run_spec, run_spec.optimizer):
        _compile_before_the_clock(train_step, system, ctx, log)
    seed_dropout(seed, ctx.rank)
    interrupted()  # a signal during the compile warm-up ends the run here, before the clock starts
    log.init_stop()
    return init


def _log_run_description(system: Descriptor, ctx: DistContext, log: RunLog, seed: int, cache_cleared: bool) -> None:
    """The log's lines from cache_clear to the code version: what runs, on what, with which settings."""
    not_cleared = nodes_without(cache_cleared, ctx)  # each node's launcher dropped its own page cache
    log.cache_clear(not not_cleared)
    if 0 < len(not_cleared) < system.nodes:  # some did: the others are named (none did: none was asked to)
        _say(ctx, f"cache_clear is logged false: node(s) {', '.join(map(str, not_cleared))} did not drop the page "
                  "cache (DROP_CACHES=1 and root, or sudo without a password, on every node)")
    log.init_start()
    log.submission(system)
    log.seed(seed)
    log.hyperparameters(system)
    log.target(system.run.eval.target_accuracy)
    log.code_version()
    log.software_stack()


def _place_rank(system: Descriptor, ctx: DistContext) -> None:
    """Checks the launch against the descriptor's shape and binds this rank to its CPUs (run.launch.cpu_binding)."""
    if ctx.world_size != system.world_size:
        raise RuntimeError(f"launched with {ctx.world_size} processes but {system.path} describes "
                           f"{system.nodes} node(s) x {system.run.processes_per_node} = {system.world_size}")
    binding = bind_rank(system.run.launch.cpu_binding, ctx.local_rank, ctx.local_world_size)
    if binding.cpus is not None or binding.threads:  # one write: ranks sharing a stdout do not interleave
        sys.stdout.write(f"rank {ctx.rank}: {binding.describe()}\n")
        sys.stdout.flush()


def _build_model(config: BertConfig, ctx: DistContext, seed: int, checkpoint: Path | None, log: RunLog,
                 log_weights: bool) -> BertForPreTraining:
    """The model on this rank's device: the same initial weights on every rank, then the checkpoint's, if any;
    `log_weights`: run.log_weights_initialization."""
    torch.manual_seed(seed)
    model = BertForPreTraining(config).to(ctx.device)
    if checkpoint is not None:
        load_into(model, checkpoint, config)
    if log_weights:
        log.weights_initialization(tensor_names(config))
    return model


def _checkpoint_eval(init: Initialized, checkpoint: Path, log: RunLog) -> None:
    """Logs the loaded checkpoint's eval accuracy, measured before run_start: a wrong conversion or eval set
    shows here (the MLPerf phase-1 checkpoint scores about 0.34), not after the timed run."""
    accuracy = init.accuracy(init.read_eval_set())
    log.checkpoint_eval(accuracy)
    _say(init.ctx, f"init checkpoint {checkpoint}: mlm accuracy {accuracy:.4f} before training")


def _compile_before_the_clock(train_step: TrainStep, system: Descriptor, ctx: DistContext, log: RunLog) -> None:
    """The compile warm-up (bert.compile_warmup), logged; a part that fell back to eager is said on stderr too."""
    warmed = compile_every_shape(train_step, system.run, shape_batches(system))
    log.compile_warmup(warmed.seconds, warmed.train_shapes, warmed.eval_shapes)
    for fallback in warmed.fallbacks:
        log.compile_fallback(fallback.part, str(fallback))
        print(f"warning (rank {ctx.rank}): {fallback}", file=sys.stderr, flush=True)
    _say(ctx, f"compiled before the clock in {warmed.seconds:.1f} s: {warmed.train_shapes} training and "
              f"{warmed.eval_shapes} eval shapes, and the update")


def _timed_run(init: Initialized, log: RunLog, progress: Progress, on_eval: Callable[[int, float], bool] | None,
               interrupted: Callable[[], None], console: RunConsole) -> tuple[str, str | None]:
    """From run_start: the eval set and the training shards read (MLPerf times every touch of the data, so the
    eval set is read again even when the checkpoint eval read it), then steps and evals to the target or the
    cap. Ends with this rank's report (rank_report)."""
    system, ctx = init.system, init.ctx
    eval_set = init.read_eval_set()
    loader = TrainLoader(init.files.train_shards, ctx.rank, ctx.world_size, init.seed, system.per_process_batch,
                         ctx.device, balance=init.balance, limits=init.limits,
                         sizes=token_sizes(system.run.token_sizes, system.per_process_batch,
                                           system.run.max_seq_length), bins=init.files.bins)
    evaluate = functools.partial(init.accuracy, eval_set)
    try:
        return _train(Training(system, ctx, log, init.step, loader, evaluate, on_eval, interrupted, console), progress)
    finally:
        loader.close()
        console.close()
        # One write for the whole line: print's separate write of the newline lets the lines of ranks that
        # share an unbuffered stdout (torchrun's, srun's) interleave.
        sys.stdout.write(rank_report(ctx, loader, init.balance) + "\n")
        sys.stdout.flush()


def rank_report(ctx: DistContext, loader: TrainLoader, balance: LoaderBalance) -> str:
    """This rank's place and the training shards it read: every rank prints it when its run ends, so that a
    launch can be compared with its plan (`mlperf-bert system plan`, `run_and_time.sh --dry-run`)."""
    presorting = isinstance(balance.exchange, PresortExchange)  # packing's row exchange presorts nothing
    group = balance.exchange.members if presorting else []
    epochs = "; ".join(f"epoch {epoch}: {','.join(map(str, shards))}"
                       for epoch, shards in loader.shards_read_by_epoch().items())
    return (f"rank {ctx.rank} of {ctx.world_size}: node {ctx.node_rank}, local rank {ctx.local_rank} of "
            f"{ctx.local_world_size}, presort group {','.join(map(str, group)) or '-'}; training shards read "
            f"(indices in sorted name order): {epochs or '-'}")


def dropout_seed(seed: int, rank: int) -> int:
    """The seed of rank `rank`'s random streams (dropout) in the run of seed `seed`: one stream per rank, as
    NVIDIA draws one seed per worker. Only dropout uses torch's generators: the data order comes from the run
    seed alone (bert.data.samplers, numpy), and the initial weights from the run seed on every rank."""
    return int(np.random.SeedSequence([seed, rank]).generate_state(1, np.uint64)[0] % 2**63)


def seed_dropout(seed: int, rank: int) -> None:
    """Seeds torch's generators (CPU and every GPU) for this rank's dropout masks."""
    torch.manual_seed(dropout_seed(seed, rank))


def loader_balance(system: Descriptor, ctx: DistContext) -> LoaderBalance:
    """The descriptor's load-balance strategy for this rank, with its presort or packing group (created here,
    at init)."""
    run_spec = system.run
    width = attention_width(system.model_config().hidden_size)
    exchange: PresortExchange | RowExchange | None = None
    if ctx.distributed and system.balance.packed:
        exchange = build_row_exchange(ctx.world_size, run_spec.dist_timeout_s)
    elif ctx.distributed:
        exchange = build_exchange(ctx.rank, ctx.world_size, run_spec.processes_per_node, system.balance,
                                  run_spec.max_predictions_per_seq, run_spec.dist_timeout_s, run_spec.presort_deal,
                                  width)
    return LoaderBalance(system.balance, run_spec.length_bins, exchange, run_spec.balance_lookahead, width)


def _train(training: Training, progress: Progress) -> tuple[str, str | None]:
    """Steps and evals until the target or the sample cap; returns run_stop's status and reason."""
    system, log, train_step = training.system, training.log, training.step
    run_spec = system.run
    interval = system.eval_interval_samples
    next_eval, block_first = interval, 0
    window_start, window_step = time.perf_counter(), 0
    log.block_start(0, interval)
    while True:
        training.interrupted()
        train_step(training.loader, progress.step)
        progress.step += 1
        progress.samples += run_spec.global_batch_size

        if progress.step % run_spec.print_interval_steps == 0:
            train_step.check_numerics()
            _print_progress(training, progress, progress.step - window_step, time.perf_counter() - window_start)
            window_start, window_step = time.perf_counter(), progress.step

        capped = progress.samples >= run_spec.max_samples
        if progress.samples >= next_eval or capped:
            train_step.check_numerics()
            log.block_stop(block_first)
            log.eval_start(progress.samples)
            eval_started = time.perf_counter()
            progress.accuracy = training.evaluate()
            log.eval_result(progress.samples, progress.accuracy)
            training.console.eval(progress.samples, progress.accuracy)
            stop = training.on_eval is not None and training.on_eval(progress.samples, progress.accuracy)
            if progress.accuracy >= run_spec.eval.target_accuracy:
                return SUCCESS, None
            if capped:
                return ABORTED, (f"sample cap run.max_samples = {run_spec.max_samples} reached at accuracy "
                                 f"{progress.accuracy:.4f} < target {run_spec.eval.target_accuracy}")
            if stop:
                return ABORTED, f"stopped by the caller after the eval at {progress.samples} samples"
            while next_eval <= progress.samples:
                next_eval += interval
            block_first = progress.samples
            log.block_start(block_first, interval)
            window_start += time.perf_counter() - eval_started  # the printed rate is of training, not of the eval


def _print_progress(training: Training, progress: Progress, steps: int, seconds: float) -> None:
    """The print interval: the mean loss, the learning rate, and the rates of the last `steps` steps, which
    trained for `seconds`, to the console (bert.run_progress shows them when verbose)."""
    loss, tokens = training.step.pop_loss_and_tokens()
    training.console.step(progress.step, progress.samples,
                          f"loss {loss:.4f} lr {training.step.schedule(progress.step - 1):.3e} "
                          f"{steps * training.system.run.global_batch_size / seconds:.1f} seq/s "
                          f"{tokens * training.ctx.world_size / seconds:.0f} tok/s")

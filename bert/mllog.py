"""Every MLPerf log key this harness writes, and the only place that writes `:::MLLOG` lines.

Only rank 0 writes; on other ranks every call is a no-op. Lines go to the result file (and to stdout with
`echo`: a verbose run), each flushed as it is written, so a crash loses no line already logged. A result file
that cannot be written (disk full, I/O error) ends the run with LogWriteError rather than silently losing lines;
the rest of the log, with its run_stop, then still reaches stdout, echo or not. Values come from the system
descriptor, so what is logged is what ran.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from mlperf_logging.mllog import constants as C
from mlperf_logging.mllog.mllog import MLLogger

from bert.mlperf_rules import BENCHMARK
from bert.optim.kinds import OPTIMIZERS
from bert.provenance import CodeVersion, running_code
from bert.regular_files import NotRegularFile, open_regular
from bert.system import Descriptor

if TYPE_CHECKING:  # only a type here: `mlperf-bert log seal` (a run's failure path) must not wait for torch
    from bert.model.tf_names import TensorName

MAX_PREDICTIONS_PER_SEQ = "max_predictions_per_seq"  # no constant in mlperf_logging for this key
# The init checkpoint's accuracy, measured before run_start; a key of its own, since an eval_accuracy line
# before run_start would count as an eval of the run.
INIT_CHECKPOINT_EVAL_ACCURACY = "init_checkpoint_eval_accuracy"
# The eval accuracy at which the run stops as a success (run.eval.target_accuracy), logged before run_start: a
# log then says itself what its `success` must be backed by (compliance.log_rules); no mlperf_logging key exists.
TARGET_ACCURACY = "target_accuracy"
# Which code ran (bert.provenance: the digest of the bert package's source, and the checkout's commit in the
# metadata), logged before run_start: `package` and `check` compare it with the code a package holds.
CODE_VERSION = "code_version"
# The software the run ran on (bert.software_stack: torch, CUDA, cuDNN, NCCL, the driver, Python, mlperf-logging,
# the container image when known), logged before run_start: `package` fills the system description's software
# fields from it (compliance.software). The official checkers pass a key they do not know.
SOFTWARE_STACK = "software_stack"
# How long compiling before the clock took (bert.compile_warmup), logged between init_start and init_stop.
COMPILE_WARMUP_SECONDS = "compile_warmup_seconds"
# A compiled part that runs eager because compiling it failed in that warm-up: what, and why, in one line.
COMPILE_FALLBACK = "compile_fallback"
# Free disk a log needs at start-up: a BERT-large log is well under 1 MiB, so this leaves room for what else
# the run and the launcher write beside it.
LOG_FREE_BYTES = 64 << 20


SUBMISSION_KEYS = (C.SUBMISSION_BENCHMARK, C.SUBMISSION_ORG, C.SUBMISSION_DIVISION, C.SUBMISSION_STATUS,
                   C.SUBMISSION_PLATFORM)
# The hyperparameter keys of every run; the optimizer's own values follow under the keys of its kind
# (bert.optim.kinds: LAMB's betas, epsilon and weight decay).
RUN_HYPERPARAMETER_KEYS = (C.GLOBAL_BATCH_SIZE, C.GRADIENT_ACCUMULATION_STEPS, C.OPT_BASE_LR, C.OPT_LR_TRAINING_STEPS,
                           C.OPT_LR_WARMUP_STEPS, C.NUM_WARMUP_STEPS, C.START_WARMUP_STEP, MAX_PREDICTIONS_PER_SEQ)
# Every hyperparameter key a run of some optimizer logs.
HYPERPARAMETER_KEYS = tuple(dict.fromkeys(RUN_HYPERPARAMETER_KEYS + tuple(
    key for kind in OPTIMIZERS.values() for key in kind.log_keys)))
# What every log of a system states about its submission: all runs of one system state the same, and what the
# descriptor says (compliance.folder_rules holds the logs of a submission to that).
STATED_KEYS = SUBMISSION_KEYS + HYPERPARAMETER_KEYS + (TARGET_ACCURACY,)


def submission_values(system: Descriptor) -> dict[str, object]:
    """The submission keys (benchmark, org, division, status, platform) and their values."""
    description = system.description
    values = (BENCHMARK, description["submitter"], system.division, system.submission_status,
              description["system_name"])
    return dict(zip(SUBMISSION_KEYS, values, strict=True))


def hyperparameters(system: Descriptor) -> dict[str, object]:
    """The hyperparameter keys a run of `system` logs and their values: the run's (RUN_HYPERPARAMETER_KEYS), then
    the optimizer's own under the keys its kind names. LAMB's are the closed division's tunable keys; an
    open-division ADAM run logs its betas, epsilon and weight decay under the same names (the rules name no ADAM
    keys, and the checker requires none), which its descriptor's notes say (the kind's log_note)."""
    run, opt = system.run, system.run.optimizer
    values = (run.global_batch_size, run.gradient_accumulation_steps, opt.base_learning_rate, opt.training_steps,
              opt.warmup_steps, opt.warmup_steps, opt.start_warmup_step, run.max_predictions_per_seq)
    own = {key: getattr(opt, field) for key, field in opt.kind.log_keys.items()}
    return dict(zip(RUN_HYPERPARAMETER_KEYS, values, strict=True)) | own


def stated_values(system: Descriptor) -> dict[str, object]:
    """Every STATED_KEYS key and the value a run of `system` logs for it."""
    return submission_values(system) | hyperparameters(system) | {TARGET_ACCURACY: system.run.eval.target_accuracy}


class LogError(RuntimeError):
    """The result log cannot be opened or written; the message names the file and the fix."""


class LogWriteError(LogError):
    pass


class SealError(LogError):
    """A log that is not a finished log and cannot be made one (nothing logged, or the disk refuses the line)."""


class _ResultFileHandler(logging.FileHandler):
    """Raises write errors: logging's default is to print them and go on, losing the line."""

    def handleError(self, record: logging.LogRecord) -> None:
        raise  # noqa: PLE0704 -- called by emit() inside its except block, so this re-raises the write error


def check_log_path(path: Path) -> None:
    """Start-up checks of a result log path: never an earlier log, and enough free disk."""
    if path.exists() and not path.is_file() and not path.is_dir():
        return  # a device or a pipe (/dev/stdout): nothing to overwrite, no disk to fill
    if path.is_dir() or path.is_file() and path.stat().st_size > 0:
        raise LogError(f"{path}: already exists and is not empty; a run never appends to or overwrites an earlier "
                       "log: pass a new --log-file")
    free = shutil.disk_usage(path.parent).free
    if free < LOG_FREE_BYTES:
        raise LogError(f"{path.parent}: only {free / 2**20:.1f} MiB free, a run needs {LOG_FREE_BYTES >> 20} MiB "
                       "for its log; free some space or pass a --log-file on another disk")


class RunLog:
    """The MLPerf log of one run. Construct with `path=None` (and any rank) for a silent log.

    Safe to call from a second thread (the signal watcher of bert.interrupts); run_stop is written once.
    """

    def __init__(self, path: str | os.PathLike | None, rank: int = 0, echo: bool = True, append: bool = False):
        self.enabled = rank == 0 and path is not None
        self.path = Path(path) if path is not None else None
        self._logger: MLLogger | None = None
        self._handlers: list[logging.Handler] = []
        self._file: logging.Handler | None = None
        self._lock = threading.RLock()
        self.stopped = False
        self.file_lost = False  # a write to the result file failed: the file is not a whole log
        if self.enabled:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not append:
                check_log_path(self.path)
            logger = logging.getLogger(f"mlperf_bert.{self.path}")
            logger.propagate = False
            logger.setLevel(logging.INFO)
            self._file = _ResultFileHandler(self.path)
            self._handlers.append(self._file)
            if echo:
                self._handlers.append(logging.StreamHandler(sys.stdout))
            for h in self._handlers:
                logger.addHandler(h)
            # Report the trainer's call site, not this module, in each line's metadata (4 frames up:
            # the RunLog method, _event/_start/_end, _write).
            self._logger = MLLogger(logger=logger, default_stack_offset=4)

    def close(self) -> None:
        with self._lock:
            if self._logger is None:
                return
            if self._file is not None:
                try:  # on disk, not only in the page cache: the node may go down right after the run
                    self._file.flush()
                    os.fsync(self._file.stream.fileno())
                except (OSError, ValueError):
                    pass  # a file that failed has been reported by LogWriteError already
            for h in self._handlers:
                h.close()
                self._logger.logger.removeHandler(h)
            self._logger = None

    def _write(self, write, key: str, value: object, metadata: dict | None) -> None:
        with self._lock:
            if self._logger is None:
                return
            try:
                write(key=key, value=value, metadata=metadata)
            except OSError as e:
                self._drop_file()
                raise LogWriteError(f"{self.path}: cannot write the result log ({e.strerror or e}); the log "
                                    "continues on stdout only: free the disk or fix the path") from e

    def _drop_file(self) -> None:
        """Stops writing to the result file (after a write error); the lines go on to stdout."""
        handler, self._file = self._file, None
        self.file_lost = True
        if handler is not None:
            self._handlers.remove(handler)
            self._logger.logger.removeHandler(handler)
            if not self._handlers:  # not echoed so far: stdout is now the only place the log still reaches
                self._handlers.append(logging.StreamHandler(sys.stdout))
                self._logger.logger.addHandler(self._handlers[-1])
            try:
                handler.close()
            except OSError:
                pass  # closing flushes the same lines again, into the same error

    def _event(self, key: str, value: object = None, metadata: dict | None = None) -> None:
        if self._logger is not None:
            self._write(self._logger.event, key, value, metadata)

    def _start(self, key: str, value: object = None, metadata: dict | None = None) -> None:
        if self._logger is not None:
            self._write(self._logger.start, key, value, metadata)

    def _end(self, key: str, value: object = None, metadata: dict | None = None) -> None:
        if self._logger is not None:
            self._write(self._logger.end, key, value, metadata)

    def cache_clear(self, cleared: bool) -> None:
        self._event(C.CACHE_CLEAR, cleared)

    def init_start(self) -> None:
        self._start(C.INIT_START)

    def submission(self, system: Descriptor) -> None:
        for key, value in submission_values(system).items():
            self._event(key, value)

    def seed(self, seed: int) -> None:
        self._event(C.SEED, seed)

    def hyperparameters(self, system: Descriptor) -> None:
        for key, value in hyperparameters(system).items():
            self._event(key, value)

    def target(self, accuracy: float) -> None:
        """The masked-LM accuracy the run trains to (run.eval.target_accuracy)."""
        self._event(TARGET_ACCURACY, accuracy)

    def code_version(self, version: CodeVersion | None = None) -> None:
        """The code that runs (default: the checkout's, read only where this log writes)."""
        if self._logger is not None:
            version = version or running_code()
            self._event(CODE_VERSION, version.digest, metadata={"commit": version.commit})

    def software_stack(self, stack: dict[str, str | None] | None = None) -> None:
        """The software this process runs on (default: bert.software_stack.running_stack(), read only where this
        log writes)."""
        if self._logger is not None:
            if stack is None:
                from bert.software_stack import running_stack

                stack = running_stack()
            self._event(SOFTWARE_STACK, stack)

    def weights_initialization(self, names: list[TensorName]) -> None:
        for entry in names:
            self._event(C.WEIGHTS_INITIALIZATION, metadata={"tensor": entry.tf})

    def checkpoint_eval(self, accuracy: float) -> None:
        self._event(INIT_CHECKPOINT_EVAL_ACCURACY, accuracy)

    def compile_warmup(self, seconds: float, train_shapes: int, eval_shapes: int) -> None:
        self._event(COMPILE_WARMUP_SECONDS, round(seconds, 3),
                    metadata={"train_shapes": train_shapes, "eval_shapes": eval_shapes})

    def compile_fallback(self, part: str, text: str) -> None:
        self._event(COMPILE_FALLBACK, text, metadata={"part": part})

    def init_stop(self) -> None:
        self._end(C.INIT_STOP)

    def run_start(self) -> None:
        self._start(C.RUN_START)

    def block_start(self, first_sample: int, samples: int) -> None:
        self._start(C.BLOCK_START, metadata={C.FIRST_EPOCH_NUM: first_sample, C.EPOCH_COUNT: samples})

    def block_stop(self, first_sample: int) -> None:
        self._end(C.BLOCK_STOP, metadata={C.FIRST_EPOCH_NUM: first_sample})

    def eval_start(self, samples: int) -> None:
        self._start(C.EVAL_START, metadata={C.EPOCH_NUM: samples})

    def eval_result(self, samples: int, accuracy: float) -> None:
        self._event(C.EVAL_ACCURACY, accuracy, metadata={C.EPOCH_NUM: samples})
        self._end(C.EVAL_STOP, metadata={C.EPOCH_NUM: samples})

    def run_stop(self, status: str, train_samples: int, eval_samples: int, reason: str | None = None) -> None:
        """The last lines of the log, written once: a later call (the main thread after the signal watcher
        stopped the run, or the other way round) writes nothing. A failed result file does not stop them
        from reaching stdout."""
        with self._lock:
            if self.stopped:
                return
            self.stopped = True
            metadata = {C.STATUS: status}
            if reason:
                metadata["reason"] = reason
            for write, key, value, meta in ((self._event, C.TRAIN_SAMPLES, train_samples, None),
                                            (self._event, C.EVAL_SAMPLES, eval_samples, None),
                                            (self._end, C.RUN_STOP, None, metadata)):
                try:
                    write(key, value, meta)
                except LogWriteError:
                    pass  # reported by the error that ended the run; the line went to stdout

    def seal(self, reason: str) -> None:
        """The aborted run_stop alone, for a log whose run could not write its own (see seal_log)."""
        with self._lock:
            self.stopped = True
            self._end(C.RUN_STOP, metadata={C.STATUS: C.ABORTED, "reason": reason})


def _run_stop_status(line: str) -> str | None:
    """The status of a run_stop line (None when the line is no whole run_stop, e.g. one cut off mid-write)."""
    try:
        event = json.loads(line.removeprefix(":::MLLOG "))
        if event["key"] == C.RUN_STOP:
            return str(event["metadata"].get("status"))
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
    return None


_LOG_MARK = b":::MLLOG "
_MAX_LOG_LINE = 1 << 20  # far above any line a run writes; a longer one is kept cut, and so is no whole run_stop


def _last_log_line(f: BinaryIO) -> tuple[bytes | None, bool]:
    """(the last :::MLLOG line of the open log, whether the file ends with a newline), read a block at a time up
    to the size it had when opened: memory stays one block and one line, however large the file or its lines."""
    last, pending, size, ends_line = None, b"", os.fstat(f.fileno()).st_size, True
    while size > 0 and (block := f.read(min(size, 1 << 20))):
        size -= len(block)
        *whole, rest = (pending + block).split(b"\n")
        last = next((line for line in reversed(whole) if line.startswith(_LOG_MARK)), last)
        pending, ends_line = rest[:_MAX_LOG_LINE], block.endswith(b"\n")
    return (pending if pending.startswith(_LOG_MARK) else last), ends_line


def seal_log(path: Path, reason: str) -> tuple[str, bool]:
    """Makes `path` a finished log: one that a crash cut off (a rank 0 killed before its run_stop) gets an
    aborted run_stop with `reason`; one that ends with run_stop stays as it is. Returns (the status of its
    run_stop, whether it was sealed now). Raises SealError for a log that cannot be finished: it holds no line
    (the run never started its log), or it cannot be read or extended (a full disk); the caller keeps it
    unpublished."""
    try:
        with open_regular(path) as f:
            last, ends_line = _last_log_line(f)
    except NotRegularFile as e:
        raise SealError(f"{path}: {e}, so it is no log to finish; the run logs to a plain file") from None
    except OSError as e:
        raise SealError(f"{path}: cannot be read ({e.strerror or e})") from None
    if last is None:
        raise SealError(f"{path}: holds no MLPerf log line (the run ended before it started its log), so there is "
                        "nothing to finish")
    status = _run_stop_status(last.decode(errors="replace"))
    if status is not None:
        return status, False
    try:
        if not ends_line:
            with open(path, "a") as f:
                f.write("\n")  # a cut-off line keeps its own line
        log = RunLog(path, echo=False, append=True)
        log.seal(reason)
        log.close()
    except (OSError, LogError) as e:
        cause = e.__cause__ if isinstance(e, LogError) and e.__cause__ is not None else e
        why = getattr(cause, "strerror", None) or cause
        raise SealError(f"{path}: cannot be finished with a run_stop line ({why}); the log is kept as it is, "
                        "not published: free the disk") from None
    return C.ABORTED, True


SUCCESS, ABORTED = C.SUCCESS, C.ABORTED

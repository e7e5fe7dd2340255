"""Every MLPerf log key this harness writes, and the only place that writes `:::MLLOG` lines.

Only rank 0 writes; on other ranks every call is a no-op. Lines go to the result file (flushed per line by
logging's FileHandler) and to stdout. Values come from the system descriptor, so what is logged is what ran.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from mlperf_logging.mllog import constants as C
from mlperf_logging.mllog.mllog import MLLogger

from bert.system import System
from bert.tf_names import TensorName

BENCHMARK = "bert"
MAX_PREDICTIONS_PER_SEQ = "max_predictions_per_seq"  # no constant in mlperf_logging for this key
# The init checkpoint's accuracy, measured before run_start; a key of its own, since an eval_accuracy line
# before run_start would count as an eval of the run.
INIT_CHECKPOINT_EVAL_ACCURACY = "init_checkpoint_eval_accuracy"
# What an ADAM descriptor's notes say about its log (see hyperparameters).
ADAM_KEYS_NOTE = (f"Optimizer ADAM (AdamW, open division): its betas, epsilon and weight decay are logged under the "
                  f"LAMB key names {C.OPT_LAMB_BETA_1}, {C.OPT_LAMB_BETA_2}, {C.OPT_LAMB_EPSILON} and "
                  f"{C.OPT_LAMB_WEIGHT_DECAY}.")


def hyperparameters(system: System) -> dict[str, object]:
    """The tunable hyperparameter keys of the closed division and their values, in the reference order.

    The keys are LAMB's; an open-division ADAM run logs its betas, epsilon and weight decay under the same
    names (the rules name no ADAM keys, and the checker requires none), which its descriptor's notes say.
    """
    run, opt = system.run, system.run.optimizer
    return {
        C.GLOBAL_BATCH_SIZE: run.global_batch_size,
        C.GRADIENT_ACCUMULATION_STEPS: run.gradient_accumulation_steps,
        C.OPT_BASE_LR: opt.base_learning_rate,
        C.OPT_LAMB_EPSILON: opt.epsilon,
        C.OPT_LR_TRAINING_STEPS: opt.training_steps,
        C.OPT_LR_WARMUP_STEPS: opt.warmup_steps,
        C.NUM_WARMUP_STEPS: opt.warmup_steps,
        C.START_WARMUP_STEP: opt.start_warmup_step,
        C.OPT_LAMB_BETA_1: opt.beta_1,
        C.OPT_LAMB_BETA_2: opt.beta_2,
        C.OPT_LAMB_WEIGHT_DECAY: opt.weight_decay_rate,
        MAX_PREDICTIONS_PER_SEQ: run.max_predictions_per_seq,
    }


class RunLog:
    """The MLPerf log of one run. Construct with `path=None` (and any rank) for a silent log."""

    def __init__(self, path: str | os.PathLike | None, rank: int = 0, echo: bool = True):
        self.enabled = rank == 0 and path is not None
        self.path = Path(path) if path is not None else None
        self._logger: MLLogger | None = None
        self._handlers: list[logging.Handler] = []
        if self.enabled:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            logger = logging.getLogger(f"mlperf_bert.{self.path}")
            logger.propagate = False
            logger.setLevel(logging.INFO)
            self._handlers.append(logging.FileHandler(self.path))
            if echo:
                self._handlers.append(logging.StreamHandler(sys.stdout))
            for h in self._handlers:
                logger.addHandler(h)
            # Report the trainer's call site, not this module, in each line's metadata (3 frames up).
            self._logger = MLLogger(logger=logger, default_stack_offset=3)

    def close(self) -> None:
        if self._logger is not None:
            for h in self._handlers:
                h.flush()
                h.close()
                self._logger.logger.removeHandler(h)
            self._logger = None

    def _event(self, key: str, value: object = None, metadata: dict | None = None) -> None:
        if self._logger is not None:
            self._logger.event(key=key, value=value, metadata=metadata)

    def _start(self, key: str, value: object = None, metadata: dict | None = None) -> None:
        if self._logger is not None:
            self._logger.start(key=key, value=value, metadata=metadata)

    def _end(self, key: str, value: object = None, metadata: dict | None = None) -> None:
        if self._logger is not None:
            self._logger.end(key=key, value=value, metadata=metadata)

    def cache_clear(self, cleared: bool) -> None:
        self._event(C.CACHE_CLEAR, cleared)

    def init_start(self) -> None:
        self._start(C.INIT_START)

    def submission(self, system: System) -> None:
        self._event(C.SUBMISSION_BENCHMARK, BENCHMARK)
        self._event(C.SUBMISSION_ORG, system.description["submitter"])
        self._event(C.SUBMISSION_DIVISION, system.division)
        self._event(C.SUBMISSION_STATUS, system.submission_status)
        self._event(C.SUBMISSION_PLATFORM, system.description["system_name"])

    def seed(self, seed: int) -> None:
        self._event(C.SEED, seed)

    def hyperparameters(self, system: System) -> None:
        for key, value in hyperparameters(system).items():
            self._event(key, value)

    def weights_initialization(self, names: list[TensorName]) -> None:
        for entry in names:
            self._event(C.WEIGHTS_INITIALIZATION, metadata={"tensor": entry.tf})

    def checkpoint_eval(self, accuracy: float) -> None:
        self._event(INIT_CHECKPOINT_EVAL_ACCURACY, accuracy)

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
        self._event(C.TRAIN_SAMPLES, train_samples)
        self._event(C.EVAL_SAMPLES, eval_samples)
        metadata = {C.STATUS: status}
        if reason:
            metadata["reason"] = reason
        self._end(C.RUN_STOP, metadata=metadata)


SUCCESS, ABORTED = C.SUCCESS, C.ABORTED

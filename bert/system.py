"""System descriptors: `systems/<name>.json` = the MLPerf system description + the run block.

The descriptor is the one source of truth for a run: the launch shape, the model size, the data, every
hyperparameter that is logged, the eval rule and the stop rule. `load_descriptor` validates it and raises a
ConfigError naming the file, the field and the fix.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from bert.data.balance import BalanceSpec, BalanceStrategy, balance_strategy, length_bins_problem
from bert.data.settings import MAX_SEED, DatasetNeeds, DatasetSpec
from bert.descriptor_files import (
    SYSTEM_NAME,
    SYSTEM_NAME_RULE,
    as_json,
    find_descriptor,
    origin_of,
    repository_root,
    resolved_descriptor,
    with_run_values,
)
from bert.distributed.clip_kinds import CLIP_KINDS
from bert.distributed.launch_settings import LaunchSpec
from bert.eval_settings import EvalSpec
from bert.kind_tables import kinds_where
from bert.mlperf_rules import DEFAULT_RULESET, REFERENCE_PREP, STATUSES, description_problems
from bert.model.config import BertConfig, ModelSpec
from bert.optim.kinds import OPTIMIZERS
from bert.optim.settings import OptimizerSpec
from bert.performance_settings import PerformanceSpec
from bert.rcp import RcpError, rcp_file
from bert.reference_hyperparameters import resolved_with_request, stale_hyperparameters, with_reference_values
from bert.search_settings import SearchParam
from bert.step_settings import StepSpec
from bert.typed_config import ConfigError, checked, choice, from_dict, ranged

MAX_GLOBAL_BATCH = 2**20  # samples per step; the published BERT submissions use at most 16384
DEFAULT_SYSTEM = "cpu_tiny"  # what run_and_time.sh and the commands run when no system is named


def _rcp_choice(value: bool | int) -> str | None:
    if isinstance(value, bool) or value >= 1:
        return None
    return f"must be true, false or the global batch size of a reference convergence point, got {value!r}"


def _ruleset_problem(value: str) -> str | None:
    try:
        rcp_file(value)
    except RcpError as e:
        return str(e)
    return None


@dataclass(frozen=True, kw_only=True)
class RunSpec(ModelSpec, StepSpec, BalanceSpec):
    """The run block: the settings of the model (bert.model.config), the step (bert.step_settings: precision,
    compiling, clipping) and the load balance (bert.data.balance), flat as the descriptors state them, and the
    components' blocks beside the descriptor's own fields."""

    device: Literal["cpu", "cuda"] = choice({"gpu": "cuda", "GPU": "cuda", "nvidia": "cuda", "CPU": "cpu"})
    """Where each rank runs: "cpu", or "cuda" (one GPU per process)."""
    processes_per_node: int = ranged(1)
    """Processes (ranks) on each node; the nodes are system.number_of_nodes."""
    global_batch_size: int = ranged(1, MAX_GLOBAL_BATCH)
    """Sequences per optimizer step over all ranks, a multiple of the ranks times gradient_accumulation_steps.
    MLPerf key global_batch_size (tunable)."""
    max_seq_length: int = ranged(5, default=REFERENCE_PREP.max_seq_length,
                                 note="[CLS] A [SEP] B [SEP] with a token in each segment")
    """Tokens of the longest sequence (MLPerf: 512)."""
    max_predictions_per_seq: int = ranged(1, default=REFERENCE_PREP.max_predictions_per_seq)
    """Masked positions of a sequence at most (MLPerf: 76). MLPerf key max_predictions_per_seq."""
    optimizer: OptimizerSpec
    """The optimizer and its learning-rate schedule (bert.optim.settings)."""
    rcp_hyperparameters: bool | int = checked(_rcp_choice, default=False)
    """Take the optimizer values that the reference convergence points (RCPs) carry (base_learning_rate,
    epsilon, training_steps, warmup_steps, start_warmup_step, beta_1, beta_2, weight_decay_rate) and max_samples
    from the RCP in the installed mlperf-logging's rcp_checker/training_<run.ruleset>/rcps_bert.json: true, the
    RCP of run.global_batch_size (an RCP batch size: 256, 448, 1536, 3072, ... 16384); a batch size, that RCP's
    (a stated choice for a batch between RCP batch sizes); false, the descriptor states them. A value the
    descriptor that asks (or one based on it) states wins; its bases' values are not inherited, as they were
    chosen for their batch sizes; max_samples is derived from the RCP's runs (bert.rcp.safe_sample_cap). `mlperf-bert
    system show --origins` says where each value comes from. A closed LAMB descriptor that asks for none and whose
    learning rate or training_steps a base of another batch size states is refused, naming the nearest RCPs."""
    ruleset: str = checked(_ruleset_problem, default=DEFAULT_RULESET)
    """The MLPerf Training ruleset the runs are made for ("4.1.0" or "5.0.0"): its RCPs give
    rcp_hyperparameters and the closed division's least max_samples (`mlperf-bert system check`)."""
    eval: EvalSpec = field(default_factory=EvalSpec)
    """The eval and the stop rule (bert.eval_settings)."""
    max_samples: int = ranged(1)
    """The sample cap: a run that has not reached the target after this many training samples stops with status
    aborted."""
    seed: int | None = ranged(0, MAX_SEED, default=None)
    """The run seed (data order, initial weights, each rank's dropout); null: run_and_time.sh draws a distinct
    one per run. MLPerf key seed."""
    print_interval_steps: int = ranged(1, default=10)
    """Steps between the progress lines (loss, learning rate, sequences/s); the loss is read from the device only
    then."""
    dist_timeout_s: float = ranged(0, low_open=True, default=300.0)
    """Seconds a rank waits in a collective for one that died or hangs before the run is aborted."""
    log_weights_initialization: bool = True
    """Logs the weights_initialization key of every tensor (TF names) before init_stop."""
    init_checkpoint: str | None = None
    """The checkpoint to start from (`mlperf-bert checkpoint convert` output, or any layout it reads), relative
    as dataset.dir; CHECKPOINTDIR (--checkpoint-dir) names another folder that holds it; null: random weights.
    Its eval accuracy is measured before run_start, a check that it loaded (phase-1: about 0.34)."""
    dataset: DatasetSpec
    """The dataset (bert.data.settings)."""
    launch: LaunchSpec = field(default_factory=LaunchSpec)
    """How the ranks are started (bert.distributed.launch_settings)."""
    performance: PerformanceSpec | None = None
    """The hardware figures of `mlperf-bert simulate` (bert.performance_settings); null: not simulated."""
    notes: str | dict[str, str | None] = ""
    """What the values mean and where they come from: text, or an object of topics ("configuration",
    "performance", ...) that a descriptor merges with its base's topic by topic (null drops one)."""
    search: dict[str, SearchParam] = field(default_factory=dict)
    """The search space of `mlperf-bert hpo`: per run field a range or choices (bert.search_space)."""


@dataclass(frozen=True)
class Descriptor:
    name: str  # the descriptor's file stem, also the results folder and system JSON name of a package
    path: Path  # where the descriptor lies; a variant's path names its file-to-be (see write)
    description: dict[str, str]
    run: RunSpec
    balance: BalanceStrategy  # run.balance, parsed: what every component reads of the strategy
    data: dict = field(repr=False, compare=False)  # the validated JSON, from which variants are made
    # A CUDA run moved to the CPU by cpu_rehearsal: `data` is still the CUDA descriptor that was validated.
    rehearsal: bool = False

    def variant(self, run: Mapping[str, object] | None = None, *, name: str | None = None,
                description: Mapping[str, str] | None = None) -> Descriptor:
        """A validated copy with run fields replaced, each named by its dotted path below the run block
        (`global_batch_size`, `optimizer.beta_1`) and given as JSON or as a spec dataclass, and with system
        description fields replaced. The copy keeps this descriptor's folder, so relative paths mean the same
        files, and is named `name` (default: this name). A ConfigError names the field and the fix.
        Nothing is written: a variant that another process reads needs `write` first. A variant of a
        rehearsal is validated as the CUDA run and rehearsed on the CPU in turn."""
        data = with_run_values(self.data, {key: as_json(value) for key, value in (run or {}).items()})
        data["system"].update(description or {})
        system = descriptor_from_data(data, self.path.with_name(f"{name or self.name}.json"))
        return system.cpu_rehearsal() if self.rehearsal else system

    def cpu_rehearsal(self) -> Descriptor:
        """This CUDA run on the CPU, to rehearse it: gpu_check.sh's GPU_CHECK_DEVICE=cpu, benchmarks given
        --device cpu and tests of the CUDA-only fp16 path, whose autocast and loss scaling torch also runs on a
        CPU (emulated, slowly). Only run.device changes. Every descriptor rule was checked on the CUDA run; the
        one that keeps fp16 for CUDA is therefore not broken by a descriptor, and a rehearsal cannot be written
        (`write` refuses it), so no file ever asks a CPU for fp16."""
        if self.run.device != "cuda":
            raise ValueError(f"{self.name}: run.device is {self.run.device!r}; a CPU rehearsal is made from a CUDA "
                             "run (make the variant with device \"cuda\" first)")
        return dataclasses.replace(self, run=dataclasses.replace(self.run, device="cpu"), rehearsal=True)

    def cpu_variant(self, run: Mapping[str, object] | None = None, *, name: str | None = None,
                    description: Mapping[str, str] | None = None) -> Descriptor:
        """A variant (`variant`) with the `run` changes that runs on the CPU. In fp16, which a descriptor keeps
        for CUDA, it is the CUDA run rehearsed on the CPU (`cpu_rehearsal`): torch runs fp16 autocast and loss
        scaling there too."""
        run = dict(run or {})
        fp16 = run.get("precision", self.run.precision) == "fp16"
        system = self.variant({**run, "device": "cuda" if fp16 else "cpu"}, name=name, description=description)
        return system.cpu_rehearsal() if fp16 and not system.rehearsal else system

    def write(self, folder: str | os.PathLike) -> Descriptor:
        """Writes this descriptor as `folder/<name>.json` and returns it as loaded from there. Relative dataset
        and checkpoint paths are made absolute when the file lands in another repository root, so that the
        written descriptor describes the same run. Refuses to replace a different existing file, and to write
        a CPU rehearsal (it is no descriptor)."""
        if self.rehearsal:
            raise ValueError(f"{self.name}: a CPU rehearsal of a CUDA run cannot be written as a descriptor")
        path = Path(folder) / f"{self.name}.json"
        data = copy.deepcopy(self.data)
        if repository_root(path) != repository_root(self.path):
            data["run"]["dataset"]["dir"] = str(self.dataset_dir())
            if self.run.init_checkpoint is not None:
                data["run"]["init_checkpoint"] = str(self.init_checkpoint_path())
        text = json.dumps(data, indent=2) + "\n"
        if path.exists() and path.read_text(errors="replace") != text:
            raise FileExistsError(f"{path} already holds another descriptor; write the variant elsewhere or "
                                  "under another name")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return load_descriptor(path)

    @property
    def nodes(self) -> int:
        return int(self.description["number_of_nodes"])

    @property
    def world_size(self) -> int:
        return self.nodes * self.run.processes_per_node

    @property
    def per_process_batch(self) -> int:
        return self.run.global_batch_size // (self.world_size * self.run.gradient_accumulation_steps)

    @property
    def division(self) -> str:
        return self.description["division"]

    @property
    def submission_status(self) -> str:
        return STATUSES[self.description["status"]]

    @property
    def eval_interval_samples(self) -> int:
        return self.run.eval.interval(self.run.global_batch_size)

    def model_config(self) -> BertConfig:
        return self.run.model_config()

    def run_seed(self, given: int | None = None) -> int:
        """The one seed policy of every command: the seed given (--seed, SEED), else the descriptor's run.seed,
        else a fresh draw from the operating system's entropy, so that runs never share a seed by accident.
        Draws stay below 2^31, leaving room for the seeds of the runs that follow (seed + i)."""
        if given is not None:
            return given
        return self.run.seed if self.run.seed is not None else secrets.randbelow(2**31)

    @property
    def notes_text(self) -> str:
        """run.notes as one text: its topics in order."""
        notes = self.run.notes
        return notes if isinstance(notes, str) else " ".join(text for text in notes.values() if text)

    def init_checkpoint_path(self, folder: str | os.PathLike | None = None) -> Path | None:
        """run.init_checkpoint, or the file (or folder) of its name in `folder` (CHECKPOINTDIR, --checkpoint-dir):
        a site keeps its checkpoint where it likes, as it keeps its dataset (dataset_dir, the same rule)."""
        if self.run.init_checkpoint is None:
            return None
        name = Path(self.run.init_checkpoint)
        return self._site_path(name if folder is None else Path(folder) / name.name)

    def dataset_dir(self, override: str | os.PathLike | None = None) -> Path:
        """run.dataset.dir, or `override` (DATADIR, --data-dir)."""
        return self._site_path(Path(override if override is not None else self.run.dataset.dir))

    def dataset_needs(self, data_dir: str | os.PathLike | None = None) -> DatasetNeeds:
        """What this run asks of its dataset in `data_dir` (DATADIR, --data-dir; default: run.dataset.dir), for
        bert.data.dataset, which reads no descriptor."""
        run = self.run
        return DatasetNeeds(root=self.dataset_dir(data_dir), spec=run.dataset, strategy=self.balance,
                            length_bins=run.length_bins, max_seq_length=run.max_seq_length,
                            max_predictions_per_seq=run.max_predictions_per_seq, eval_samples=run.eval.samples,
                            global_batch_size=run.global_batch_size, model=run.model,
                            vocab_size=self.model_config().vocab_size, system=self.name, descriptor=self.path)

    def _site_path(self, path: Path) -> Path:
        """A path of the descriptor, or one given for it: relative ones are relative to the descriptor's root (the
        folder above its systems/ folder, else its own folder)."""
        return path if path.is_absolute() else repository_root(self.path) / path


def _closed(table: dict) -> str:
    """The names of the kinds of `table` (bert.kind_tables) that the closed division allows, as a descriptor writes
    them: "lamb", or "a" or "b"."""
    return " or ".join(f'"{kind.name}"' for kind in kinds_where(table, lambda kind: kind.closed_division))


def _cross_component_problems(system: Descriptor, config: BertConfig) -> list[tuple[str, str]]:
    """The rules between the settings of different components, and between the run and the system description;
    each component's own rules ran when its block was read (typed_config), so nothing here divides by zero."""
    run, binding, perf = system.run, system.run.launch.cpu_binding, system.run.performance
    bins_problem = run.length_bins is not None and length_bins_problem(run.length_bins, run.max_seq_length)
    ranks_and_steps = system.world_size * run.gradient_accumulation_steps
    rules = [
        (run.global_batch_size % ranks_and_steps == 0, "run.global_batch_size", f"{run.global_batch_size} is not "
         f"divisible by nodes x processes_per_node x gradient_accumulation_steps = {ranks_and_steps}"),
        (run.max_seq_length <= config.max_position_embeddings, "run.max_seq_length",
         f"{run.max_seq_length} exceeds the model's max_position_embeddings {config.max_position_embeddings}"),
        (run.max_samples >= run.global_batch_size, "run.max_samples", "must allow at least one step"),
        (run.device == "cuda" or run.precision != "fp16", "run.precision",
         "fp16 needs device cuda; use fp32 or bf16 on cpu"),
        (system.division == "open" or run.optimizer.kind.closed_division, "run.optimizer.name",
         f"{run.optimizer.name!r} is open-division only: the closed division requires {_closed(OPTIMIZERS)}; use "
         "it, or set system.division to \"open\""),
        (system.division == "open" or run.clip_kind.closed_division, "run.clip",
         f"{run.clip!r} is open-division only: the closed division requires {_closed(CLIP_KINDS)}; use one, or set "
         "system.division to \"open\""),
        (run.token_sizes == 0 or not system.balance.packed, "run.token_sizes",
         "packed rows change the number of sequences every step, so the shapes cannot be fixed: use another "
         "run.balance, or set token_sizes to 0"),
        (not run.cuda_graphs or run.device == "cuda", "run.cuda_graphs", "needs device cuda: set it to false"),
        (binding.numa_nodes is None or len(binding.numa_nodes) == run.processes_per_node,
         "run.launch.cpu_binding.numa_nodes", f"lists {len(binding.numa_nodes or [])} node(s) for "
         f"{run.processes_per_node} process(es) per node: give one per local rank, or null"),
        (perf is None or perf.intra_node_gb_s > 0 or run.processes_per_node == 1, "run.performance.intra_node_gb_s",
         "must be positive: the processes of a node allreduce over it"),
        (perf is None or perf.inter_node_gb_s > 0 or system.nodes == 1, "run.performance.inter_node_gb_s",
         "must be positive: the nodes allreduce over it"),
        (not bins_problem, "run.length_bins", bins_problem),
    ]
    return [(name, problem) for ok, name, problem in rules if not ok]


def descriptor_from_data(data: object, path: Path) -> Descriptor:
    """Validates descriptor JSON `data` (of the file `path`, whose stem names the system). The search space
    (run.search) is checked where it is used: bert.search_space."""
    where = str(path)
    if not SYSTEM_NAME.fullmatch(path.stem):
        raise ConfigError(where, "", f"{path.stem!r} cannot name a system: the descriptor's file name (without .json) "
                          f"names its results folder and package files, so use only {SYSTEM_NAME_RULE}; rename "
                          "the file")
    if not isinstance(data, dict) or set(data) != {"system", "run"}:
        keys = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise ConfigError(where, "", f'expected exactly the top-level fields "system" and "run", got {keys}')
    if not isinstance(data["system"], dict):
        raise ConfigError(where, "system", "expected an object with the MLPerf system description fields")
    for key, problem in description_problems(data["system"]):
        raise ConfigError(where, f"system.{key}", problem)
    try:
        filled, _ = with_reference_values(data, where)
    except RcpError as e:
        raise ConfigError(where, e.field, str(e)) from None
    run = from_dict(RunSpec, filled["run"], where, "run")
    system = Descriptor(path.stem, path.resolve(), dict(data["system"]), run,
                        balance_strategy(run.balance, run.max_seq_length), copy.deepcopy(data))
    for name, problem in _cross_component_problems(system, run.model_config()):
        raise ConfigError(where, name, problem)
    return system


def load_descriptor(path: str | os.PathLike) -> Descriptor:
    """Loads and validates a descriptor: a path, or a name looked up in the site folders, then in systems/
    (bert.descriptor_files.find_descriptor). A descriptor may name a base (`"base": "dgxa100_1x8"`) and state
    only what differs (merged_descriptor); the Descriptor holds the resolved values, and an error in a value it
    inherits names the base that sets it. A descriptor that asks for the reference's hyperparameters
    (run.rcp_hyperparameters) takes none of them from its bases (bert.reference_hyperparameters); a closed one
    that asks for none, with a learning-rate schedule its bases chose for another batch size, is refused."""
    path = find_descriptor(path)
    data, chain = resolved_descriptor(path)
    data = resolved_with_request(chain) or data
    try:
        system = descriptor_from_data(data, path)
    except ConfigError as e:
        origin = origin_of(chain, e.field) or path
        if origin == path:
            raise
        raise ConfigError(e.where, e.field, f"{e.problem} (the value comes from the base {origin.name}; state "
                          "the field in this descriptor to override it)") from None
    stale = stale_hyperparameters(chain, system.data)
    if stale:
        raise ConfigError(str(path), "run.optimizer", stale)
    return system

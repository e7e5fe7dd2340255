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
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from bert.descriptor_files import SYSTEM_NAME, SYSTEM_NAME_RULE, find_descriptor, origin_of, resolved_descriptor
from bert.mlperf_rules import (
    EVAL_SAMPLES,
    MLPERF_TARGET_ACCURACY,
    REFERENCE_PREP,
    STATUSES,
    description_problems,
    mlperf_eval_interval,
)
from bert.model.config import NAMED_CONFIGS, BertConfig, named_config
from bert.typed_config import ConfigError, checked, choice, from_dict, ranged

MAX_SEED = 2**32 - 1  # run seeds: numpy's and torch's generators take any seed from 0 to this
MAX_GLOBAL_BATCH = 2**20  # samples per step; the published BERT submissions use at most 16384
# A system name is the descriptor's file stem and names its results folder and package files.
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DEFAULT_SYSTEM = "cpu_tiny"  # what run_and_time.sh and the commands run when no system is named


def env_names_problem(env: dict[str, str]) -> str | None:
    """What is wrong with the names of an environment block: each must be a shell identifier, so that no name
    can be read as an option or an assignment of the command that exports it."""
    bad = [name for name in env if not ENV_NAME.fullmatch(name)]
    if not bad:
        return None
    return (f"{bad[0]!r} is not an environment variable name; use letters, digits and '_', not starting with a "
            "digit (e.g. NCCL_SOCKET_IFNAME)")


@dataclass(frozen=True, kw_only=True)
class SyntheticDataSpec:
    """The corpus `mlperf-bert data synth` writes (see bert.prep.synthetic.hdf5_corpus)."""

    train_samples: int = ranged(1, default=65536)
    eval_samples: int = ranged(1, default=2000)
    shards: int = ranged(1, default=8)
    vocab_size: int = ranged(1024, default=4096, note="the grammar's own words need that many pieces")
    max_seq_length: int = ranged(5, default=128, note="[CLS] A [SEP] B [SEP] with a token in each segment")
    max_predictions: int = ranged(1, default=20)
    seed: int = ranged(0, MAX_SEED, default=REFERENCE_PREP.random_seed)
    form: Literal["fixed", "varlen"] = "fixed"


@dataclass(frozen=True, kw_only=True)
class DatasetSpec:
    dir: str  # relative paths are relative to the descriptor's root (the folder above its systems/ folder)
    train_glob: str = "train/*.hdf5"
    eval_file: str = "eval.hdf5"
    vocab_file: str = "vocab.txt"
    synthetic: SyntheticDataSpec | None = None  # set: run_and_time.sh writes the corpus on first use


@dataclass(frozen=True, kw_only=True)
class OptimizerSpec:
    # lamb: the closed-division optimizer. adam: AdamW (decoupled weight decay), open division only; its
    # betas, epsilon and weight decay are logged under the LAMB key names (bert.mllog.hyperparameters).
    name: Literal["lamb", "adam"] = "lamb"
    base_learning_rate: float = ranged(0, low_open=True)
    epsilon: float = ranged(0, low_open=True, default=1e-6)
    beta_1: float = ranged(0, 1, high_open=True, default=0.9)
    beta_2: float = ranged(0, 1, high_open=True, default=0.999)
    weight_decay_rate: float = ranged(0, default=0.01)
    end_learning_rate: float = ranged(0, default=0.0)
    warmup_steps: int = ranged(0, default=0)
    # Negative: the warmup began before the first step (the reference's phase-2 flags: -76). A positive start
    # would give the reference a negative learning rate until then, so it is refused.
    start_warmup_step: int = ranged(high=0, default=0, note="a positive start gives the reference a negative "
                                    "learning rate before it; start the warm-up at 0 or before")
    training_steps: int = ranged(1)  # the decay horizon, logged as opt_learning_rate_training_steps
    poly_power: float = ranged(0, low_open=True, default=1.0)
    # How LAMB's update runs (bert.optim.lamb; never apex's FusedLAMB, see bert.optim.factory): eager, in foreach
    # kernels, or compiled, the same update through torch.compile (fused kernels; compiled before the clock,
    # bert.compile_warmup). AdamW is torch's fused kernel on CUDA either way.
    implementation: Literal["eager", "compiled"] = "eager"


@dataclass(frozen=True, kw_only=True)
class EvalSpec:
    target_accuracy: float = ranged(0, 1, low_open=True, high_open=True, default=MLPERF_TARGET_ACCURACY)
    samples: int = ranged(1, default=EVAL_SAMPLES)
    # null: the MLPerf formula of the global batch size
    interval_samples: int | None = ranged(1, default=None, note="or null for the MLPerf formula")
    batch_size: int = ranged(1, default=128)  # per process


@dataclass(frozen=True, kw_only=True)
class SearchParam:
    """The distribution of one run field in a hyperparameter search (`mlperf-bert hpo`): a range
    (`low`..`high`, optionally on a log scale or in steps; whole numbers for integer fields) or `choices`."""

    low: float | None = ranged(default=None)
    high: float | None = ranged(default=None)
    log: bool = False
    step: float | None = ranged(0, low_open=True, default=None)
    choices: list[str | int | float] | None = None


# The variables through which gloo and NCCL are told the network interface between the nodes.
SOCKET_IFNAME_VARS = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")
_INTERFACE_NAME = re.compile(r"[^\s/:,]{1,15}")  # Linux: at most 15 bytes, no '/', ':' or white space


def interface_names_problem(value: str) -> str | None:
    """What is wrong with run.launch.socket_ifname: comma-separated network interface names, which gloo and NCCL
    both read (gloo takes exact names, so NCCL's '^' and '=' forms are refused)."""
    bad = [name for name in value.split(",") if not _INTERFACE_NAME.fullmatch(name) or name[0] in "^="]
    if not bad:
        return None
    return (f"{bad[0]!r} is not a network interface name; give one or more names separated by commas, each of "
            "at most 15 characters without '/', ':' or spaces (e.g. \"eth0\" or \"ib0,ib1\")")
def numa_nodes_problem(nodes: list[int]) -> str | None:
    bad = [n for n in nodes if n < 0]
    return f"{bad[0]} is not a NUMA node number (0 or more)" if bad else None


@dataclass(frozen=True, kw_only=True)
class CpuBindingSpec:
    """Each rank's CPU cores and OpenMP threads (bert.distributed.cpu_binding): not bound, bound to every core of
    its NUMA node, or to its own share of them (NVIDIA's exclusive binding)."""

    mode: Literal["none", "node", "exclusive"] = "none"
    # The NUMA node of each local rank (its GPU's, as `nvidia-smi topo -m` shows); null: the local ranks dealt
    # over the host's nodes in order.
    numa_nodes: list[int] | None = checked(numa_nodes_problem, default=None)
    omp_num_threads: int | None = ranged(1, 1024, default=None, note="or null: a bound rank's physical cores; more "
                                        "than any host has, 100000 crashed a rank")


@dataclass(frozen=True, kw_only=True)
class LaunchSpec:
    """How run_and_time.sh starts the ranks (srun under Slurm, torchrun elsewhere); see bert.distributed.plan."""

    env: dict[str, str] = checked(env_names_problem, default_factory=dict)  # exported to every rank, e.g. NCCL_*
    master_port: int = ranged(1, 65535, default=29500)
    # The network interface(s) between the nodes, the GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME of every rank; null:
    # gloo binds to the address of the host's name, NCCL picks an interface of its own.
    socket_ifname: str | None = checked(interface_names_problem, default=None)
    # How long the multi-node pre-flight (bert.distributed.preflight) waits: node 0 for every node's report, each
    # node for node 0; a node that cannot reach node 0 gives up after it.
    preflight_timeout_s: float = ranged(1, 600, default=30.0)
    cpu_binding: CpuBindingSpec = field(default_factory=CpuBindingSpec)

    def socket_env(self) -> dict[str, str]:
        return dict.fromkeys(SOCKET_IFNAME_VARS, self.socket_ifname) if self.socket_ifname else {}


@dataclass(frozen=True, kw_only=True)
class PerformanceSpec:
    """Declared hardware figures for `mlperf-bert simulate` (bert.simulate.time_to_train); the notes say where
    each comes from. The bytes the gradient and the optimizer move come from the run block (grad_comm_dtype,
    optimizer), not from here."""

    # Training sequences/s of one accelerator, a published or measured figure of this harness's kind of run; or
    # null, and the two below: an estimate from the model's FLOPs per sequence at the MLPerf length mix.
    gpu_samples_per_s: float | None = ranged(0, low_open=True, default=None)
    model_flops_utilization: float | None = ranged(0, 1, low_open=True, default=None)
    peak_tflops: float | None = ranged(0, low_open=True, default=None)  # the datasheet's dense bf16/fp16 rate
    eval_speedup: float = ranged(0, low_open=True, default=3.0)  # eval / training throughput (forward only: ~3x)
    hbm_gb_s: float = ranged(0, low_open=True)  # accelerator memory bandwidth: the optimizer step is memory-bound
    intra_node_gb_s: float = ranged(0)  # per-accelerator allreduce bus bandwidth in a node (NVLink; 0: one GPU)
    inter_node_gb_s: float = ranged(0, default=0.0)  # per-node network bandwidth, all NICs together (0: single node)
    link_latency_us: float = ranged(0, default=5.0)  # per hop of an allreduce step
    allreduce: Literal["ring", "tree"] = "ring"  # the inter-node algorithm (NCCL_ALGO)
    # null: the reference convergence point of the global batch
    samples_to_converge: int | None = ranged(1, default=None)


# How a step's samples are spread over the ranks (bert.data.balance_plans): random per-rank batches; a fixed count
# from each length bin per rank; that plus a per-node exchange sorted and dealt in snake order (the seed
# paper); an exchange over all ranks (NVIDIA's exchange padding); or up to 3 sequences per packed row.
Balance = Literal["none", "stratified", "stratified+local_presort", "global_presort", "packed"]
ClipMode = Literal["after_allreduce", "before_allreduce", "bucketwise_before_allreduce"]
Precision = Literal["fp32", "bf16", "fp16", "fp8"]
# How a presort group's gathered sequences are spread over its ranks (bert.data.balance_plans.deal): balanced
# largest differencing with equal counts (closest to equal cost), or the seed paper's snake order.
PresortDeal = Literal["balanced", "snake"]
MAX_BALANCE_LOOKAHEAD = 8
MAX_TOKEN_SIZES = 64


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    model: str = "large"
    # Fields of bert.model.config.BertConfig to change, e.g. {"gelu": "erf"} (the reference's is "tanh").
    model_overrides: dict[str, int | float | str] = field(default_factory=dict)
    device: Literal["cpu", "cuda"] = choice({"gpu": "cuda", "GPU": "cuda", "nvidia": "cuda", "CPU": "cpu"})
    processes_per_node: int = ranged(1)
    # fp8: the encoder's Linear layers in FP8 (bert.model.fp8: Transformer Engine where importable, else torchao's
    # float8 training), bf16 autocast everywhere else.
    precision: Precision = "fp32"
    # fp16: the dynamic loss scale to start from (NVIDIA's MLPerf BERT configurations set 1024; torch's 2^16
    # overflows in the first steps of a run, and each overflow skips an update).
    initial_loss_scale: float = ranged(0, low_open=True, default=1024.0)
    global_batch_size: int = ranged(1, MAX_GLOBAL_BATCH)
    gradient_accumulation_steps: int = ranged(1, default=1)
    max_seq_length: int = ranged(5, default=REFERENCE_PREP.max_seq_length,
                                 note="[CLS] A [SEP] B [SEP] with a token in each segment")
    max_predictions_per_seq: int = ranged(1, default=REFERENCE_PREP.max_predictions_per_seq)
    optimizer: OptimizerSpec
    # Where the gradient is clipped to clip_norm (bert.distributed.clipping): the global norm after DDP's
    # allreduce (NVIDIA's), each rank's whole gradient before one allreduce (the reference's), or each DDP bucket
    # before its own (the seed paper's).
    clip: ClipMode = "after_allreduce"
    clip_norm: float = ranged(0, low_open=True, default=1.0)
    # DDP's gradient bucket size, the unit of bucket-wise clipping
    bucket_cap_mb: float = ranged(0, low_open=True, default=25.0)
    # The dtype the gradient travels in between the ranks, with every clipping mode: fp32 (the reference), or
    # bf16 (half the bytes; each rank's share is rounded to bf16 before the sum, DDP's bf16 compression).
    grad_comm_dtype: Literal["fp32", "bf16"] = "fp32"
    unpadded: bool = True
    # torch.compile each encoder layer. A part that fails to compile or to run compiled in the warm-up before the
    # clock (bert.compile_warmup) runs eager instead, said in the log and on stderr; "required": such a failure ends
    # the run (exit status 2) instead.
    compile: bool | Literal["required"] = False
    # Rounds each micro-batch's unpadded token count up to one of this many sizes with filler sequences that no
    # loss reads (bert.model.token_rounding), so that the encoder meets a few fixed shapes (compiled without dynamic
    # shapes, CUDA graphs); 0: off.
    token_sizes: int = ranged(0, MAX_TOKEN_SIZES, default=0, note="each size is one more compiled graph")
    # Captures the compiled encoder layers under CUDA graphs (torch.compile's "reduce-overhead" mode): one
    # graph per token size, replayed without a kernel launch from the host each.
    cuda_graphs: bool = False
    balance: Balance = "none"
    # Upper edges of the length bins; null: the data's own length quantiles, one bin per sequence of a per-rank
    # batch (bins that one length fills are merged), measured on the first training shard.
    length_bins: list[int] | None = None
    presort_deal: PresortDeal = "balanced"
    # Stratified strategies: a rank looks at (1 + lookahead) x its draws of each bin and takes the draws that bring
    # its batch's cost closest to the target every rank shares (bert.data.lookahead); 0 takes them in order.
    balance_lookahead: int = ranged(0, MAX_BALANCE_LOOKAHEAD, default=1, note="0 takes the draws in order")
    eval: EvalSpec = field(default_factory=EvalSpec)
    max_samples: int = ranged(1)  # the sample cap: a run that has not reached the target by then stops as aborted
    seed: int | None = ranged(0, MAX_SEED, default=None)  # null: run_and_time.sh draws a distinct seed per run
    print_interval_steps: int = ranged(1, default=10)
    # How long a rank waits in a collective for one that died or hangs before the run is aborted (seconds).
    dist_timeout_s: float = ranged(0, low_open=True, default=300.0)
    # fp16: more consecutive loss-scale overflows than this abort the run (the scale has fallen 2^N-fold).
    max_loss_scale_overflows: int = ranged(1, default=24)
    log_weights_initialization: bool = True
    # A checkpoint to start from (`mlperf-bert checkpoint convert` output, or any layout it reads); relative
    # paths as dataset.dir's; CHECKPOINTDIR (--checkpoint-dir) names another folder that holds it. null: random
    # initialisation. Its eval accuracy is measured before run_start, outside the timed region, as a check that it
    # loaded (phase-1: about 0.34).
    init_checkpoint: str | None = None
    dataset: DatasetSpec
    launch: LaunchSpec = field(default_factory=LaunchSpec)
    performance: PerformanceSpec | None = None  # set: `mlperf-bert simulate` can predict this system
    # What the values mean and where they come from: text, or an object of topics ("configuration",
    # "performance", ...), which a descriptor merges with its base's topic by topic (null drops one).
    notes: str | dict[str, str | None] = ""
    search: dict[str, SearchParam] = field(default_factory=dict)  # the space of `mlperf-bert hpo`


@dataclass(frozen=True)
class Descriptor:
    name: str  # the descriptor's file stem, also the results folder and system JSON name of a package
    path: Path  # where the descriptor lies; a variant's path names its file-to-be (see write)
    description: dict[str, str]
    run: RunSpec
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
        data = with_run_values(self.data, {key: _as_json(value) for key, value in (run or {}).items()})
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
        if self.run.eval.interval_samples is not None:
            return self.run.eval.interval_samples
        return mlperf_eval_interval(self.run.global_batch_size)

    def model_config(self) -> BertConfig:
        return named_config(self.run.model, **self.run.model_overrides)

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

    def _site_path(self, path: Path) -> Path:
        """A path of the descriptor, or one given for it: relative ones are relative to the descriptor's root (the
        folder above its systems/ folder, else its own folder)."""
        return path if path.is_absolute() else repository_root(self.path) / path


def repository_root(descriptor: Path) -> Path:
    parent = descriptor.resolve().parent
    return parent.parent if parent.name == "systems" else parent


def _check_description(where: str, desc: object) -> dict[str, str]:
    if not isinstance(desc, dict):
        raise ConfigError(where, "system", "expected an object with the MLPerf system description fields")
    problems = description_problems(desc)
    if problems:
        key, problem = problems[0]
        raise ConfigError(where, f"system.{key}", problem)
    return dict(desc)


def _check_run(where: str, system: Descriptor) -> None:
    run = system.run
    try:
        config = system.model_config()
    except ConfigError as e:  # a model config field, which only an override can set wrong
        raise ConfigError(where, f"run.model_overrides.{e.field}", e.problem) from None
    except ValueError as e:
        field_name = "run.model_overrides" if run.model in NAMED_CONFIGS and run.model_overrides else "run.model"
        raise ConfigError(where, field_name, str(e)) from None
    # Cross-field rules; each field's own range was checked when the run block was read (typed_config), so
    # nothing here divides by zero.
    checks = [
        (run.global_batch_size % (system.world_size * run.gradient_accumulation_steps) == 0,
         "run.global_batch_size", f"{run.global_batch_size} is not divisible by nodes x processes_per_node x "
         f"gradient_accumulation_steps = {system.world_size * run.gradient_accumulation_steps}"),
        (run.max_seq_length <= config.max_position_embeddings, "run.max_seq_length",
         f"{run.max_seq_length} exceeds the model's max_position_embeddings {config.max_position_embeddings}"),
        (run.max_samples >= run.global_batch_size, "run.max_samples", "must allow at least one step"),
        (run.device == "cuda" or run.precision != "fp16", "run.precision",
         "fp16 needs device cuda; use fp32 or bf16 on cpu"),
        (run.optimizer.name == "lamb" or run.optimizer.implementation == "eager", "run.optimizer.implementation",
         "\"compiled\" compiles LAMB's update; AdamW runs torch's fused kernel already: use \"eager\""),
        (system.division == "open" or run.optimizer.name == "lamb", "run.optimizer.name",
         f"{run.optimizer.name!r} is open-division only: the closed division requires \"lamb\"; use it, or "
         "set system.division to \"open\""),
        (run.token_sizes == 0 or run.unpadded, "run.token_sizes",
         "rounds the unpadded layout's token count: set run.unpadded to true, or token_sizes to 0"),
        (run.token_sizes == 0 or run.balance != "packed", "run.token_sizes",
         "packed rows change the number of sequences every step, so the shapes cannot be fixed: use another "
         "run.balance, or set token_sizes to 0"),
        (not run.cuda_graphs or run.device == "cuda", "run.cuda_graphs", "needs device cuda: set it to false"),
        (not run.cuda_graphs or run.token_sizes > 0, "run.cuda_graphs",
         "a CUDA graph replays one shape: set run.token_sizes (e.g. 16) so the token counts take a few, or "
         "cuda_graphs to false"),
        (not run.cuda_graphs or run.compile, "run.cuda_graphs",
         "captures the compiled encoder layers: set run.compile to true, or cuda_graphs to false"),
        (not run.launch.socket_ifname or not set(SOCKET_IFNAME_VARS) & set(run.launch.env), "run.launch.env",
         f"sets {' or '.join(sorted(set(SOCKET_IFNAME_VARS) & set(run.launch.env)))} beside run.launch.socket_ifname, "
         "which sets both: remove it from run.launch.env"),
    ]
    binding = run.launch.cpu_binding
    checks.append((binding.numa_nodes is None or len(binding.numa_nodes) == run.processes_per_node,
                   "run.launch.cpu_binding.numa_nodes", f"lists {len(binding.numa_nodes or [])} node(s) for "
                   f"{run.processes_per_node} process(es) per node: give one per local rank, or null"))
    perf = run.performance
    if perf is not None:
        estimate = perf.model_flops_utilization is not None or perf.peak_tflops is not None
        checks += [
            ((perf.gpu_samples_per_s is None) == estimate
             and (perf.model_flops_utilization is None) == (perf.peak_tflops is None),
             "run.performance.gpu_samples_per_s", "give either gpu_samples_per_s (published or measured) or both "
             "model_flops_utilization and peak_tflops (an estimate), not both and not neither"),
            (perf.intra_node_gb_s > 0 or run.processes_per_node == 1, "run.performance.intra_node_gb_s",
             "must be positive: the processes of a node allreduce over it"),
            (perf.inter_node_gb_s > 0 or system.nodes == 1, "run.performance.inter_node_gb_s",
             "must be positive: the nodes allreduce over it"),
        ]
    for ok, name, problem in checks:
        if not ok:
            raise ConfigError(where, name, problem)
    _check_length_bins(where, run)


def length_bins_problem(edges: list[int], max_seq_length: int) -> str | None:
    """What is wrong with upper length-bin edges for sequences up to `max_seq_length`, or None: the one rule of
    the descriptor's run.length_bins and of every --bins option."""
    if not edges or edges[0] < 1 or any(b <= a for a, b in zip(edges, edges[1:])):
        return f"{edges} must be positive, increasing upper edges, e.g. [128, 256, 384, 512]"
    if edges[-1] < max_seq_length:
        return f"the last edge {edges[-1]} must reach the maximum sequence length {max_seq_length}"
    return None


def _check_length_bins(where: str, run: RunSpec) -> None:
    problem = None if run.length_bins is None else length_bins_problem(run.length_bins, run.max_seq_length)
    if problem:
        raise ConfigError(where, "run.length_bins", problem)


def _as_json(value: object) -> object:
    """A spec dataclass as the JSON object that describes it; anything else as it is."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def with_run_values(data: dict, values: Mapping[str, object]) -> dict:
    """A copy of descriptor JSON `data` with run fields set, each named by its path below the run block
    (`global_batch_size`, `optimizer.beta_1`), and nothing checked: Descriptor.variant checks what it makes, and
    the tests of what the loader refuses write the result as it is."""
    data = copy.deepcopy(data)
    for path, value in values.items():
        *parents, name = path.split(".")
        block = data["run"]
        for parent in parents:
            block = block.setdefault(parent, {})
        block[name] = value
    return data


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
    description = _check_description(where, data["system"])
    run = from_dict(RunSpec, data["run"], where, "run")
    system = Descriptor(path.stem, path.resolve(), description, run, copy.deepcopy(data))
    _check_run(where, system)
    return system


def load_descriptor(path: str | os.PathLike) -> Descriptor:
    """Loads and validates a descriptor: a path, or a name looked up in the site folders, then in systems/
    (bert.descriptor_files.find_descriptor). A descriptor may name a base (`"base": "dgxa100_1x8"`) and state
    only what differs (merged_descriptor); the Descriptor holds the resolved values, and an error in a value it
    inherits names the base that sets it."""
    path = find_descriptor(path)
    data, chain = resolved_descriptor(path)
    try:
        return descriptor_from_data(data, path)
    except ConfigError as e:
        origin = origin_of(chain, e.field) or path
        if origin == path:
            raise
        raise ConfigError(e.where, e.field, f"{e.problem} (the value comes from the base {origin.name}; state "
                          "the field in this descriptor to override it)") from None

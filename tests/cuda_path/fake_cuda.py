"""Fake CUDA: the trainer's CUDA code path, run on a CPU-only build of torch with tensors that claim cuda:0.

`install()` prepares a process; `FakeCuda` makes fake CUDA modules and batches; `Recorder` watches a step;
`train_step_record` runs real training steps of a descriptor and returns what the recorder saw. The tests
beside this file assert on those records, in one worker process (conftest.py), because `install()` changes the
process for good.

How it works (torch 2.13 CPU build; each piece is needed, and each is checked by the tests running at all):
- FakeTensorMode runs every op on shapes, dtypes and devices only, so a tensor can claim cuda:0. Modules are
  built on the meta device and materialised with `to_empty(device="cuda")` inside the mode; host tensors
  become fake CUDA tensors through `FakeTensor(mode, t.to("meta"), cuda)`.
- autograd records a CUDA device guard's stream for every CUDA input of a graph node; a CPU build registers
  none. `install()` puts a no-op one in c10's guard registry: torch's own Python-defined guard
  (torch._C._acc.DeviceGuard, a no-op for every call) claiming the CUDA device type, registered through the
  PrivateUse1 entry point and moved to the CUDA slot.
- the autograd engine asks the accelerator (`at::getAccelerator`, CUDA only when torch has CUDA hooks) for the
  streams of CUDA gradients, which a CPU build cannot answer. While the engine runs, fake tensors therefore
  report the meta device to C++ (which needs no streams), and tensors that C++ backward formulas create on
  that device become fake CUDA tensors again. Python code, and the recorder, still see cuda:0 throughout.
  AOTAutograd traces the backward with wrappers (FunctionalTensor) that keep the device they saw when made:
  the gradients handed to the engine are copied inside it, so they report meta too (one copy node per incoming
  gradient in a traced backward).
- `torch.cuda.is_available()` and `is_bf16_supported()` answer True, so that `torch.autocast("cuda")` applies
  CUDA's casting policy (which differs from the CPU's: LayerNorm runs in fp32) and GradScaler("cuda") works;
  `get_device_capability()` answers (9, 0), an H100's or H200's, for the kernel checks (bert.model.varlen_attention).
- DDP runs over torch's fake process group ("fake" backend: collectives return at once); its start-up check
  of parameter shapes and its runtime statistics read tensor data, so the first is skipped and the second
  not collected. DDP rebuilds its buckets in the second forward by reading host data, which fake tensors
  lack: a DDP scenario runs one forward (tests/bert/distributed covers the rebuild on gloo).

- torch.compile traces for real (traced_compile.py): Dynamo saves and restores the CUDA generator's state
  around each frame it traces, so `torch.cuda.get_rng_state`/`set_rng_state` keep a stored state; the
  Recorder is off while torch.compile traces (Dynamo compiles nothing under a user's dispatch mode) and on
  while the compiled graphs run. Only inductor's code generation and CUDA graph recording need a real GPU.

What it cannot show: values (no dropout mask can be compared), and which SDPA backend CUDA would pick (a CPU
build has no CUDA kernel selection: SDPA falls back to its math decomposition). The record therefore names
the attention entry point the trainer called and its arguments (for bert::varlen_attention, its fake kernel
runs: the flash kernel it stands for is CUDA code); acceptance/gpu_check.sh lists the kernels on a real GPU.
"""

from __future__ import annotations

import contextlib
import ctypes
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch._dynamo
from torch._subclasses import fake_tensor
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes
from torch.utils._pytree import tree_leaves

from tests.cuda_path.traced_compile import VARLEN, TracedGraph, compile_without_gpu_code
from tests.helpers.stand_in_apex import apex_importable

CUDA = torch.device("cuda", 0)
_REPO = Path(__file__).resolve().parents[2]
_state: dict[str, object] = {}  # what install() registered, kept alive for the process


class _CudaGuard(torch._C._acc.DeviceGuard):
    def type_(self):
        return torch._C._autograd.DeviceType.CUDA


def _guard_registry() -> ctypes.Array:
    """c10's table of device guards, one pointer per device type."""
    lib = ctypes.CDLL(str(Path(torch.__file__).parent / "lib" / "libc10.so"))
    slots = int(torch._C._autograd.DeviceType.PrivateUse1.value) + 1
    table = ctypes.c_void_p.in_dll(lib, "_ZN3c104impl26device_guard_impl_registryE")
    return (ctypes.c_void_p * slots).from_address(ctypes.addressof(table))


def _register_cuda_guard() -> None:
    registry = _guard_registry()
    cuda, private = (int(t.value) for t in (torch._C._autograd.DeviceType.CUDA,
                                            torch._C._autograd.DeviceType.PrivateUse1))
    if registry[cuda]:
        return  # a CUDA build registered its own
    if registry[private] or not torch._C._acc.register_python_privateuseone_device_guard(_state.setdefault(
            "guard", _CudaGuard())):
        raise RuntimeError("fake CUDA needs the PrivateUse1 device guard slot, and a backend holds it")
    registry[cuda], registry[private] = registry[private], None


@contextlib.contextmanager
def _engine_sees_meta():
    """While the autograd engine runs: fake tensors report meta to C++, and meta results are fake CUDA."""
    handlers, device_op = fake_tensor._DISPATCH_META_HANDLERS, torch.ops.prim.device.default
    handler = handlers[device_op]
    dispatch, normalize = (FakeTensor.__dict__[name] for name in ("__torch_dispatch__", "_normalize_fake_device"))

    def report_meta(cls, func, types, args=(), kwargs=None):
        if func is device_op:
            return torch.device("meta")
        return dispatch.__func__(cls, func, types, args, kwargs)

    def meta_is_cuda(device: torch.device) -> torch.device:
        return CUDA if device.type == "meta" else normalize.__func__(device)

    handlers[device_op] = lambda args: torch.device("meta")
    FakeTensor.__torch_dispatch__ = classmethod(report_meta)
    FakeTensor._normalize_fake_device = staticmethod(meta_is_cuda)
    try:
        yield
    finally:
        handlers[device_op] = handler
        FakeTensor.__torch_dispatch__ = dispatch
        FakeTensor._normalize_fake_device = normalize


def _reports_cuda_to_the_engine(t: object) -> bool:
    """A tensor that is no FakeTensor but claims CUDA in C++ (AOTAutograd's FunctionalTensor, whose device was
    fixed when it was made): the engine would ask the accelerator for its stream."""
    return isinstance(t, torch.Tensor) and not isinstance(t, FakeTensor) and t.is_cuda


def _run_engine_on_meta() -> None:
    import torch.autograd.graph

    run = torch.autograd.graph._engine_run_backward

    def run_on_meta(outputs, grads, *args, **kwargs):
        with _engine_sees_meta():
            # A copy made here reports meta (its fake tensor does, and wrappers take the device they see when
            # made): under AOTAutograd the traced backward therefore starts with one copy of each gradient.
            grads = tuple(g.clone() if _reports_cuda_to_the_engine(g) else g for g in grads)
            return run(outputs, grads, *args, **kwargs)

    torch.autograd.graph._engine_run_backward = run_on_meta
    torch.autograd._engine_run_backward = run_on_meta  # torch.autograd.backward's own reference


def _ddp_without_host_reads() -> None:
    import torch.nn.parallel.distributed as ddp_module

    class Statistics:
        """DDP's logger, less the runtime statistics (their CUDA timer exists only in CUDA builds)."""

        def __init__(self, logger):
            self._logger = logger

        def set_runtime_stats_and_log(self) -> None:
            pass

        def __getattr__(self, name):
            return getattr(self._logger, name)

    init = ddp_module.DistributedDataParallel.__init__

    def fake_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.logger = Statistics(self.logger)

    ddp_module._verify_param_shape_across_processes = lambda *args, **kwargs: None
    ddp_module.DistributedDataParallel.__init__ = fake_init


def _stand_in_for_the_cuda_generator() -> None:
    """Dynamo (around each frame it traces) and bert.compile_warmup save the CUDA generator's state and restore it; fake
    CUDA has no generator, so its state is stored bytes (fake tensors draw no random numbers), read and written as
    a host tensor outside any fake mode."""
    _state["cuda_rng_state"] = bytes(16)

    def get_rng_state(device="cuda") -> torch.Tensor:
        with _disable_current_modes():
            return torch.tensor(list(_state["cuda_rng_state"]), dtype=torch.uint8)

    def set_rng_state(new_state: torch.Tensor, device="cuda") -> None:
        with _disable_current_modes():
            _state["cuda_rng_state"] = bytes(new_state.tolist())

    torch.cuda.get_rng_state, torch.cuda.set_rng_state = get_rng_state, set_rng_state


def install() -> None:
    """Prepares this process for fake CUDA (for good: call it in a worker process, before any backward)."""
    if _state.get("installed"):
        return
    torch.set_num_threads(1)
    if torch.accelerator.current_accelerator() is None:  # the CPU build: no CUDA hooks, no guard
        _register_cuda_guard()
        _run_engine_on_meta()
        torch.cuda.is_available = lambda: True
        torch.cuda.is_bf16_supported = lambda including_emulation=True: True
        torch.cuda.get_device_capability = lambda device=None: (9, 0)
        torch.cuda.synchronize = lambda device=None: None  # fake tensors compute nothing to wait for
        # torch.cuda.device(0), which inductor's passes enter: the one fake device is always current
        torch.cuda._exchange_device = lambda device: 0
        torch.cuda._maybe_exchange_device = lambda device: 0  # two functions: Dynamo registers each once
        _stand_in_for_the_cuda_generator()
    _ddp_without_host_reads()
    _state["installed"] = True


def fake_process_group(world_size: int) -> None:
    """A default process group of `world_size` ranks that communicates nothing (this process is rank 0)."""
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if dist.is_initialized():
        if dist.get_world_size() != world_size:
            dist.destroy_process_group()
        else:
            return
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world_size)


class FakeCuda:
    """One FakeTensorMode and the ways into it."""

    def __init__(self):
        self.mode = FakeTensorMode(allow_non_fake_inputs=False)

    def tensor(self, t: torch.Tensor) -> torch.Tensor:
        """A fake CUDA tensor of a host tensor's shape and dtype (its values are not kept)."""
        return FakeTensor(self.mode, t.to("meta"), CUDA)

    def module(self, module: torch.nn.Module) -> torch.nn.Module:
        """A module built on the meta device, materialised on fake cuda:0 (uninitialised, as fake tensors are)."""
        self.mode.allow_non_fake_inputs = True  # the meta parameters go in
        try:
            with self.mode:
                return module.to_empty(device=CUDA)
        finally:
            self.mode.allow_non_fake_inputs = False


class HostSync(RuntimeError):
    """The step asked for a value or a shape that only the device knows."""


def _where() -> str:
    """The innermost frame of the harness's code under test (bert/, benchmarks/)."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        path = Path(frame.filename)
        if path.is_relative_to(_REPO) and path.parts[len(_REPO.parts)] in ("bert", "benchmarks"):
            return f"{path.relative_to(_REPO)}:{frame.lineno} ({frame.name})"
    return "torch"


def _device(t: torch.Tensor) -> str:
    return str(t.fake_device) if isinstance(t, FakeTensor) else f"real {t.device}"


@dataclass(frozen=True)
class AttentionCall:
    kernel: str  # "scaled_dot_product_attention" or "varlen_attention" (bert::varlen_attention)
    dtype: str
    dropout_p: float
    masked: bool  # a mask argument was passed (SDPA's attn_mask)


def _copies_to_the_host(func, args: tuple, out: object) -> bool:
    if func is torch.ops.aten._to_copy.default:
        source, target = args[0], out
    elif func is torch.ops.aten.copy_.default:
        target, source = args[:2]
    else:
        return False
    return _device(source) == str(CUDA) and _device(target).endswith("cpu")


class Recorder(TorchDispatchMode):
    """Watches every operator below it: tensors off cuda:0, host synchronisations (an op whose result is a
    value or shape only the device knows, or a copy to the host), and the attention entry points taken."""

    def __init__(self):
        super().__init__()
        self.ops = 0
        self.off_device: list[str] = []
        self.host_syncs: list[str] = []
        self.attention: list[AttentionCall] = []
        self.max_lens: list[int] = []  # the longest sequence each varlen_attention call was told of
        self.sdpa_calls = _AttentionCalls(self.attention)

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        """Off while torch.compile traces (Dynamo compiles nothing under a user's dispatch mode), on while the
        compiled graphs run: the record holds the operators the compiled regions execute."""
        return True

    def __enter__(self):
        self.sdpa_calls.__enter__()
        return super().__enter__()

    def __exit__(self, *exc):
        super().__exit__(*exc)
        return self.sdpa_calls.__exit__(*exc)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.namespace == "prim":
            return func(*args, **kwargs)
        self.ops += 1
        if func is VARLEN:
            q, max_len, dropout_p = args[0], args[4], args[5]
            self.attention.append(AttentionCall("varlen_attention", str(q.dtype).removeprefix("torch."),
                                                float(dropout_p), False))
            self.max_lens.append(int(max_len))
        if torch.Tag.data_dependent_output in func.tags or torch.Tag.dynamic_output_shape in func.tags:
            self.host_syncs.append(f"{func} at {_where()}")
            raise HostSync(f"{func} at {_where()} needs a value from the device")
        try:
            out = func(*args, **kwargs)
        except fake_tensor.FakeTensorDeviceMismatchError as e:  # a real GPU refuses the mix too
            self.off_device.append(f"{func} mixes devices ({e}) at {_where()}")
            raise
        devices = {_device(t) for t in tree_leaves((args, kwargs, out)) if isinstance(t, torch.Tensor)}
        if _copies_to_the_host(func, args, out):
            self.host_syncs.append(f"{func} copies from the GPU to the host at {_where()}")
        if devices - {str(CUDA)}:
            self.off_device.append(f"{func} on {sorted(devices)} at {_where()}")
        return out


class _AttentionCalls(TorchFunctionMode):
    """Records scaled_dot_product_attention calls (the padded path), which a CPU build decomposes before any
    dispatch mode sees them; bert::varlen_attention is an operator of its own, recorded by the Recorder."""

    def __init__(self, calls: list[AttentionCall]):
        super().__init__()
        self.calls = calls

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        # Dynamo traces this mode into compiled regions: there it records nothing (a list it appended to would be
        # a guard that fails at every call); no compiled region takes the padded path on fake CUDA.
        if not torch.compiler.is_compiling() and getattr(func, "__name__", "") == "scaled_dot_product_attention":
            dropout = kwargs.get("dropout_p", args[4] if len(args) > 4 else 0.0)
            mask = kwargs.get("attn_mask", args[3] if len(args) > 3 else None)
            self.calls.append(AttentionCall("scaled_dot_product_attention", str(args[0].dtype).removeprefix("torch."),
                                            float(dropout), mask is not None))
        return func(*args, **kwargs)


@dataclass(frozen=True)
class StepSetup:
    """A training step of systems/h200_1x1.json (BERT-large layer shapes, unpadded, LAMB, dropout 0.1) with
    fewer layers and the changes below."""

    precision: str = "bf16"
    layers: int = 2
    sequences: int = 8  # per micro-batch and rank
    max_length: int = 512
    accumulate: int = 1
    world_size: int = 1  # > 1: DDP over a fake process group, this process rank 0
    clip: str = "after_allreduce"
    grad_comm_dtype: str = "fp32"
    steps: int = 2
    token_sizes: int = 0  # > 0: the batches rounded to that many sizes (run.token_sizes)
    compile: bool = False  # the encoder layers compiled (run.compile)
    cuda_graphs: bool = False  # the layers compiled under CUDA graphs (run.compile and run.cuda_graphs)
    compiled_lamb: bool = False  # LAMB's update compiled (run.optimizer.implementation "compiled")
    backend: str = "aot_eager"  # what compiles Dynamo's graphs (tests/cuda_path/traced_compile.py)
    apex: bool = False  # apex importable (tests/helpers/stand_in_apex.py), as in NVIDIA's containers
    compile_warmup: bool = False  # bert.compile_warmup compiles before the steps, as bert.train does before the clock


@dataclass
class StepRecord:
    ops: int = 0
    off_device: list[str] = field(default_factory=list)
    host_syncs: list[str] = field(default_factory=list)
    attention: list[AttentionCall] = field(default_factory=list)
    max_lens: list[int] = field(default_factory=list)  # varlen_attention's max_len argument, call by call
    longest: list[int] = field(default_factory=list)  # the longest real sequence of each training batch
    compiles: list[dict] = field(default_factory=list)  # what torch.compile was asked for
    graphs: list[TracedGraph] = field(default_factory=list)  # what Dynamo traced, in order
    graphs_in_compile_warmup: int = 0  # how many of them the warm-up traced (the first ones)
    token_counts: list[int] = field(default_factory=list)  # the encoder's tokens of each training batch
    grads_kept: bool = False  # every parameter's .grad was there before the first step and is the same after
    layer_dtypes: list[tuple[str, str]] = field(default_factory=list)  # (input, output) of each encoder layer
    eval_attention: list[AttentionCall] = field(default_factory=list)  # an eval forward after the steps
    data_parallel: bool = False
    optimizer: str = ""  # the optimizer's class
    apex_modules: list[str] = field(default_factory=list)  # the model's modules that are apex's
    error: str | None = None  # what stopped the scenario (a host synchronisation, a device mix, a bug)


def step_system(setup: StepSetup):
    from bert.system import load_descriptor

    changes = {"model_overrides": {"num_layers": setup.layers}, "precision": setup.precision,
               "processes_per_node": setup.world_size, "gradient_accumulation_steps": setup.accumulate,
               "global_batch_size": setup.sequences * setup.accumulate * setup.world_size, "clip": setup.clip,
               "grad_comm_dtype": setup.grad_comm_dtype, "token_sizes": setup.token_sizes,
               "eval.batch_size": setup.sequences,  # the eval forward after the steps takes a training batch
               "compile": setup.compile or setup.cuda_graphs, "cuda_graphs": setup.cuda_graphs,
               "optimizer.implementation": "compiled" if setup.compiled_lamb else "eager",
               "init_checkpoint": None, "performance": None}  # the simulator's figures are of one GPU
    return load_descriptor("h200_1x1").variant(changes, description={"accelerators_per_node": str(setup.world_size)})


def _batches(fake: FakeCuda, setup: StepSetup, count: int, record: StepRecord) -> list:
    from bert.data.batch import collate
    from bert.model.token_rounding import token_sizes
    from tests.helpers.samples import make_samples

    rng = np.random.default_rng(0)
    sizes = token_sizes(setup.token_sizes, setup.sequences, setup.max_length)
    out = []
    for k in range(count):
        lengths = rng.integers(setup.max_length // 4, setup.max_length + 1, setup.sequences).tolist()
        batch = collate(make_samples(lengths, vocab=30000, predictions=76, seed=k), sizes=sizes)
        record.longest.append(max(lengths))
        record.token_counts.append(batch.layout.num_tokens)
        out.append(batch._map(fake.tensor))
    return out


def train_step_record(setup: StepSetup) -> StepRecord:
    """Runs `setup.steps` optimizer steps of bert.step.TrainStep on fake cuda:0 and an eval forward; returns
    what the recorder saw. Whatever stops the step (a host synchronisation, a device mix) is in the record."""
    with apex_importable() if setup.apex else contextlib.nullcontext():
        return _train_step_record(setup)


def _train_step_record(setup: StepSetup) -> StepRecord:
    from bert.compile_warmup import ShapeBatches, compile_every_shape, shape_batches
    from bert.distributed.launch import DistContext
    from bert.model.pretraining import BertForPreTraining
    from bert.optim.factory import build_optimizer, build_schedule
    from bert.step import TrainStep

    system = step_system(setup)
    record = StepRecord(data_parallel=setup.world_size > 1)
    torch._dynamo.reset()  # each scenario compiles afresh, as a run's process does
    if setup.world_size > 1:
        fake_process_group(setup.world_size)
    fake = FakeCuda()
    with torch.device("meta"):
        model = BertForPreTraining(system.model_config())
    for layer in model.bert.encoder:  # an attribute, not a list: a compiled layer's hook must not grow a guard
        layer.register_forward_hook(lambda m, args, out: setattr(m, "io_dtypes", (
            str(args[0].dtype).removeprefix("torch."), str(out.dtype).removeprefix("torch."))))
    model = fake.module(model)
    ctx = DistContext(0, setup.world_size, 0, setup.world_size, CUDA)
    recorder = Recorder()
    batches = _batches(fake, setup, setup.steps * setup.accumulate, record)  # on the host, as the loader does
    made_up = shape_batches(system)
    warmed = ShapeBatches(*([b._map(fake.tensor) for b in part] for part in (made_up.train, made_up.evals)))
    with compile_without_gpu_code(record.compiles, record.graphs, setup.backend), fake.mode:
        step = TrainStep(system.run, ctx, model, build_optimizer(model, system.run.optimizer),
                         build_schedule(system.run.optimizer))
        if setup.compile_warmup:  # unrecorded, under the recorder's torch-function mode: guards see the same mode stack
            with recorder.sdpa_calls:
                compile_every_shape(step, system.run, warmed)
            record.graphs_in_compile_warmup = len(record.graphs)
        record.optimizer = type(step.optimizer).__name__
        record.apex_modules = [name for name, m in model.named_modules() if type(m).__module__.startswith(
            ("apex", "tests.helpers.stand_in_apex"))]
        grads = [p.grad for p in model.parameters()]
        try:
            with recorder:
                for s in range(setup.steps):
                    step(iter(batches[s * setup.accumulate:(s + 1) * setup.accumulate]), 10 + s)
                record.grads_kept = all(g is not None and p.grad is g for p, g in zip(model.parameters(), grads))
                record.layer_dtypes = [layer.io_dtypes for layer in model.bert.encoder]  # the last micro-batch's
                model.eval()
                eval_calls = len(recorder.attention)
                with torch.no_grad(), step.autocast:
                    model(**batches[0].model_inputs(step.unpadded))
        except Exception as e:  # in the record: the tests say what went wrong, in this process's terms
            record.error = f"{type(e).__name__}: {e}"
            eval_calls = len(recorder.attention)
    record.ops, record.off_device, record.host_syncs = recorder.ops, recorder.off_device, recorder.host_syncs
    record.attention, record.eval_attention = recorder.attention[:eval_calls], recorder.attention[eval_calls:]
    record.max_lens = recorder.max_lens
    return record


def cuda_seeds(seed: int, ranks: int) -> list[list[int]]:
    """The seeds torch.cuda's generators get when bert.train seeds each rank's dropout stream."""
    from bert.train import seed_dropout

    seen: list[list[int]] = []
    seed_all = torch.cuda.manual_seed_all
    torch.cuda.manual_seed_all = lambda value: seen[-1].append(int(value))
    try:
        for rank in range(ranks):
            seen.append([])
            seed_dropout(seed, rank)
    finally:
        torch.cuda.manual_seed_all = seed_all
    return seen

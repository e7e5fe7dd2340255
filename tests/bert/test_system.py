import dataclasses
import json

import pytest

from bert.mlperf_rules import SYSTEM_DESCRIPTION_FIELDS
from bert.system import load_descriptor
from bert.typed_config import ConfigError
from tests.helpers.repo import REPO
from tests.helpers.systems import unchecked_descriptor, write_unchecked


@pytest.mark.parametrize("name", sorted(p.stem for p in (REPO / "systems").glob("*.json")))
def test_every_descriptor_in_systems_loads(name):
    system = load_descriptor(REPO / "systems" / f"{name}.json")
    assert set(system.description) == set(SYSTEM_DESCRIPTION_FIELDS)
    assert system.run.global_batch_size % system.world_size == 0


def test_bare_name_finds_the_descriptor_and_derives_the_shape():
    system = load_descriptor("cpu_tiny")
    assert system.name == "cpu_tiny" and system.world_size == 2
    assert system.per_process_batch * 2 * system.run.gradient_accumulation_steps == system.run.global_batch_size
    assert system.dataset_dir() == REPO / "data" / "cpu_tiny"
    assert system.submission_status == "research"


def _error(tmp_path, data) -> str:
    with pytest.raises(ConfigError) as info:
        load_descriptor(write_unchecked(tmp_path, "bad", data))
    return str(info.value)


def test_missing_run_field_is_named(tmp_path):
    data = unchecked_descriptor()
    del data["run"]["global_batch_size"]
    assert "bad.json: run.global_batch_size: missing; add it (an integer)" in _error(tmp_path, data)


def test_wrong_type_says_the_fix(tmp_path):
    data = unchecked_descriptor()
    data["run"]["optimizer"]["beta_1"] = "0.9"
    message = _error(tmp_path, data)
    assert "run.optimizer.beta_1: expected a number, got '0.9' (string); write the number without quotes" \
        in message


def test_system_description_values_as_the_official_tools_read_them(tmp_path):
    """A number where the tools read text is refused; an object where they read nothing is not (as published)."""
    data = unchecked_descriptor()
    data["system"]["accelerators_per_node"] = 8
    assert 'system.accelerators_per_node: must be a string, got 8; write it in quotes, as "8"' in _error(tmp_path, data)
    data = unchecked_descriptor()
    data["system"]["other_software_stack"] = {"cuda_version": "12.4", "nccl_version": "2.22.3-1+cuda12.6"}
    data["system"]["number_of_nodes"] = 1
    assert load_descriptor(write_unchecked(tmp_path, "published", data)).nodes == 1


def test_missing_description_field_and_wrong_division(tmp_path):
    data = unchecked_descriptor()
    del data["system"]["cooling"]
    assert "system.cooling: missing" in _error(tmp_path, data)
    data = unchecked_descriptor()
    data["system"]["division"] = "Closed"
    assert "system.division: must be \"closed\" or \"open\" (lower case)" in _error(tmp_path, data)


def test_unknown_model_and_unknown_field(tmp_path):
    assert "run.model: unknown model config 'huge'; choose one of base, large, micro, tiny" in \
        _error(tmp_path, unchecked_descriptor({"model": "huge"}))
    data = unchecked_descriptor()
    data["run"]["global_batch"] = 3
    assert "run.global_batch: unknown field; did you mean 'global_batch_size'?" in _error(tmp_path, data)


def test_batch_not_divisible_by_the_world(tmp_path):
    message = _error(tmp_path, unchecked_descriptor({"processes_per_node": 3}))
    assert "run.global_batch_size: 32 is not divisible by nodes x processes_per_node" in message


def test_invalid_json_and_missing_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{")
    with pytest.raises(ConfigError, match="broken.json: not valid JSON"):
        load_descriptor(path)
    with pytest.raises(ConfigError, match="no such descriptor"):
        load_descriptor(tmp_path / "absent.json")
    assert json.loads((REPO / "systems" / "cpu_tiny.json").read_text())["run"]["model"] == "tiny"


def test_closed_division_refuses_adam(tmp_path):
    data = unchecked_descriptor()
    data["system"]["division"] = "closed"
    data["run"]["optimizer"]["name"] = "adam"
    assert "run.optimizer.name: 'adam' is open-division only: the closed division requires \"lamb\"" in \
        _error(tmp_path, data)
    data["run"]["optimizer"]["name"] = "adamw"
    assert "expected one of 'lamb', 'adam', got 'adamw' (string); did you mean 'adam'?" in _error(tmp_path, data)


def test_a_gpu_is_device_cuda(tmp_path):
    """The nearest spelling of "gpu" is 'cpu': the error suggests the device a user who writes it means."""
    data = unchecked_descriptor({"device": "gpu"})
    assert "run.device: expected one of 'cpu', 'cuda', got 'gpu' (string); did you mean 'cuda'?" in \
        _error(tmp_path, data)


def test_variant_sets_dotted_and_typed_fields_and_validates():
    from bert.data.settings import SyntheticDataSpec

    base = load_descriptor("cpu_micro")
    spec = SyntheticDataSpec(train_samples=512, eval_samples=64, shards=2)
    v = base.variant({"optimizer.beta_1": 0.8, "processes_per_node": 2, "dataset.synthetic": spec},
                     name="micro_v", description={"submitter": "Someone"})
    assert (v.name, v.run.optimizer.beta_1, v.run.processes_per_node) == ("micro_v", 0.8, 2)
    assert v.run.dataset.synthetic == spec and v.description["submitter"] == "Someone"
    assert v.run.optimizer.base_learning_rate == base.run.optimizer.base_learning_rate
    assert base.run.processes_per_node != 2 or base.run.optimizer.beta_1 != 0.8  # the base is untouched
    assert v.dataset_dir() == base.dataset_dir()  # same folder, same relative paths
    with pytest.raises(ConfigError, match="run.optimizer.beta_3: unknown field"):
        base.variant({"optimizer.beta_3": 0.5})
    with pytest.raises(ConfigError, match="run.global_batch_size"):
        base.variant({"global_batch_size": base.run.global_batch_size + 1, "processes_per_node": 2})


def test_written_variant_keeps_meaning_elsewhere_and_never_replaces_another_file(tmp_path):
    base = load_descriptor("cpu_micro")
    written = base.variant({"max_samples": 4096}, name="capped").write(tmp_path)
    assert written.path == (tmp_path / "capped.json").resolve() and written.run.max_samples == 4096
    assert written.dataset_dir() == base.dataset_dir()  # made absolute: another repository root
    assert base.variant({"max_samples": 4096}, name="capped").write(tmp_path) == written  # same text: fine
    with pytest.raises(FileExistsError, match="capped.json already holds another descriptor"):
        base.variant({"max_samples": 8192}, name="capped").write(tmp_path)


def test_fp16_runs_on_a_cpu_only_as_a_rehearsal_of_the_cuda_run(tmp_path):
    base = load_descriptor("cpu_micro")
    with pytest.raises(ConfigError, match="run.precision: fp16 needs device cuda"):
        base.variant({"precision": "fp16"})
    cuda = base.variant({"device": "cuda", "precision": "fp16"}, name="fp16_micro")
    rehearsal = cuda.cpu_rehearsal()
    assert (rehearsal.run.device, rehearsal.run.precision, rehearsal.rehearsal) == ("cpu", "fp16", True)
    assert rehearsal.run == dataclasses.replace(cuda.run, device="cpu")  # nothing else moves
    again = rehearsal.variant({"gradient_accumulation_steps": 2})  # validated as the CUDA run, still on the CPU
    assert (again.run.device, again.run.gradient_accumulation_steps, again.rehearsal) == ("cpu", 2, True)
    with pytest.raises(ConfigError, match="run.global_batch_size"):
        rehearsal.variant({"gradient_accumulation_steps": 3})
    with pytest.raises(ValueError, match="cannot be written"):
        rehearsal.write(tmp_path)
    assert not list(tmp_path.iterdir())
    with pytest.raises(ValueError, match="made from a CUDA run"):
        base.cpu_rehearsal()


def test_a_cpu_variant_in_fp16_is_the_cuda_run_rehearsed_and_otherwise_a_plain_variant():
    micro = load_descriptor("cpu_micro")
    bf16 = micro.cpu_variant({"precision": "bf16", "gradient_accumulation_steps": 2})
    assert (bf16.run.device, bf16.run.precision, bf16.rehearsal) == ("cpu", "bf16", False)
    assert bf16 == micro.variant({"precision": "bf16", "gradient_accumulation_steps": 2})
    fp16 = micro.cpu_variant({"precision": "fp16"}, name="fp16_micro", description={"number_of_nodes": "1"})
    assert (fp16.name, fp16.run.device, fp16.run.precision, fp16.rehearsal) == ("fp16_micro", "cpu", "fp16", True)
    assert fp16.run == micro.variant({"device": "cuda", "precision": "fp16"}).cpu_rehearsal().run
    cuda = load_descriptor("h200_1x1").cpu_variant({"init_checkpoint": None, "performance": None})  # a CUDA descriptor
    assert (cuda.run.device, cuda.rehearsal) == ("cpu", False)
    again = fp16.cpu_variant({"gradient_accumulation_steps": 2})  # fp16 still: still the rehearsal
    assert (again.run.device, again.run.gradient_accumulation_steps, again.rehearsal) == ("cpu", 2, True)


def test_one_seed_policy_given_then_descriptor_then_a_fresh_draw():
    fixed = load_descriptor("cpu_micro").variant({"seed": 42})
    drawing = fixed.variant({"seed": None})
    assert (fixed.run_seed(7), fixed.run_seed(), drawing.run_seed(7)) == (7, 42, 7)
    draws = {drawing.run_seed() for _ in range(8)}
    assert len(draws) == 8 and all(0 <= d < 2**31 for d in draws)


def test_token_sizes_and_cuda_graphs_are_refused_where_they_cannot_work_naming_the_field_and_the_fix():
    cuda = load_descriptor("h200_1x1")
    ok = cuda.variant({"token_sizes": 16, "compile": True, "cuda_graphs": True})
    assert (ok.run.token_sizes, ok.run.cuda_graphs) == (16, True)
    cpu = load_descriptor("cpu_micro")
    assert cpu.variant({"token_sizes": 4, "compile": True}).run.token_sizes == 4  # static shapes on CPU: fine
    refused = {
        "run.token_sizes: must be 0 or more and at most 64, got 65": (cuda, {"token_sizes": 65}),
        "run.token_sizes: must be 0 or more and at most 64, got -1": (cuda, {"token_sizes": -1}),
        "run.token_sizes: rounds the unpadded layout's token count: set run.unpadded to true": (
            cpu, {"token_sizes": 4, "unpadded": False}),
        "run.token_sizes: packed rows change the number of sequences": (cpu, {"token_sizes": 4, "balance": "packed"}),
        "run.cuda_graphs: needs device cuda: set it to false": (
            cpu, {"token_sizes": 4, "compile": True, "cuda_graphs": True}),
        "run.cuda_graphs: a CUDA graph replays one shape: set run.token_sizes": (
            cuda, {"compile": True, "cuda_graphs": True}),
        "run.cuda_graphs: captures the compiled encoder layers: set run.compile to true": (
            cuda, {"token_sizes": 16, "cuda_graphs": True, "compile": False}),
    }
    for message, (base, changes) in refused.items():
        with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
            base.variant(changes)


def test_each_components_own_rules_run_as_its_block_is_read_and_name_its_field():
    adam = load_descriptor("cpu_tiny_adam")
    with pytest.raises(ConfigError, match=r"run.optimizer.implementation: AdamW does not run \"compiled\""):
        adam.variant({"optimizer.implementation": "compiled"})
    figures = {"hbm_gb_s": 1.0, "intra_node_gb_s": 1.0}
    for performance in ({**figures, "gpu_samples_per_s": 1.0, "peak_tflops": 1.0}, figures):
        with pytest.raises(ConfigError, match="run.performance.gpu_samples_per_s: give either gpu_samples_per_s"):
            adam.variant({"performance": performance})

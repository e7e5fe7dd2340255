"""Hyperparameters that follow the batch size (bert.reference_hyperparameters): a site descriptor that changes only
a published base's batch and shape gets the reference convergence point's values when it asks for them, and is
refused in one line naming the values and the nearest RCPs when it does not; every value says where it comes
from. The expected values are read from the installed mlperf-logging's RCP file (bert.rcp), never typed here."""

import json
import re

import pytest
from click.testing import CliRunner

from bert.cli import main
from bert.mlperf_rules import DEFAULT_RULESET
from bert.rcp import convergence, point_for, reference_points, safe_sample_cap
from bert.system import load_descriptor
from bert.typed_config import ConfigError
from tests.helpers.repo import REPO

RCP_BATCHES = sorted(reference_points(DEFAULT_RULESET))


def _shape(batch: int) -> tuple[int, int]:
    """(nodes, gradient accumulation steps) of 8 GPUs a node with at most 64 sequences a micro-batch."""
    per_node = batch // 8
    nodes = next(n for n in range(1, per_node + 1) if per_node % n == 0 and per_node // n <= 64)
    return nodes, 1


def _site(folder, name: str, run: dict, system: dict | None = None, base: str = "dgxh100_1x8"):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    run = {"performance": {"inter_node_gb_s": 400.0}, **run}  # the nodes' network (the base has one node)
    path.write_text(json.dumps({"base": base, "system": system or {}, "run": run}))
    return path


def _at(folder, batch: int, **run) -> object:
    nodes, accumulation = _shape(batch)
    return _site(folder, f"site_{batch}", {"global_batch_size": batch, "gradient_accumulation_steps": accumulation,
                                           **run}, {"number_of_nodes": str(nodes)})


@pytest.mark.parametrize("batch", RCP_BATCHES)
def test_a_site_descriptor_at_each_rcp_batch_gets_its_values_or_is_refused_in_one_line(tmp_path, batch):
    point = point_for(batch, DEFAULT_RULESET)
    if batch != 768:
        with pytest.raises(ConfigError) as refused:
            load_descriptor(_at(tmp_path / "plain", batch))
        said = str(refused.value)
        assert refused.value.field == "run.optimizer" and "\n" not in said
        assert "training_steps 3680" in said and "were chosen for global batch 768 by dgxh100_1x8.json" in said
        assert f"are {batch} ({point.hyperparameters_text()})" in said
        assert "set run.rcp_hyperparameters to true to take its values" in said
    system = load_descriptor(_at(tmp_path / "asking", batch, rcp_hyperparameters=True))
    optimizer = system.run.optimizer
    assert {field: getattr(optimizer, field) for field in point.hyperparameters} == point.hyperparameters
    assert system.run.max_samples == safe_sample_cap(convergence(batch, DEFAULT_RULESET), batch,
                                                     system.eval_interval_samples)
    checked = CliRunner().invoke(main, ["system", "check", str(system.path)])
    assert checked.exit_code == 0 and ": ok (" in checked.stdout, checked.output


def _documented_sites() -> list[tuple[str, dict]]:
    """Every site descriptor the docs show (a JSON block that names a published base)."""
    found = []
    for page in sorted((REPO / "docs").glob("*.md")):
        for block in re.findall(r"```json\n(.*?)```", page.read_text(), re.DOTALL):
            data = json.loads(block)
            if "base" in data:
                found.append((page.name, data))
    return found


def test_the_documented_site_examples_get_their_batchs_reference_values(tmp_path):
    sites = _documented_sites()
    assert {page for page, _ in sites} >= {"descriptors.md", "closed.md"}
    for index, (page, data) in enumerate(sites):
        path = tmp_path / f"documented_{index}.json"
        path.write_text(json.dumps(data))
        system = load_descriptor(path)
        if data["run"].get("rcp_hyperparameters"):
            point = point_for(system.run.global_batch_size, DEFAULT_RULESET)
            assert system.run.optimizer.training_steps == point.hyperparameters["training_steps"], page
            assert system.run.optimizer.base_learning_rate == point.hyperparameters["base_learning_rate"], page
        else:  # states its own schedule for its batch
            assert {"base_learning_rate", "training_steps"} <= set(data["run"]["optimizer"]), page


def test_between_rcp_batch_sizes_a_choice_is_stated_or_refused_naming_both_neighbours(tmp_path):
    with pytest.raises(ConfigError) as plain:
        load_descriptor(_site(tmp_path, "plain_2048", {"global_batch_size": 2048}, {"number_of_nodes": "4"}))
    assert "the nearest reference convergence points" in str(plain.value)
    assert "are 1536 (" in str(plain.value) and ") and 3072 (" in str(plain.value)
    assert "set run.rcp_hyperparameters to 1536 or 3072 to take that one's values" in str(plain.value)
    with pytest.raises(ConfigError) as asked:
        load_descriptor(_site(tmp_path, "true_2048", {"global_batch_size": 2048, "rcp_hyperparameters": True},
                              {"number_of_nodes": "4"}))
    assert asked.value.field == "run.rcp_hyperparameters" and "\n" not in str(asked.value)
    assert "no reference convergence point has global batch 2048" in str(asked.value)
    assert "the nearest are 1536 and 3072" in str(asked.value)
    chosen = load_descriptor(_site(tmp_path, "chose_1536", {"global_batch_size": 2048, "rcp_hyperparameters": 1536},
                                   {"number_of_nodes": "4"}))
    assert chosen.run.optimizer.training_steps == point_for(1536, DEFAULT_RULESET).hyperparameters["training_steps"]
    assert chosen.run.max_samples == safe_sample_cap(convergence(2048, DEFAULT_RULESET), 2048, 175_000)


def test_a_value_the_asking_descriptor_states_wins_and_each_value_says_where_it_comes_from(tmp_path):
    path = _site(tmp_path, "tuned_3072", {"global_batch_size": 3072, "rcp_hyperparameters": True,
                                          "optimizer": {"training_steps": 1200}}, {"number_of_nodes": "6"})
    system = load_descriptor(path)
    point = point_for(3072, DEFAULT_RULESET)
    assert system.run.optimizer.training_steps == 1200
    assert system.run.optimizer.beta_2 == point.hyperparameters["beta_2"]
    shown = CliRunner().invoke(main, ["system", "show", "--origins", str(path)])
    assert shown.exit_code == 0, shown.output
    lines = {line.split()[0]: line for line in shown.stdout.splitlines()}
    assert lines["run.optimizer.training_steps"].endswith("<- tuned_3072.json")
    assert lines["run.optimizer.beta_2"].endswith("<- the RCP at 3072 (mlperf-logging 4.1.68 rcp_checker/"
                                                  "training_5.0.0/rcps_bert.json)")
    assert "derived from the convergence statistics of the RCP at 3072" in lines["run.max_samples"]
    assert lines["run.optimizer.name"].endswith("<- dgxa100_1x8.json")
    assert lines["system.number_of_nodes"].endswith("<- tuned_3072.json")
    as_json = CliRunner().invoke(main, ["system", "show", str(path)])
    assert json.loads(as_json.stdout)["run"]["optimizer"]["beta_2"] == point.hyperparameters["beta_2"]
    assert "values from dgxa100_1x8.json (" in as_json.stderr


def test_a_child_or_a_variant_at_another_batch_takes_that_batchs_rcp(tmp_path):
    _site(tmp_path, "asking_3072", {"global_batch_size": 3072, "rcp_hyperparameters": True}, {"number_of_nodes": "6"})
    child = load_descriptor(_site(tmp_path, "child_4096", {"global_batch_size": 4096}, {"number_of_nodes": "8"},
                                  base="asking_3072"))
    at_4096 = point_for(4096, DEFAULT_RULESET).hyperparameters
    assert child.run.optimizer.training_steps == at_4096["training_steps"]
    variant = load_descriptor(tmp_path / "asking_3072.json").variant({"global_batch_size": 4096},
                                                                      description={"number_of_nodes": "8"})
    assert variant.run.optimizer.training_steps == at_4096["training_steps"]
    assert variant.run.max_samples == safe_sample_cap(convergence(4096, DEFAULT_RULESET), 4096, 175_000)


def test_open_descriptors_and_the_published_ones_are_left_as_they_are(tmp_path):
    open_site = load_descriptor(_site(tmp_path, "open_3072", {"global_batch_size": 3072},
                                      {"number_of_nodes": "6", "division": "open"}))
    assert open_site.run.optimizer.training_steps == 3680  # the open division chooses freely
    for name in ("dgxa100_1x8", "dgxa100_8x8", "dgxa100_512x8_packed", "dgxh100_1x8", "h200_1x1"):
        assert not load_descriptor(name).run.rcp_hyperparameters


def test_bad_requests_are_one_line_naming_the_field(tmp_path):
    cases = [({"global_batch_size": 3072, "ruleset": "6.0.0", "rcp_hyperparameters": True}, "run.ruleset",
              "has no reference convergence points for BERT under it"),
             ({"global_batch_size": 3072, "rcp_hyperparameters": 0}, "run.rcp_hyperparameters",
              "must be true, false or the global batch size of a reference convergence point"),
             ({"global_batch_size": 3072, "rcp_hyperparameters": True, "optimizer": {"name": "adam"}},
              "run.rcp_hyperparameters", "the reference convergence points are LAMB runs")]
    for index, (run, field, said) in enumerate(cases):
        with pytest.raises(ConfigError) as info:
            load_descriptor(_site(tmp_path, f"bad_{index}", run, {"number_of_nodes": "6", "division": "open"}))
        assert info.value.field == field and said in str(info.value) and "\n" not in str(info.value)


def test_a_copied_descriptor_with_another_batchs_reference_values_is_refused(tmp_path):
    """A flat copy of dgxa100_1x8 (batch 448, the RCP's own values) with only its batch changed."""
    data = json.loads((REPO / "systems" / "dgxa100_1x8.json").read_text())
    data["run"]["global_batch_size"], data["system"]["number_of_nodes"] = 3072, "6"
    data["run"]["performance"]["inter_node_gb_s"] = 100.0
    (tmp_path / "copied.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError) as info:
        load_descriptor(tmp_path / "copied.json")
    assert "training_steps 6700" in str(info.value) and \
        "are the reference's values for global batch 448 (bert_ref_448), not for this descriptor's 3072" in \
        str(info.value)
    # Two RCPs with the same values (6144 and 6912): either batch size may state them.
    values = point_for(6144, DEFAULT_RULESET).hyperparameters
    assert values == point_for(6912, DEFAULT_RULESET).hyperparameters
    data["run"].update(global_batch_size=6912, max_samples=4_000_000)
    data["run"]["optimizer"].update(values)
    data["system"]["number_of_nodes"] = "108"
    (tmp_path / "at_6912.json").write_text(json.dumps(data))
    assert load_descriptor(tmp_path / "at_6912.json").run.optimizer.training_steps == values["training_steps"]


def test_a_copied_descriptor_that_leaves_lamb_to_the_default_is_refused_too(tmp_path):
    """run.optimizer.name left out is LAMB, the default: its schedule follows the batch size as a stated one does."""
    data = json.loads((REPO / "systems" / "dgxa100_1x8.json").read_text())
    del data["run"]["optimizer"]["name"]
    data["run"]["global_batch_size"], data["system"]["number_of_nodes"] = 3072, "6"
    data["run"]["performance"]["inter_node_gb_s"] = 100.0
    (tmp_path / "unnamed.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError) as info:
        load_descriptor(tmp_path / "unnamed.json")
    assert info.value.field == "run.optimizer" and "training_steps 6700" in str(info.value)

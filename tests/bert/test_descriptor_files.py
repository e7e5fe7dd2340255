"""Finding descriptors: a site keeps its own in folders of its own (MLPERF_BERT_SYSTEMS), named like the published
ones; a base is found by its stem beside the descriptor, then in the site folders, then in systems/; a file nested
absurdly deep is one line, and a long chain of bases resolves in time linear in its length."""

import json
import time

import pytest
from click.testing import CliRunner

from bert.cli import main
from bert.descriptor_files import (
    PUBLISHED_SYSTEMS,
    SEARCH_PATH_ENV,
    available_descriptors,
    find_descriptor,
    notes_from_elsewhere,
)
from bert.system import load_descriptor
from bert.typed_config import ConfigError

EIGHT_NODES = {"number_of_nodes": "8", "system_name": "Site DGX H100 (8 nodes)"}


def _write(folder, name, data):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(data))
    return folder / f"{name}.json"


@pytest.fixture
def site(tmp_path, monkeypatch):
    """Two site folders on the search path, the first holding an 8-node DGX H100 that inherits the published one."""
    first, second = tmp_path / "site" / "systems", tmp_path / "shared"
    _write(first, "site_h100_8x8", {"base": "dgxh100_1x8", "system": EIGHT_NODES,
                                    "run": {"global_batch_size": 3072, "performance": {"inter_node_gb_s": 400.0},
                                            "notes": {"site": "Our cluster."}}})
    second.mkdir(parents=True)
    monkeypatch.setenv(SEARCH_PATH_ENV, f"{first}:{second}")
    return first, second


def test_a_site_descriptor_is_found_by_name_and_inherits_a_published_one_by_name(site):
    first, second = site
    system = load_descriptor("site_h100_8x8")
    assert system.path == (first / "site_h100_8x8.json").resolve() and system.nodes == 8
    assert system.run.optimizer.training_steps == load_descriptor("dgxh100_1x8").run.optimizer.training_steps
    assert available_descriptors()["site_h100_8x8"] == first / "site_h100_8x8.json"
    assert available_descriptors()["cpu_tiny"] == PUBLISHED_SYSTEMS / "cpu_tiny.json"
    # The published notes that describe the base's own system are named, the site's own topic is not.
    inherited = notes_from_elsewhere(system.path)
    assert inherited["configuration"].name == "dgxh100_1x8.json" and "site" not in inherited
    checked = CliRunner().invoke(main, ["system", "check", "site_h100_8x8"])
    assert checked.exit_code == 0 and checked.stdout.startswith(f"{system.path}: ok (8 node(s) x 8 process(es)")
    assert checked.stderr == (f"{system.path}: note: run.notes topics {', '.join(sorted(inherited))} come from "
                              "dgxa100_1x8.json, dgxh100_1x8.json in another folder and describe that system: state "
                              "them for this one, or drop each with null\n")
    assert notes_from_elsewhere(PUBLISHED_SYSTEMS / "dgxh100_1x8.json") == {}  # a published child's family notes
    listed = CliRunner().invoke(main, ["system", "list"]).output.splitlines()
    assert listed[0] == f"descriptors in {first}, then {second}, then {PUBLISHED_SYSTEMS}:"
    assert listed[1].split() == ["site_h100_8x8", "8", "node(s)", "x", "8", "cuda,", "closed,", "global", "batch",
                                 "3072,", str(first)]
    assert any(line.split()[0] == "cpu_tiny" and line.endswith(", published") for line in listed)


def test_a_base_is_found_beside_then_in_the_site_folders_and_a_file_may_refine_its_namesake(site, tmp_path):
    first, second = site
    # The second site folder holds a base of the same name as a published descriptor: it wins over systems/.
    _write(second, "cpu_tiny", {"base": "cpu_tiny", "run": {"seed": 17}})
    beside = _write(tmp_path / "elsewhere", "beside", {"base": "local_base"})
    _write(tmp_path / "elsewhere", "local_base", {"base": "cpu_tiny", "run": {"print_interval_steps": 3}})
    system = load_descriptor(beside)
    assert (system.run.seed, system.run.print_interval_steps) == (17, 3)
    assert load_descriptor("cpu_tiny").path == (second / "cpu_tiny.json").resolve()


def test_an_unknown_name_a_missing_base_and_a_bad_search_path_are_one_line(site, tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match=r"no such descriptor; available: .*site_h100_8x8.*did you mean "
                                          r"'site_h100_8x8'\?"):
        find_descriptor("site_h100_8x9")
    orphan = _write(tmp_path, "orphan", {"base": "nowhere"})
    with pytest.raises(ConfigError, match=rf"orphan\.json: base: no descriptor nowhere\.json beside this one .* "
                                          rf"add its folder to {SEARCH_PATH_ENV}"):
        load_descriptor(orphan)
    monkeypatch.setenv(SEARCH_PATH_ENV, str(tmp_path / "no_such_folder"))
    result = CliRunner().invoke(main, ["system", "check", "cpu_tiny"])
    assert result.exit_code == 1 and len(result.output.splitlines()) == 1
    assert "no_such_folder is not a folder" in result.output


def test_a_descriptor_nested_100000_deep_is_one_line(tmp_path):
    arrays = tmp_path / "arrays.json"
    arrays.write_text("[" * 100_000 + "]" * 100_000)
    objects = _write(tmp_path, "objects", {"base": "arrays"})  # the same through a base, and as objects
    (tmp_path / "arrays_base.json").write_text('{"run": ' + '{"a": ' * 100_000 + "1" + "}" * 100_001)
    for path in (arrays, objects, tmp_path / "arrays_base.json"):
        result = CliRunner().invoke(main, ["system", "check", str(path)])
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        (line,) = result.output.splitlines()
        assert line.endswith("arrays.json: nests more than 32 levels of objects or lists (a descriptor needs 4, "
                             "as systems/cpu_tiny.json); is it a descriptor?") or "arrays_base.json: nests" in line


def test_a_chain_of_3000_bases_resolves_in_linear_time(tmp_path):
    links = 3000
    _write(tmp_path, "link0", {"base": "cpu_micro", "run": {"seed": 0}})
    for i in range(1, links):
        _write(tmp_path, f"link{i}", {"base": f"link{i - 1}", "run": {"seed": i}})
    started = time.perf_counter()
    system = load_descriptor(tmp_path / f"link{links - 1}.json")
    took = time.perf_counter() - started
    assert system.run.seed == links - 1
    # Well under a second per hundred links even on a loaded machine; each link used to re-check the earlier ones
    assert took < 0.5 * links / 100, f"{took:.1f} s for {links} links"

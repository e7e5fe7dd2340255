"""Where a package puts its runs (compliance.provenance.folder_name_for): the default ORG folder is the submitter's
name itself, so that the links the official result summarizer builds from the submitter resolve in the package."""

import json
import shutil
import subprocess
import sys

import pytest

from bert.mlperf_rules import DEFAULT_RULESET
from compliance.checkers import USAGE
from compliance.provenance import folder_name_for
from tests.compliance.fakes import micro_system, write_runs
from tests.helpers.compliance import cli


@pytest.mark.parametrize("submitter, folder", [
    ("MLPerf BERT harness developers", "MLPerf BERT harness developers"),
    ("IBM+CoreWeave+NVIDIA", "IBM+CoreWeave+NVIDIA"),  # as published: Training v5.0's folder of that name
    ("NVIDIA", "NVIDIA"),
    ("Lab A/B", "Lab A_B"),  # what no folder name can hold
    ("  Krai ", "Krai"),
    ("..", "submitter"),
])
def test_the_folder_is_the_submitters_name_where_a_folder_can_hold_it(submitter, folder):
    assert folder_name_for(submitter) == folder


def test_the_summarizers_links_resolve_in_a_package_made_with_the_default_folder(tmp_path):
    system = micro_system().write(tmp_path / "systems")
    packaged = cli("package", write_runs(tmp_path / "logs", system=system), "--system", system.path,
                   "-o", tmp_path / "out")
    assert packaged.exit_code == 0, packaged.output
    (org,) = (tmp_path / "out").iterdir()
    assert org.name == system.description["submitter"]
    # The official result summarizer, as `score` runs it (on a copy: it writes its tables beside the package).
    copy = tmp_path / "scratch" / org.name
    shutil.copytree(org, copy)
    subprocess.run([sys.executable, "-m", "mlperf_logging.result_summarizer", org.name, USAGE, DEFAULT_RULESET,
                    "--csv", "summary.csv"], cwd=copy.parent, check=True, capture_output=True, timeout=300)
    (row,) = json.loads((copy.parent / "summary_detailed.json").read_text())
    for link in (row["details_url"], row["code_url"]):
        in_repository = link.split("/blob/", 1)[1].split("/", 1)[1]  # after the branch
        assert (tmp_path / "out" / in_repository).exists(), link

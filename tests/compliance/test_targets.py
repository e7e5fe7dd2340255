"""What PATH holds (compliance.targets): the submissions of a results repository (other folders passed over), the
BERT systems of each (another benchmark's named apart, a linked results folder kept to be refused by name), and
systems picked by name."""

from compliance.check import check_tree
from tests.helpers.compliance import cli


def test_systems_picked_by_name(round_tree):
    tree = check_tree(round_tree, systems=["b_two", "OrgA/a_bert"])
    assert [(r.target.name, r.systems) for r in tree.reports] == [("OrgA", ["a_bert"]), ("OrgB", ["b_two"])]
    result = cli("score", round_tree, "--system", "nothing")
    assert result.exit_code == 2
    assert "--system nothing: no such BERT system (results/nothing/bert/ with systems/nothing.json) here; the BERT " \
           "systems are: a_bert, b_one, b_two" in " ".join(result.output.split())

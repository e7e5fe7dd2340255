
import pytest

from bert.mllog import ADAM_KEYS_NOTE, hyperparameters
from bert.system import load_descriptor
from tests.helpers.repo import REPO


def test_open_division_adam_logs_under_the_lamb_key_names():
    adam = load_descriptor("cpu_micro").variant({"optimizer.name": "adam", "optimizer.beta_1": 0.8004,
                                             "optimizer.beta_2": 0.8175, "optimizer.epsilon": 1e-9,
                                             "optimizer.weight_decay_rate": 0.00289})
    logged = hyperparameters(adam)
    assert (logged["opt_lamb_beta_1"], logged["opt_lamb_beta_2"]) == (0.8004, 0.8175)
    assert logged["opt_lamb_epsilon"] == 1e-9 and logged["opt_lamb_weight_decay_rate"] == 0.00289


@pytest.mark.parametrize("name", sorted(p.stem for p in (REPO / "systems").glob("*.json")))
def test_adam_descriptors_say_how_their_optimizer_is_logged(name):
    system = load_descriptor(REPO / "systems" / f"{name}.json")
    assert (ADAM_KEYS_NOTE in system.notes_text) == (system.run.optimizer.name == "adam")


import pytest

from bert.mllog import HYPERPARAMETER_KEYS, RUN_HYPERPARAMETER_KEYS, hyperparameters
from bert.optim.kinds import OPTIMIZERS
from bert.system import load_descriptor
from tests.helpers.repo import REPO


def test_open_division_adam_logs_under_the_lamb_key_names():
    adam = load_descriptor("cpu_micro").variant({"optimizer.name": "adam", "optimizer.beta_1": 0.8004,
                                             "optimizer.beta_2": 0.8175, "optimizer.epsilon": 1e-9,
                                             "optimizer.weight_decay_rate": 0.00289})
    logged = hyperparameters(adam)
    assert (logged["opt_lamb_beta_1"], logged["opt_lamb_beta_2"]) == (0.8004, 0.8175)
    assert logged["opt_lamb_epsilon"] == 1e-9 and logged["opt_lamb_weight_decay_rate"] == 0.00289


def test_a_run_logs_its_own_hyperparameters_then_its_optimizers_under_its_kinds_keys():
    lamb = load_descriptor("cpu_micro")
    logged = hyperparameters(lamb)
    assert list(logged) == [*RUN_HYPERPARAMETER_KEYS, *OPTIMIZERS["lamb"].log_keys]
    assert set(HYPERPARAMETER_KEYS) == set(logged)  # both kinds log under LAMB's keys
    assert logged["opt_lamb_epsilon"] == lamb.run.optimizer.epsilon and logged["global_batch_size"] == 32


@pytest.mark.parametrize("name", sorted(p.stem for p in (REPO / "systems").glob("*.json")))
def test_descriptors_say_how_their_optimizer_is_logged(name):
    """A descriptor's notes carry its optimizer's log note (ADAM's: the LAMB key names), and no other kind's."""
    system = load_descriptor(REPO / "systems" / f"{name}.json")
    own = system.run.optimizer.kind.log_note
    assert own in system.notes_text
    assert not [kind.name for kind in OPTIMIZERS.values() if kind.log_note and kind.log_note != own
                and kind.log_note in system.notes_text]

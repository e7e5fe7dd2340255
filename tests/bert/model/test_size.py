"""The model's size as DDP sees it: the parameter count of a built model, and the bucket count of a cap."""

import subprocess
import sys

import pytest

from bert.model.config import named_config
from bert.model.pretraining import BertForPreTraining
from bert.model.size import FP32_BYTES, gradient_buckets, meta_model, parameter_count
from tests.helpers.repo import REPO


@pytest.mark.parametrize("name", ["micro", "tiny"])
def test_the_count_on_the_meta_device_is_the_built_models(name):
    config = named_config(name)
    assert parameter_count(config) == sum(p.numel() for p in BertForPreTraining(config).parameters())


def test_buckets_round_up_and_never_fall_below_one():
    mib = 2**20 // FP32_BYTES  # fp32 gradients per MiB
    assert gradient_buckets(mib, 1.0) == 1
    assert gradient_buckets(mib + 1, 1.0) == 2
    assert gradient_buckets(1, 25.0) == 1
    assert gradient_buckets(10 * mib, 2.5) == 4


def test_the_meta_model_has_the_built_models_shapes_and_its_initialisers_never_import_dynamo():
    config = named_config("tiny")
    built = {name: p.shape for name, p in BertForPreTraining(config).state_dict().items()}
    assert {name: p.shape for name, p in meta_model(config).state_dict().items()} == built
    # Some of torch's initialisers on the meta device import Dynamo on their first call: seconds of a `simulate`.
    script = ("import sys\nfrom bert.checkpoint import model_shapes\nfrom bert.model.config import named_config\n"
              "from bert.model.size import parameter_count\nconfig = named_config('large')\n"
              "print(parameter_count(config), len(model_shapes(config)), 'torch._dynamo' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0 and proc.stdout.split()[2] == "False", proc.stdout + proc.stderr[-2000:]

"""The simulator's settings (bert.performance_settings): a run.performance block of declared hardware figures."""

import pytest

from bert.performance_settings import PerformanceSpec
from bert.typed_config import ConfigError, from_dict

FIGURES = {"hbm_gb_s": 4800.0, "intra_node_gb_s": 450.0, "inter_node_gb_s": 400.0}


@pytest.mark.parametrize("throughput", [{"gpu_samples_per_s": 800.0},
                                        {"model_flops_utilization": 0.45, "peak_tflops": 989.0}])
def test_a_block_with_a_measured_or_an_estimated_throughput_loads(throughput):
    spec = from_dict(PerformanceSpec, {**FIGURES, **throughput}, "system.json", "run.performance")
    assert spec.hbm_gb_s == 4800.0 and spec.allreduce == "ring" and spec.eval_speedup == 3.0


@pytest.mark.parametrize("block, message", [
    ({**FIGURES, "gpu_samples_per_s": 800.0, "peak_tflops": 989.0},
     r"run.performance.gpu_samples_per_s: give either gpu_samples_per_s"),
    ({**FIGURES, "peak_tflops": 989.0}, r"run.performance.gpu_samples_per_s: give either"),
    ({**FIGURES, "gpu_samples_per_s": 800.0, "model_flops_utilization": 1.5},
     r"run.performance.model_flops_utilization: must be positive and at most 1"),
    ({"gpu_samples_per_s": 800.0, "hbm_gb_s": 4800.0}, r"run.performance.intra_node_gb_s: missing"),
    ({**FIGURES, "gpu_samples_per_s": 800.0, "allreduce": "mesh"}, r"run.performance.allreduce: "),
])
def test_a_bad_block_is_refused_naming_the_field(block, message):
    with pytest.raises(ConfigError, match=message):
        from_dict(PerformanceSpec, block, "system.json", "run.performance")

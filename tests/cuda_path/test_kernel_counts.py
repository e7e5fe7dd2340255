"""One eager LAMB update of BERT-large's 302 parameter tensors (335 million parameters), as the step runs it, on fake
CUDA with its kernels counted (kernel_count.py): every foreach call takes CUDA's multi-tensor route, and the launches
stay within a ceiling. Before the update cast its device scalars to the lists' dtype, computed every trust ratio in
one norm kernel and applied them by shape, and took the clip factor inside, the same count was 1,017 launches (2,121
with fp16's overflow flag): 604 per-tensor divisions by float64 bias corrections, 150 per-tensor multiplies by trust
ratios, 302 NaN-to-zero calls."""

import pytest

from tests.cuda_path.kernel_count import lamb_update_kernels

# Measured: 296 and 338 (torch 2.13); each multi-tensor pass over 335 million parameters is about 16 launches.
CEILINGS = {"bf16 (no overflow flag)": (False, 300), "fp16 (GradScaler's overflow flag)": (True, 340)}


@pytest.mark.parametrize("name", list(CEILINGS))
def test_one_bert_large_lamb_update_takes_the_multi_tensor_route_within_a_ceiling_of_launches(name, fake_cuda_run):
    flag, ceiling = CEILINGS[name]
    count = fake_cuda_run(lamb_update_kernels, flag)
    assert count.slow_routes == [], count.slow_routes
    assert count.total <= ceiling, (count.total, count.by_op.most_common())

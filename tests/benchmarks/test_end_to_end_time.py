"""benchmarks/end_to_end_time.py's calibration: a site's cpu_micro refined with a run's rate and start-up predicts
that very run end to end (RESULT seconds), through the real `mlperf-bert simulate`."""

import json
import os

import pytest

from benchmarks.end_to_end_time import SYSTEM, calibrated_site, simulate, verdict
from bert.system import load_descriptor


def test_a_site_calibrated_on_a_run_predicts_that_run_end_to_end(tmp_path):
    samples = load_descriptor(SYSTEM).run.performance.samples_to_converge
    run = {"seed": 1, "samples": samples, "timed_s": 12.0, "result_s": 21.5, "status": "success"}
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    performance = calibrated_site(env, run, tmp_path / "site")
    assert performance["startup_s"] == 9.5
    assert json.loads((tmp_path / "site" / f"{SYSTEM}.json").read_text())["base"] == SYSTEM
    predicted, lines = simulate({**env, "MLPERF_BERT_SYSTEMS": str(tmp_path / "site")})
    assert predicted["predicted_end_to_end_s"] == pytest.approx(21.5, rel=0.01)
    assert predicted["predicted_time_to_train_s"] == pytest.approx(12.0, rel=0.01)
    assert verdict(21.5, 21.5) == "ratio 1.00, within 25%" and verdict(10.0, 20.0).endswith("OUTSIDE 25%")

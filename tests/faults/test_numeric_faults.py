"""Numerical faults: a NaN loss injected at a chosen step aborts the run at the next check, naming that step (the
guard's bookkeeping on its own: tests/bert/test_numerics.py)."""

from bert.cli.training import NAN_INJECTION_ENV
from tests.helpers.faults import CASE_TIMEOUT_S, assert_log_aborted, fault_descriptor, finish, run_and_time


def test_an_injected_nan_loss_aborts_each_run_and_run_and_time_goes_on(tmp_path, fault_data, fault_env):
    logdir = tmp_path / "logs"
    results = logdir / "faulty_micro"
    results.mkdir(parents=True)
    (results / "result_0.txt").write_text("an earlier result\n")
    proc = run_and_time(fault_descriptor(tmp_path), logdir, fault_data, fault_env, NEXP="2",
                        **{NAN_INJECTION_ENV: "3"})
    code, out, err = finish(proc, timeout=2 * CASE_TIMEOUT_S)
    assert code == 1, err[-3000:]
    assert (results / "result_0.txt").read_text() == "an earlier result\n"
    assert out.count("RESULT,bert,") == 2
    assert "2 of 2 run(s) failed: result_1.txt result_2.txt" in err
    for name in ("result_1.txt", "result_2.txt"):
        assert_log_aborted(results / name, "NumericalFault: non-finite loss at step 3")
        assert "eval_accuracy" not in (results / name).read_text()  # caught at step 4's check, before an eval

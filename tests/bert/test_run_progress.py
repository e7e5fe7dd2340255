"""Rank 0's console during a run (bert.run_progress): a line per eval with the accuracy against the target and the
time left, judged from the declared samples to converge, else the evals' trend, else bounded by the sample cap;
a line kept up to date in place on a terminal only; the print intervals' figures only when verbose."""

import io

from bert.run_progress import CAP, DECLARED, TREND, Goal, RunConsole, RunEnd, duration, expected_end, time_left
from bert.system import load_descriptor

GOAL = Goal(target=0.72, interval=1000, cap=20_000)


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_the_end_is_where_the_trend_of_the_last_evals_reaches_the_target():
    # 0.60 -> 0.66 over 2,000 samples: 0.06 more takes 2,000 more, so the eval at 5,000 should reach it
    assert expected_end(GOAL, [(1000, 0.5), (2000, 0.60), (3000, 0.64), (4000, 0.66)]) == RunEnd(6000, TREND)
    # one eval a little below the one before does not hide the course of the last three
    assert expected_end(GOAL, [(1000, 0.60), (2000, 0.65), (3000, 0.64)]).how == TREND
    # never beyond the cap, never before the next eval
    assert expected_end(GOAL, [(1000, 0.10), (2000, 0.1001)]) == RunEnd(20_000, TREND)
    assert expected_end(GOAL, [(1000, 0.5), (2000, 0.719999)]) == RunEnd(3000, TREND)


def test_the_declared_samples_come_first_while_the_run_is_short_of_them_and_the_cap_bounds_the_rest():
    declared = Goal(0.72, 1000, 20_000, declared=6500)
    assert expected_end(declared, []) == RunEnd(7000, DECLARED)
    # cpu_tiny's course: slow for long, then fast; the trend of the slow part would say the cap
    assert expected_end(declared, [(1000, 0.10), (2000, 0.15), (3000, 0.17)]) == RunEnd(7000, DECLARED)
    assert expected_end(declared, [(7000, 0.6), (8000, 0.65)]) == RunEnd(10_000, TREND)  # past them: the trend
    assert expected_end(declared, [(7000, 0.6), (8000, 0.55)]) == RunEnd(20_000, CAP)  # past them, falling
    assert expected_end(GOAL, [(1000, 0.5)]) == RunEnd(20_000, CAP)


def test_the_time_left_is_the_samples_left_at_the_rate_so_far():
    # 4,000 samples in 100 s; 3,000 more to the end the trend gives (0.02 a thousand, 0.06 to go): 75 s
    assert time_left(GOAL, [(3000, 0.64), (4000, 0.66)], 4000, 100.0) == "about 1 min 15 s left"
    assert time_left(GOAL, [(1000, 0.60), (2000, 0.66), (3000, 0.69), (4000, 0.70)], 4000, 100.0) \
        == "about 25 s left"  # the last three evals: 0.04 over 2,000 samples, 0.02 to go
    assert time_left(GOAL, [(1000, 0.5)], 1000, 10.0) == "at most 3 min 10 s left (the sample cap)"
    assert time_left(GOAL, [], 0, 0.0) == "time left not known yet"
    assert [duration(s) for s in (0, 42.4, 185, 4020)] == ["0 s", "42 s", "3 min 05 s", "1 h 07 min"]


def test_each_eval_is_a_line_and_the_print_intervals_are_silent_off_a_terminal():
    clock, out = Clock(), io.StringIO()
    console = RunConsole(GOAL, stream=out, clock=clock)
    console.start()
    clock.now = 10.0
    console.step(10, 640, "loss 7.1 lr 1e-3 64.0 seq/s 4096 tok/s")
    clock.now = 20.0
    console.eval(1000, 0.31)
    clock.now = 40.0
    console.eval(2000, 0.52)
    clock.now = 61.0
    console.eval(3000, 0.73)
    console.close()
    assert out.getvalue().splitlines() == [
        "eval at 1,000 samples: mlm accuracy 0.3100, target 0.7200; 20 s since run_start, at most 6 min 20 s left "
        "(the sample cap)",
        "eval at 2,000 samples: mlm accuracy 0.5200, target 0.7200; 40 s since run_start, about 20 s left",
        "eval at 3,000 samples: mlm accuracy 0.7300, target 0.7200 reached; 1 min 01 s since run_start"]


def test_a_run_that_ends_at_the_cap_says_the_target_was_not_reached():
    out = io.StringIO()
    RunConsole(Goal(0.72, 1000, 2000), stream=out).eval(2000, 0.5)
    assert out.getvalue() == ("eval at 2,000 samples: mlm accuracy 0.5000, target 0.7200 not reached by the sample "
                              "cap (2,000); 0 s since run_start\n")


def test_on_a_terminal_a_line_in_place_follows_the_steps_and_is_cleared_before_the_next_line():
    clock, out = Clock(), Terminal()
    console = RunConsole(GOAL, stream=out, clock=clock, columns=200)
    console.start()
    clock.now = 5.0
    console.step(20, 640, "loss 7.1")
    assert out.getvalue() == ("\rstep 20: 640 samples, no eval yet (target 0.7200), 5 s since run_start, at most "
                              "2 min 31 s left (the sample cap)\x1b[K")
    console.eval(1000, 0.31)
    assert out.getvalue().split("\r\x1b[K")[1].startswith("eval at 1,000 samples")
    console.step(40, 1280, "loss 6.9")
    assert "mlm accuracy 0.3100 at the last eval (target 0.7200)" in out.getvalue().rsplit("\r", 1)[1]
    console.close()
    assert out.getvalue().endswith("\r\x1b[K")
    narrow = RunConsole(GOAL, stream=Terminal(), columns=30)
    narrow.step(20, 640, "loss 7.1")
    assert narrow.stream.getvalue() == "\rstep 20: 640 samples, no eval\x1b[K"  # no wrap, which \r cannot undo


def test_verbose_prints_each_print_interval_and_keeps_no_line_in_place():
    out = Terminal()
    console = RunConsole(GOAL, verbose=True, stream=out)
    console.step(20, 640, "loss 7.1000 lr 1.000e-03 64.0 seq/s 4096 tok/s")
    assert out.getvalue() == "step 20 samples 640 loss 7.1000 lr 1.000e-03 64.0 seq/s 4096 tok/s\n"


def test_other_ranks_print_nothing():
    out = Terminal()
    console = RunConsole(GOAL, enabled=False, stream=out)
    console.step(20, 640, "loss 7.1")
    console.eval(1000, 0.9)
    console.close()
    assert out.getvalue() == "" and console.evals == [(1000, 0.9)]


def test_the_goal_is_the_descriptors():
    micro = load_descriptor("cpu_micro")
    assert Goal.of(micro) == Goal(micro.run.eval.target_accuracy, micro.eval_interval_samples,
                                  micro.run.max_samples, micro.run.performance.samples_to_converge)

"""The learning-rate schedule (bert.optim.schedule): the reference's warm-up and polynomial decay."""

import pytest

from bert.optim.schedule import LrSchedule


def test_schedule_at_chosen_steps():
    s = LrSchedule(base_lr=1.0, decay_steps=100, warmup_steps=20, start_warmup_step=-10, end_lr=0.1)
    assert s(0) == pytest.approx(10 / 20)  # a negative start: step 0 is already half-way through warmup
    assert s(5) == pytest.approx(15 / 20)
    assert s(10) == pytest.approx(0.9 * (1 - 10 / 100) + 0.1)  # warmup over at step 10: decay takes over
    assert s(60) == pytest.approx(0.9 * 0.4 + 0.1)
    assert s(100) == pytest.approx(0.1) and s(500) == pytest.approx(0.1)  # constant tail
    plain = LrSchedule(base_lr=2.0, decay_steps=10)
    assert plain(0) == 2.0 and plain(5) == pytest.approx(1.0) and plain(10) == 0.0
    poly = LrSchedule(base_lr=1.0, decay_steps=10, power=2.0)
    assert poly(5) == pytest.approx(0.25)


def test_a_positive_warmup_start_is_refused_not_clamped():
    # The reference's rate before a positive start is negative; clamping it to 0 would hide that.
    with pytest.raises(ValueError, match="start_warmup_step 3 is positive"):
        LrSchedule(base_lr=1.0, decay_steps=100, warmup_steps=20, start_warmup_step=3)

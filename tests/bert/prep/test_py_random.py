"""The replay of Python's random module from its stream of words (bert.prep.py_random)."""

import random

from bert.prep.py_random import Cursor, WordWindow, random_cut


def test_the_word_stream_replays_python_random_call_for_call():
    reference, window = random.Random(12345), WordWindow(12345)
    window.ensure(200_000)
    cursor = Cursor(window)
    lo, hi = random_cut(0.8)  # the first word alone decides random() < 0.8 outside [lo, hi)
    for step in range(3000):
        kind = step % 6
        if kind == 0:
            word, value = window.scalar[cursor.pos], cursor.random()
            assert value == reference.random()
            assert (word >= lo or value < 0.8) and (word < hi or value >= 0.8)
        elif kind == 1:
            assert cursor.randint(0, step) == reference.randint(0, step)
        elif kind == 2:
            n = 1 << (step % 12)  # powers of two waste half their words
            assert cursor.randint(5, 5 + n - 1) == reference.randint(5, 5 + n - 1)
        elif kind == 3:
            assert cursor.randint(7, 7) == reference.randint(7, 7)  # still takes words
        elif kind == 4:
            order = list(range(step % 40))
            reference.shuffle(order)
            assert cursor.shuffled(len(order)).tolist() == order
        else:
            assert cursor.randbelow(30522) == reference.randrange(30522)

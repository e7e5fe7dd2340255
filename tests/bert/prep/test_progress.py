"""Progress bars of the long data steps (bert.prep.progress): drawn on stderr, never on stdout."""

from bert.prep.progress import progress_bar


def test_a_bar_counts_on_stderr_and_a_disabled_bar_draws_nothing(capsys):
    with progress_bar("prepare", 3, "parts") as advance:
        for _ in range(3):
            advance(1)
    drawn = capsys.readouterr()
    assert drawn.out == "" and "prepare" in drawn.err and "3/3" in drawn.err
    with progress_bar("prepare", 3, "parts", enabled=False) as advance:
        advance(3)
    assert capsys.readouterr() == ("", "")

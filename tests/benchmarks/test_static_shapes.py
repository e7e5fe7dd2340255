"""benchmarks/static_shapes.py at a small epoch: the unrounded peer and every size count print, and the last
line is the 16 sizes' count of training shapes (the figures themselves come from running the script)."""

import re
import subprocess
import sys

from tests.helpers.repo import REPO


def test_static_shapes_benchmark_prints_each_size_count_and_the_shapes_of_16_last(cpu_env):
    proc = subprocess.run([sys.executable, "-m", "benchmarks.static_shapes", "--samples", "200000", "--no-results"],
                          cwd=REPO, env=cpu_env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    unrounded = int(re.search(r"unrounded \(peer\): ([0-9,]+) distinct", proc.stdout).group(1).replace(",", ""))
    rows = {int(m.group(1)): (int(m.group(2)), float(m.group(3)))
            for line in lines if (m := re.match(r" +(\d+) +[0-9,]+ +(\d+) +([0-9.]+)%", line))}
    assert sorted(rows) == [8, 16, 32, 64]
    shapes = [rows[k][0] for k in sorted(rows)]
    fillers = [rows[k][1] for k in sorted(rows)]
    assert all(s <= k for s, k in zip(shapes, sorted(rows))) and shapes == sorted(shapes) and shapes[-1] < unrounded
    assert fillers == sorted(fillers, reverse=True) and fillers[-1] > 0
    assert lines[-1] == f"distinct_shapes_per_epoch={rows[16][0]}"

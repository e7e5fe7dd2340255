"""Acceptance checks of a machine: does a GPU machine run this harness as it should (gpu_check.sh, with its Python
checks run as `python -m acceptance.gpu_check`: the encoder layer's in layer_checks.py, the training step's in
step_checks.py, their sizes in sizes.py)? They compare with no peer; the comparisons are in benchmarks/."""

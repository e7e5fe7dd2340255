"""Acceptance checks of a machine: does a GPU machine run this harness as it should (gpu_check.sh, with its Python
checks in gpu_check.py run as `python -m acceptance.gpu_check`)? They compare with no peer; the comparisons are
in benchmarks/."""

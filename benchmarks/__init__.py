"""Comparisons of this harness with a peer: one script a comparison, run from the repository root as
`python -m benchmarks.<name>`, each keeping its latest figures in `<name>_results.md` beside it. What several
scripts (and the tests) share lives in benchmarks.common; no script imports another."""

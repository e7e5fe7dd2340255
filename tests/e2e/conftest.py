"""The real Slurm cluster of the end-to-end tests: two slurmd on this host, started once per session."""

import pytest

from tests.cluster.slurm import slurm_cluster


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    with slurm_cluster(tmp_path_factory.mktemp("slurm")) as cluster:
        yield cluster

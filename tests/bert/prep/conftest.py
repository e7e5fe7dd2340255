"""Fixtures the tests of bert/prep share: the reference's own outputs kept in fixtures/ (made by
fixtures/make_reference_fixtures.py), and an official-looking download of the synthetic text corpus."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import pytest

from bert.prep.instances import SampleSpec
from bert.prep.prepare import PrepareOptions, prepare
from tests.bert.prep.fixtures.make_reference_fixtures import HERE, RUNS
from tests.helpers.downloads import official_download


@pytest.fixture
def prepare_reference_run(tmp_path) -> Callable[..., Path]:
    """prepare_reference_run(run, **option changes): the shard `data prepare` writes from the text and flags
    of the reference run `run` (a name of RUNS), exact unless changed."""
    def prepared(run: str, **changes) -> Path:
        text, length, predictions, dupe = RUNS[run]
        options = PrepareOptions(HERE / "vocab.txt", tmp_path / run, SampleSpec(length, predictions), "fixed", dupe)
        options = PrepareOptions(**{**options.__dict__, **changes})
        (result,) = prepare([HERE / text], options, 1, show_progress=False)
        return result.shard

    return prepared


@pytest.fixture
def reference_records(tmp_path) -> Path:
    """The reference's own TFRecord output of the run sample_text_128, unpacked into a fresh folder."""
    path = tmp_path / "records" / "sample_text_128.tfrecord"
    path.parent.mkdir()
    path.write_bytes(gzip.decompress((HERE / "sample_text_128.tfrecord.gz").read_bytes()))
    return path


@pytest.fixture
def download(tmp_path, text_corpus) -> Path:
    """The synthetic text corpus laid out as the official download, with its md5 list."""
    return official_download(tmp_path / "download", text_corpus)

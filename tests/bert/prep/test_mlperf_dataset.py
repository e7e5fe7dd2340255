import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import bert.prep.prepare as prepare_module
from bert.data.manifest import load_manifest
from bert.data.shards import Samples, read_shard
from bert.prep.instances import SampleSpec
from bert.prep.mlperf_dataset import MlperfOptions, build_mlperf_dataset
from bert.prep.official_inputs import MD5_LIST, InputError, read_md5_list
from bert.prep.reshard import eval_pick
from bert.prep.verify import summary_lines
from tests.helpers.compliance import cli
from tests.helpers.downloads import official_download

FIXTURES = Path(__file__).parent / "fixtures"
OPTIONS = MlperfOptions(SampleSpec(128, 20), dupe_factor=2, shards=6, eval_samples=40)


def _tree(out):
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*.hdf5"))
            if ".work" not in p.parts}


def test_one_command_makes_the_verified_tree(download, tmp_path):
    out = tmp_path / "data"
    report = build_mlperf_dataset(download, out, OPTIONS, show_progress=False, log=lambda line: None)
    assert report.problems == [] and report.manifest == out / "manifest.json"
    listed = {e.path for e in load_manifest(out).entries}
    assert {f"train/part-{k:05d}-of-00006.hdf5" for k in range(6)} <= listed
    assert {f"train_varlen/part-{k:05d}-of-00006.hdf5" for k in range(6)} <= listed
    assert {"eval.hdf5", "eval_varlen.hdf5", "vocab.txt"} <= listed
    assert load_manifest(out).checks["eval_pick"]["eval.hdf5"]["reference_pick"] is True  # its source is recorded
    provenance = json.loads((out / "provenance.json").read_text())
    assert provenance["inputs"] == read_md5_list(download / MD5_LIST) and len(provenance["inputs"]) == 4
    assert provenance["create_pretraining_data"]["random_seed"] == 12345
    parts = Samples.concat([read_shard(p) for p in sorted((out / ".work" / "parts").glob("*.hdf5"))])
    train = [read_shard(out / "train" / f"part-{k:05d}-of-00006.hdf5") for k in range(6)]
    assert sum(map(len, train)) == len(parts) and max(map(len, train)) - min(map(len, train)) <= 1
    for k, fixed in enumerate(train):
        varlen = read_shard(out / "train_varlen" / f"part-{k:05d}-of-00006.hdf5")
        assert np.array_equal(fixed.tokens, varlen.tokens) and np.array_equal(fixed.offsets, varlen.offsets)
    # The summary counts the samples once, not once per form (train/ and train_varlen/ hold the same ones).
    lines = summary_lines(report)
    assert lines[0] == (f"{out}: 6 training shard(s), {len(parts):,} samples, in each of 2 sets: train/ (fixed "
                        "form), train_varlen/ (varlen form)")
    assert sum(int(line.split()[1].replace(",", "")) for line in lines if line.startswith("  ")) == len(parts)
    verified = cli("data", "verify", out, "--quiet")
    assert verified.exit_code == 0 and verified.output.splitlines()[0] == lines[0]
    assert verified.output.splitlines()[-1] == ("verified: no problem in 14 file(s) of samples and the dataset-wide "
                                                f"checks; training accepts this dataset (manifest: {report.manifest})")
    # The eval set is the reference's pick from the eval text prepared as the parts are.
    prepared_eval = read_shard(out / ".work" / "eval" / "eval.hdf5")
    picked = prepared_eval.take(eval_pick(len(prepared_eval), 40))
    for name in ("eval.hdf5", "eval_varlen.hdf5"):
        got = read_shard(out / name)
        assert np.array_equal(got.tokens, picked.tokens) and np.array_equal(got.masked_ids[:, :picked.max_predictions],
                                                                            picked.masked_ids[:, :got.max_predictions])


def test_a_dataset_from_real_text_passes_every_check(tmp_path):
    """Project Gutenberg text (the reference's own sample), prepared at dupe factor 10 as the reference does."""
    corpus = tmp_path / "corpus"
    (corpus / "train").mkdir(parents=True)
    shutil.copyfile(FIXTURES / "sample_text.txt", corpus / "train" / "part-0")
    for name, target in (("tricky_text.txt", "eval.txt"), ("vocab.txt", "vocab.txt")):
        shutil.copyfile(FIXTURES / name, corpus / target)
    options = MlperfOptions(SampleSpec(128, 20), dupe_factor=10, shards=2, eval_samples=20)
    report = build_mlperf_dataset(official_download(tmp_path / "download", corpus), tmp_path / "data", options,
                                  show_progress=False, log=lambda line: None)
    assert report.problems == [] and report.checks["eval_in_train"]["eval.hdf5"]["in_train"] == 0
    assert report.checks["duplicates"]["train/ (fixed form)"]["samples"] == 178  # the reference's own count


def test_an_interrupted_build_goes_on_where_it_stopped(download, tmp_path, monkeypatch):
    out = tmp_path / "data"
    real = prepare_module.prepare_part
    calls = []

    def stop_at_the_second_part(job, report, options):
        calls.append(job.text.name)
        if len(calls) == 2:  # killed while writing: a half-written shard keeps its temporary name
            (job.shard.parent / f".{job.shard.name}.tmp999").write_bytes(b"half")
            raise KeyboardInterrupt
        return real(job, report, options)

    monkeypatch.setattr(prepare_module, "prepare_part", stop_at_the_second_part)
    with pytest.raises(KeyboardInterrupt):
        build_mlperf_dataset(download, out, OPTIONS, show_progress=False, log=lambda line: None)
    finished = {p.name: p.stat().st_mtime_ns for p in (out / ".work" / "parts").glob("*.hdf5")}
    assert len(finished) == 1
    calls.clear()
    monkeypatch.setattr(prepare_module, "prepare_part", lambda job, report, options: calls.append(job.text.name)
                        or real(job, report, options))
    build_mlperf_dataset(download, out, OPTIONS, show_progress=False, log=lambda line: None)
    assert len(calls) == 3  # the two parts not finished and the eval text; the finished part is not redone
    assert {name: (out / ".work" / "parts" / name).stat().st_mtime_ns for name in finished} == finished
    assert not list((out / ".work" / "parts").glob(".*.tmp*"))
    build_mlperf_dataset(download, tmp_path / "clean", OPTIONS, show_progress=False, log=lambda line: None)
    assert _tree(out) == _tree(tmp_path / "clean")


def test_a_part_that_differs_from_its_md5_stops_before_any_work(download, tmp_path):
    part = download / "results4" / "part-00001-of-00003"
    part.write_bytes(part.read_bytes().replace(b"\n", b" \n", 1))
    with pytest.raises(InputError, match=r"part-00001-of-00003: md5 [0-9a-f]{32}, the list says [0-9a-f]{32}; "
                                         r"the file is damaged or not the official one"):
        build_mlperf_dataset(download, tmp_path / "data", OPTIONS, show_progress=False, log=lambda line: None)
    assert not (tmp_path / "data" / ".work" / "parts").exists()

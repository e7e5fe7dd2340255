"""`mlperf-bert data mlperf ROOT --out DATA`: the official MLPerf inputs -> the training-ready tree, resumable.

From the download folder (`official_inputs`: results4/ text parts, eval.txt, vocab.txt, the md5 list) it
checks every input's md5, prepares each of the 500 parts exactly as the reference does (one shard per part),
prepares the eval text the same way and picks the reference's 10,000 eval samples, re-cuts the parts into
4,320 shuffled shards, writes both HDF5 forms of the training shards and of the eval set, and verifies the
tree (DATA/manifest.json). Intermediate results live in DATA/.work; each step skips what is complete, so the
same command after an interruption goes on where it stopped: a finished part is never prepared again and a
half-written one (a temporary file) is started afresh. DATA and every folder in it are claimed for this
command (bert.ownership): a DATA that holds anything it did not write is refused, never taken as its work.

    DATA/train/part-00000-of-04320.hdf5 ...         fixed-length form
    DATA/train_varlen/part-00000-of-04320.hdf5 ...  variable-length form, the same samples
    DATA/eval.hdf5, DATA/eval_varlen.hdf5            the eval set in both forms
    DATA/vocab.txt, DATA/manifest.json               the manifest that `data verify` writes
    DATA/provenance.json                              each input and its md5, the flags, the seeds, the eval
                                                      set's source (which `data verify` checks the pick against)
    DATA/official.json                                whether the download is the official one, by the checksums
                                                      the reference publishes (bert.prep.official_files), and the
                                                      SHA-256 of each file verified: an official tree stays so
                                                      only while its files are those
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from bert.data.manifest import MANIFEST_FILE, sha256_of
from bert.data.shards import read_shard, shard_header
from bert.data.vocab import load_vocab
from bert.mlperf_rules import EVAL_SAMPLES, REFERENCE_PREP, TRAINING_SHARDS
from bert.ownership import OwnedFolder, claim_folder, temporary_path, write_text_atomically
from bert.prep.instances import SampleSpec
from bert.prep.official_files import OFFICIAL_RECORD, judge_download, record_tree
from bert.prep.official_inputs import OfficialInputs, find_inputs, read_md5_list, verify_inputs
from bert.prep.prepare import PrepareOptions, prepare
from bert.prep.progress import Advance, progress_bar
from bert.prep.reshard import BUCKETS, OutputShape, pick_eval_set, reshard, write_samples
from bert.prep.shard_check import Limits
from bert.prep.verify import VerifyReport, verify_dataset
from bert.prep.worker_pool import run_parallel

WRITER = "data mlperf"
WORK = ".work"
MD5_CACHE = "md5.json"  # in WORK: the inputs verified, by size and time
PROVENANCE = "provenance.json"


@dataclass(frozen=True)
class MlperfOptions:
    spec: SampleSpec = SampleSpec()  # the reference flags (REFERENCE_PREP)
    dupe_factor: int = REFERENCE_PREP.dupe_factor
    seed: int = REFERENCE_PREP.random_seed  # create_pretraining_data's --random_seed
    shards: int = TRAINING_SHARDS
    eval_samples: int = EVAL_SAMPLES
    reshard_seed: int = REFERENCE_PREP.random_seed
    workers: int = 1


def build_mlperf_dataset(root: Path, out: Path, options: MlperfOptions = MlperfOptions(), show_progress: bool = True,
                         log: Callable[[str], None] = print) -> VerifyReport:
    """Makes (or completes) the tree in `out`; returns the verification report (its manifest is written).
    `out` is claimed first (bert.ownership): a folder holding anything this command did not write is refused."""
    inputs = find_inputs(root)
    with claim_folder(out, WRITER, [root], mode="resume") as tree:
        tree.record(WORK, "vocab.txt", "eval.hdf5", "eval_varlen.hdf5", "train", "train_varlen", PROVENANCE,
                    MANIFEST_FILE, OFFICIAL_RECORD)
        with tree.subfolder(WORK) as work:
            return _build(inputs, out, work, options, show_progress, log)


def _build(inputs: OfficialInputs, out: Path, work: OwnedFolder, options: MlperfOptions, show_progress: bool,
           log: Callable[[str], None]) -> VerifyReport:
    shape = OutputShape("fixed", options.spec.max_seq_length, options.spec.max_predictions)
    stamp = f"train-{options.shards}-{options.reshard_seed}.done"
    work.record(MD5_CACHE, "parts", "eval", BUCKETS, stamp)
    log(f"1/6 md5 of {len(inputs.parts)} parts and {inputs.eval_text.name} against {inputs.md5_list.name}")
    hashed = verify_inputs(inputs, work.path / MD5_CACHE, options.workers, show_progress)
    log(f"    all match ({hashed} hashed now, the others unchanged since they were)")
    vocab = _copy_vocab(inputs.vocab, out)
    parts = PrepareOptions(vocab, work.path / "parts", options.spec, "fixed", options.dupe_factor, options.seed)
    log(f"2/6 preparing the parts as the reference does, into {parts.out_dir}")
    done = prepare(inputs.parts, parts, options.workers, "resume", show_progress, WRITER)
    log(f"    {len(done)} prepared now, {len(inputs.parts) - len(done)} were complete")
    log("3/6 preparing the eval text and picking the eval set")
    prepare([inputs.eval_text], replace(parts, out_dir=work.path / "eval"), 1, "resume", show_progress, WRITER)
    eval_parts = sorted((work.path / "eval").glob("*.hdf5"))
    for name, form in (("eval.hdf5", "fixed"), ("eval_varlen.hdf5", "varlen")):
        if not (out / name).is_file():
            pick_eval_set(eval_parts, out / name, options.eval_samples, replace(shape, form=form),
                          show_progress=show_progress, writer=WRITER)
    log(f"4/6 re-cutting into {options.shards} shuffled shards in {out / 'train'}")
    if not (work.path / stamp).is_file():
        reshard(sorted((work.path / "parts").glob("*.hdf5")), out / "train", options.shards, options.reshard_seed,
                shape, options.workers, overwrite=True, tmp_dir=work.path, show_progress=show_progress, writer=WRITER)
        (work.path / stamp).write_text("complete\n")
    log(f"5/6 the variable-length form in {out / 'train_varlen'}")
    _varlen_copies(sorted((out / "train").glob("*.hdf5")), out / "train_varlen", shape, len(load_vocab(vocab)),
                   options.workers, show_progress)
    log("6/6 verifying the tree")
    _write_provenance(out, inputs, options)
    report = verify_dataset(out, vocab, Limits(shape.max_seq_length, shape.max_predictions), options.workers,
                            show_progress, WRITER)
    verdict = judge_download(inputs.parts, inputs.eval_text, inputs.vocab, read_md5_list(inputs.md5_list))
    record_tree(out, verdict, {entry.path: entry.sha256 for entry in report.entries})
    return report


def _write_provenance(out: Path, inputs: OfficialInputs, options: MlperfOptions) -> None:
    """DATA/provenance.json: what the tree was made from (each input's md5 as checked) and how."""
    table = read_md5_list(inputs.md5_list)
    record = {"inputs": {p.name: table[p.name] for p in [*inputs.parts, inputs.eval_text]},
              "vocab_sha256": sha256_of(inputs.vocab), "md5_list": inputs.md5_list.name,
              "create_pretraining_data": {"do_lower_case": True, "max_seq_length": options.spec.max_seq_length,
                                          "max_predictions_per_seq": options.spec.max_predictions,
                                          "masked_lm_prob": options.spec.masked_lm_prob,
                                          "short_seq_prob": options.spec.short_seq_prob,
                                          "random_seed": options.seed, "dupe_factor": options.dupe_factor},
              "eval": {"samples": options.eval_samples, "pick": "int(i * (n / samples))", "source": f"{WORK}/eval"},
              "train": {"shards": options.shards, "reshard_seed": options.reshard_seed}}
    write_text_atomically(out / PROVENANCE, json.dumps(record, indent=1) + "\n")


def _copy_vocab(vocab: Path, out: Path) -> Path:
    target = out / "vocab.txt"
    if target.exists() and not filecmp.cmp(vocab, target, shallow=False):
        raise FileExistsError(f"{target}: differs from {vocab}; this tree was made with another vocabulary: use "
                              "another --out")
    if not target.exists():
        tmp = temporary_path(target)
        shutil.copyfile(vocab, tmp)
        os.replace(tmp, target)
    return target


@dataclass(frozen=True)
class _Varlen:
    out_dir: Path
    shape: OutputShape
    vocab_size: int

    def __call__(self, source: Path, report: Advance) -> Path:
        target = self.out_dir / source.name
        write_samples(target, read_shard(source), replace(self.shape, form="varlen"), self.vocab_size, report)
        return target


def _varlen_copies(sources: list[Path], out_dir: Path, shape: OutputShape, vocab_size: int, workers: int,
                   show_progress: bool) -> None:
    """The variable-length form of each shard that has none yet (a shard appears only when complete), in
    `out_dir` claimed for this command."""
    with claim_folder(out_dir, WRITER, mode="resume") as folder:
        folder.record(*(s.name for s in sources))
        todo = [s for s in sources if not (out_dir / s.name).is_file()]
        total = sum(shard_header(s).samples for s in todo)
        with progress_bar("varlen", total, "samples", show_progress and bool(todo)) as advance:
            run_parallel(_Varlen(out_dir, shape, vocab_size), todo, workers, advance)

"""`mlperf-bert data prepare`: text parts -> pre-training shards, one shard per part, parts in parallel.

Each part is one job, as each part is one run of the reference `create_pretraining_data`: its documents are
read and tokenised as a stream, random next sentences come from the other documents of the same part, and
every part uses the one preprocessing seed. The default is the reference's dataset exactly
(`exact_instances`: the same samples in the same order for the same text, vocabulary and flags); `fast`
draws samples of the same distribution at array speed (`instances`), a different dataset. A worker holds
one part's word-piece ids (and, exactly, its instances' spans and masks) and writes its shard a block of
samples at a time, so its memory is bounded by the part, never by the corpus. Shards are written
under a temporary name and renamed when complete: an interrupted run leaves only complete shards, and
`resume` skips them. `prepare.json` in the output folder records the settings, so that a resumed run cannot
mix shards made with other settings. The output folder is claimed first (bert.ownership): a folder holding
files that prepare did not write is refused, and of two runs into one folder the second is refused before it
touches anything.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import resource
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from bert.data.shards import FORMS
from bert.data.vocab import load_vocab
from bert.mlperf_rules import REFERENCE_PREP
from bert.ownership import OwnedFolder, claim_folder, write_text_atomically
from bert.prep import exact_instances
from bert.prep.fast_instances import build_samples, plan_instances
from bert.prep.instances import Documents, SampleSpec, SpecialIds
from bert.prep.progress import Advance, progress_bar
from bert.prep.shard_writer import ShardWriter
from bert.prep.text_parts import TextError, read_documents
from bert.prep.tokenizer import WordPieceTokenizer
from bert.prep.worker_pool import run_parallel

SETTINGS_FILE = "prepare.json"
WRITER = "data prepare"
ENCODE_SENTENCES = 8192  # sentences tokenised per call
BUILD_SAMPLES = 1024  # samples assembled, masked and written per block (a few MB: they stay in the caches)
MODES = ("new", "overwrite", "resume")


@dataclass(frozen=True)
class PrepareOptions:
    vocab: Path
    out_dir: Path
    spec: SampleSpec = SampleSpec()
    form: str = "fixed"
    dupe_factor: int = REFERENCE_PREP.dupe_factor
    seed: int = REFERENCE_PREP.random_seed
    exact: bool = True  # the reference's dataset; False: the fast sampler's, same distribution

    def check(self) -> None:
        self.spec.check()
        if self.form not in FORMS:
            raise ValueError(f"unknown format {self.form!r}; use {' or '.join(FORMS)}")
        if self.dupe_factor < 1:
            raise ValueError(f"dupe factor {self.dupe_factor} must be at least 1")


@dataclass(frozen=True)
class PartJob:
    text: Path
    shard: Path


@dataclass(frozen=True)
class PartResult:
    text: Path
    shard: Path
    samples: int
    seconds: float
    cpu_seconds: float  # of the process that prepared the part, while it did
    peak_rss_bytes: int  # of the process that prepared the part


def shard_name(text: Path) -> str:
    return (text.stem if text.suffix == ".txt" else text.name) + ".hdf5"


def plan_jobs(texts: list[Path], out_dir: Path) -> list[PartJob]:
    jobs, seen = [], {}
    for text in texts:
        name = shard_name(text)
        if name in seen:
            raise TextError(f"{text}: would write {out_dir / name}, as {seen[name]} does; rename one of the parts")
        seen[name] = text
        jobs.append(PartJob(text, out_dir / name))
    return jobs


def _settings(texts: list[Path], options: PrepareOptions) -> dict:
    return {"parts": [t.name for t in texts], "vocab_sha256": hashlib.sha256(options.vocab.read_bytes()).hexdigest(),
            "form": options.form, "dupe_factor": options.dupe_factor, "seed": options.seed,
            "sampler": "exact" if options.exact else "fast", **asdict(options.spec)}


def _jobs_to_do(jobs: list[PartJob], texts: list[Path], options: PrepareOptions, folder: OwnedFolder) -> list[PartJob]:
    """The jobs whose shard is not complete in the claimed output folder; a resumed folder must hold shards
    made with the same settings."""
    settings_path = folder.path / SETTINGS_FILE
    settings = _settings(texts, options)
    done = {name for name in folder.existing() if name.endswith(".hdf5")}
    if done:
        recorded = json.loads(settings_path.read_text()) if settings_path.is_file() else None
        if recorded != settings:
            changed = "no record of the settings" if recorded is None else "other settings: " + ", ".join(
                k for k in settings if recorded.get(k) != settings[k])
            raise ValueError(f"{settings_path}: {folder.path} holds shards made with {changed}; run with the same "
                             "options, or pass --overwrite to start again")
    folder.record(SETTINGS_FILE, *(j.shard.name for j in jobs))
    if not done:
        write_text_atomically(settings_path, json.dumps(settings, indent=2) + "\n")
    return [j for j in jobs if j.shard.name not in done]


def tokenize_part(path: Path, tokenizer: WordPieceTokenizer, on_bytes: Advance | None = None) -> Documents:
    """The part's documents as word-piece ids; the text is read as a stream, never held whole."""
    tokens, sentence_lengths, document_sentences, batch = [], [], [], []

    def encode() -> None:
        ids, lengths = tokenizer.encode(batch)
        tokens.append(ids)
        sentence_lengths.append(lengths)
        batch.clear()

    for document in read_documents(path, on_bytes):
        document_sentences.append(len(document))
        batch.extend(document)
        if len(batch) >= ENCODE_SENTENCES:
            encode()
    encode()
    documents = Documents.from_lengths(np.concatenate(tokens), np.concatenate(sentence_lengths),
                                       np.array(document_sentences, dtype=np.int64))
    if len(documents) < 2:
        raise TextError(f"{path}: fewer than 2 documents hold words the vocabulary can spell; random next "
                        "sentences need other documents")
    return documents


def prepare_part(job: PartJob, report: Advance, options: PrepareOptions) -> PartResult:
    """One part -> one shard. `report` hears the progress in bytes of the part: half for reading and
    tokenising, half for building and writing the samples."""
    start, start_cpu = time.perf_counter(), time.process_time()
    vocab = load_vocab(options.vocab)
    half = job.text.stat().st_size / 2
    documents = tokenize_part(job.text, WordPieceTokenizer(vocab), lambda n: report(n / 2))
    special = SpecialIds(vocab.cls_id, vocab.sep_id, vocab.mask_id, len(vocab))
    spec = options.spec
    write = _exact_blocks if options.exact else _fast_blocks
    with ShardWriter(job.shard, options.form, spec.max_seq_length, spec.max_predictions, len(vocab)) as writer:
        count = 0
        for samples in write(documents, options, special, lambda share: report(half * share)):
            writer.append(samples)
            count += len(samples)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return PartResult(job.text, job.shard, count, time.perf_counter() - start, time.process_time() - start_cpu, peak)


def _exact_blocks(documents: Documents, options: PrepareOptions, special: SpecialIds, report: Advance):
    """Blocks of samples in the reference's order; `report` hears shares of the work (creating the
    instances is the first half)."""
    instances = exact_instances.create_instances(documents, options.spec, special, options.seed,
                                                 options.dupe_factor, lambda share: report(share / 2))
    for first in range(0, len(instances), BUILD_SAMPLES):
        rows = instances.order[first:first + BUILD_SAMPLES]
        yield exact_instances.build_samples(documents.tokens, instances, rows, special, options.spec.max_predictions)
        report(len(rows) / len(instances) / 2)


def _fast_blocks(documents: Documents, options: PrepareOptions, special: SpecialIds, report: Advance):
    plans = plan_instances(documents, options.spec, random.Random(options.seed), options.dupe_factor)
    rng = np.random.default_rng(options.seed)
    order = rng.permutation(len(plans))  # the reference shuffles the instances of a part
    for first in range(0, len(order), BUILD_SAMPLES):
        block = order[first:first + BUILD_SAMPLES]
        yield build_samples(documents.tokens, plans[block], options.spec, special, rng)
        report(len(block) / len(order))


def prepare(texts: list[Path], options: PrepareOptions, workers: int, mode: str = "new",
            show_progress: bool = True, writer: str = WRITER) -> list[PartResult]:
    """Prepares every part not done yet into the output folder, claimed for `writer` (the command the user
    ran; see bert.ownership); returns the results of the parts prepared by this call."""
    options.check()
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
    load_vocab(options.vocab)  # a bad vocabulary fails here, once, not in every worker
    again = "pass --resume to complete the missing parts or --overwrite to replace them"
    with claim_folder(options.out_dir, writer, [*texts, options.vocab], mode=mode, again=again) as folder:
        jobs = _jobs_to_do(plan_jobs(texts, options.out_dir), texts, options, folder)
        jobs.sort(key=lambda j: j.text.stat().st_size, reverse=True)  # big parts first: workers finish together
        total = sum(j.text.stat().st_size for j in jobs)
        with progress_bar("prepare", total, "bytes", show_progress and bool(jobs)) as advance:
            results = run_parallel(functools.partial(prepare_part, options=options), jobs, workers, advance)
    return sorted(results, key=lambda r: r.shard.name)

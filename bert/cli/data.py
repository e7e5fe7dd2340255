"""`mlperf-bert data ...`: synthetic corpora, the data pipeline and shard verification."""

from __future__ import annotations

import os
from pathlib import Path

import click

from bert.cli.common import Group, descriptor_for_command, os_error_line, out_option, system_option
from bert.cli.data_options import DataError, data_errors, input_paths, shape_options, text_inputs
from bert.cli.shards import SHARD_COMMANDS
from bert.mlperf_rules import EVAL_SAMPLES, REFERENCE_PREP, TRAINING_SHARDS
from bert.system import DEFAULT_SYSTEM


@click.group(cls=Group)
def data() -> None:
    """Dataset tools: the MLPerf dataset, synthetic corpora, shards, verification."""


@data.command()
@out_option("Output directory (default: the descriptor's run.dataset.dir).")
@system_option("The descriptor whose run.dataset.synthetic block sets the corpus size and shapes",
               default=DEFAULT_SYSTEM)
@click.option("--overwrite", is_flag=True, help="Replace a corpus this command wrote earlier in the output directory.")
@click.option("--if-missing", is_flag=True, help="Do nothing when a complete corpus is already there (an "
              "interrupted one is written again).")
def synth(out: Path | None, system: str, overwrite: bool, if_missing: bool) -> None:
    """Write the deterministic synthetic corpus (train shards, eval file, vocab.txt). The output directory must
    be empty, new, or hold a corpus this command wrote: anything else is left alone and refused."""
    import time

    from bert.data.settings import SyntheticDataSpec
    from bert.prep.synthetic.hdf5_corpus import synthesize, synthesize_if_missing

    descriptor = descriptor_for_command(system)
    spec = descriptor.run.dataset.synthetic or SyntheticDataSpec()
    out = out or descriptor.dataset_dir()
    start = time.perf_counter()
    try:
        if if_missing and not synthesize_if_missing(out, spec, on_wait=lambda line: click.echo(line, err=True)):
            click.echo(f"synthetic dataset already complete in {out}")
            return
        if not if_missing:
            synthesize(out, spec, overwrite=overwrite)
    except OSError as e:  # a folder it may not write; a full disk
        raise click.ClickException(os_error_line(e)) from None
    click.echo(f"wrote {spec.train_samples} train + {spec.eval_samples} eval samples to {out} "
               f"in {time.perf_counter() - start:.1f} s")


@data.command(name="synth-text")
@out_option("Output folder: OUT/train/part-*.txt and OUT/eval.txt.", required=True)
@click.option("--megabytes", type=click.FloatRange(min=0, min_open=True), default=50.0, show_default=True,
              help="Training text to write, split evenly over the parts.")
@click.option("--parts", type=click.IntRange(min=1), default=8, show_default=True, help="Training text parts.")
@click.option("--eval-megabytes", type=click.FloatRange(min=0), default=1.0, show_default=True,
              help="Eval text (documents of their own); 0 for none.")
@click.option("--seed", type=int, default=REFERENCE_PREP.random_seed, show_default=True,
              help="Seed of the lexicon and the text.")
@click.option("--lexicon-size", type=click.IntRange(min=1024), default=4096, show_default=True,
              help="Word pieces of the grammar's lexicon (not the vocabulary `data vocab` learns).")
@click.option("--mean-sentences", type=click.FloatRange(min=1), default=24.0, show_default=True,
              help="Mean sentences per document.")
@click.option("--overwrite", is_flag=True, help="Replace what the output folder holds.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def synth_text(out: Path, megabytes: float, parts: int, eval_megabytes: float, seed: int, lexicon_size: int,
               mean_sentences: float, overwrite: bool, quiet: bool) -> None:
    """Write the synthetic grammar's language as plain text in the reference layout. One sentence per line, a
    blank line between documents: for trying the text pipeline without downloads."""
    from bert.prep.progress import progress_bar
    from bert.prep.synthetic.text_corpus import TextCorpusSpec, write_text_corpus

    spec = TextCorpusSpec(megabytes, parts, eval_megabytes, seed, lexicon_size, mean_sentences)
    with progress_bar("synth-text", (megabytes + eval_megabytes) * 1e6, "bytes", not quiet) as advance:
        written = data_errors(lambda: write_text_corpus(out, spec, overwrite, advance))
    click.echo(f"wrote {len(written)} text file(s), {sum(p.stat().st_size for p in written) / 1e6:.1f} MB, "
               f"to {out}")


@data.command()
@text_inputs
@click.option("--size", type=click.IntRange(min=100), required=True,
              help="Word pieces at most (the MLPerf vocabulary has 30522).")
@out_option("vocab.txt to write.", required=True, file=True)
@click.option("--min-frequency", type=click.IntRange(min=1), default=2, show_default=True,
              help="Merges seen fewer times than this are not learnt.")
@click.option("--overwrite", is_flag=True, help="Replace an existing --out file.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def vocab(texts: tuple[Path, ...], more_texts: tuple[Path, ...], size: int, out: Path, min_frequency: int,
          overwrite: bool, quiet: bool) -> None:
    """Learn an uncased WordPiece vocab.txt from text. [PAD] on the first line, then [UNK] [CLS] [SEP] [MASK];
    the same text gives the same vocabulary. Real MLPerf runs use the MLPerf vocab.txt instead.
    TEXT: text parts, or folders of parts."""
    from bert.ownership import claim_file
    from bert.prep.vocab_learning import train_vocab

    paths = input_paths(texts, more_texts, out, "give at least one text part or folder of parts (TEXT...)")

    def learn():
        with claim_file(out, "data vocab", paths, replace=overwrite):
            learnt = train_vocab(paths, size, min_frequency, show_progress=not quiet)
            learnt.write(out)
        return learnt
    learnt = data_errors(learn)
    click.echo(f"wrote {len(learnt)} word pieces to {out}")


@data.command()
@text_inputs
@click.option("--vocab", "vocab_path", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="vocab.txt ([PAD] first; [UNK], [CLS], [SEP], [MASK] present).")
@out_option("Folder for the shards: OUT/<part name>.hdf5, plus OUT/prepare.json (the settings).", required=True)
@shape_options
@click.option("--workers", type=click.IntRange(min=1), default=os.cpu_count() or 1,
              show_default="one per core", help="Parts prepared at once, each by its own process.")
@click.option("--masked-lm-prob", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=REFERENCE_PREP.masked_lm_prob,
              show_default=True, help="Share of each sequence masked (rounded; at least 1 position).")
@click.option("--short-seq-prob", type=click.FloatRange(0, 1), default=REFERENCE_PREP.short_seq_prob, show_default=True,
              help="Chance that a document pass aims at a random shorter length.")
@click.option("--dupe-factor", type=click.IntRange(min=1), default=REFERENCE_PREP.dupe_factor, show_default=True,
              help="Passes over each part's documents, each cut and masked afresh.")
@click.option("--seed", type=int, default=REFERENCE_PREP.random_seed, show_default=True,
              help=f"Preprocessing seed (MLPerf: {REFERENCE_PREP.random_seed}); the same text, vocab, options and "
              "seed give byte-identical shards.")
@click.option("--fast", is_flag=True, help="Draw samples of the reference's distribution at array speed instead "
              "of the reference's exact samples: a different dataset, never one for a closed submission.")
@click.option("--overwrite", is_flag=True, help="Delete the shards already in --out and prepare every part.")
@click.option("--resume", is_flag=True, help="Keep the complete shards in --out (an interrupted run with the "
              "same options) and prepare only the missing parts. Without --resume or --overwrite, an --out "
              "that holds shards is refused.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def prepare(texts: tuple[Path, ...], more_texts: tuple[Path, ...], vocab_path: Path, out: Path, form: str,
            max_seq_length: int, max_predictions: int, workers: int, masked_lm_prob: float,
            short_seq_prob: float, dupe_factor: int, seed: int, fast: bool, overwrite: bool, resume: bool,
            quiet: bool) -> None:
    """Prepare pre-training shards from text parts, exactly as the reference does. The shards of the reference
    create_pretraining_data.py run on each part with the same vocab and flags (the same samples in the same
    order): one shard per part, parts in parallel, each worker's memory bounded by one part. TEXT: text parts,
    or folders of parts, in the reference layout (one sentence per line, a blank line between documents)."""
    import time

    from bert.prep.instances import SampleSpec
    from bert.prep.prepare import PrepareOptions
    from bert.prep.prepare import prepare as run_prepare

    if overwrite and resume:
        raise click.UsageError("--overwrite and --resume exclude each other")
    # One process per core: the tokenizer must not start a thread pool of its own in every worker.
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    paths = input_paths(texts, more_texts, out, "give at least one text part or folder of parts (TEXT...)")
    spec = SampleSpec(max_seq_length, max_predictions, masked_lm_prob, short_seq_prob)
    options = PrepareOptions(vocab_path, out, spec, form, dupe_factor, seed, exact=not fast)
    mode = "overwrite" if overwrite else "resume" if resume else "new"
    start = time.perf_counter()
    results = data_errors(lambda: run_prepare(paths, options, workers, mode, show_progress=not quiet))
    seconds = time.perf_counter() - start
    samples = sum(r.samples for r in results)
    skipped = f"; {len(paths) - len(results)} part(s) already complete" if len(results) < len(paths) else ""
    peak = max((r.peak_rss_bytes for r in results), default=0) / 2**20
    cpu = sum(r.cpu_seconds for r in results)
    click.echo(f"prepared {len(results)} part(s): {samples:,} samples in {seconds:.1f} s "
               f"({samples / max(seconds, 1e-9):,.0f} samples/s; {cpu:.2f} s of CPU in the workers), peak worker "
               f"memory {peak:,.0f} MiB{skipped}; shards in {out}")


@data.command()
@click.argument("root", type=click.Path(exists=True, file_okay=False, path_type=Path))
@out_option("The dataset folder to make: train/, train_varlen/, eval.hdf5, eval_varlen.hdf5, vocab.txt, "
              "manifest.json (and .work/ for the intermediate results).", required=True)
@click.option("--shards", type=click.IntRange(min=1), default=TRAINING_SHARDS, show_default=True,
              help="Training shards.")
@click.option("--eval-samples", type=click.IntRange(min=1), default=EVAL_SAMPLES, show_default=True,
              help="Samples of the eval set.")
@click.option("--workers", type=click.IntRange(min=1), default=os.cpu_count() or 1, show_default="one per core",
              help="Processes for hashing, preparing, re-cutting and verifying.")
@click.option("--max-seq-length", type=click.IntRange(min=5), default=REFERENCE_PREP.max_seq_length,
              show_default=True, help="The reference flag (change it only to try the command on small inputs).")
@click.option("--max-predictions", type=click.IntRange(min=1), default=REFERENCE_PREP.max_predictions_per_seq,
              show_default=True, help="The reference flag.")
@click.option("--dupe-factor", type=click.IntRange(min=1), default=REFERENCE_PREP.dupe_factor, show_default=True,
              help="The reference flag.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
def mlperf(root: Path, out: Path, shards: int, eval_samples: int, workers: int, max_seq_length: int,
           max_predictions: int, dupe_factor: int, quiet: bool) -> None:
    """Make the whole MLPerf dataset from the official download folder ROOT. ROOT holds results4/ with the 500
    text parts and eval.txt, bert_reference_results_text_md5.txt and vocab.txt; the command checks the md5s,
    prepares every part exactly as the reference does, picks the reference's eval set, re-cuts the parts into
    shuffled shards in both HDF5 forms and verifies the tree. After an interruption the same command goes on
    where it stopped."""
    from bert.prep.instances import SampleSpec
    from bert.prep.mlperf_dataset import MlperfOptions, build_mlperf_dataset

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    options = MlperfOptions(SampleSpec(max_seq_length, max_predictions), dupe_factor, shards=shards,
                            eval_samples=eval_samples, workers=workers)
    report = data_errors(lambda: build_mlperf_dataset(root, out, options, not quiet, click.echo))
    _print_verification(report)


@data.command()
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--vocab", "vocab_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Vocabulary to check token ids against (default: DIRECTORY/vocab.txt).")
@click.option("--max-seq-length", type=click.IntRange(min=5), default=None,
              help="Also require every sample to fit this length (the descriptor's run.max_seq_length).")
@click.option("--max-predictions", type=click.IntRange(min=1), default=None,
              help="Also require at most this many masked positions (run.max_predictions_per_seq).")
@click.option("--eval", "eval_files", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="An eval file besides DIRECTORY's eval*.hdf5 (repeatable): the eval files are checked against "
              "the training shards, which are all the other shards.")
@click.option("--eval-source", type=click.Path(exists=True, path_type=Path), default=None,
              help="The prepared eval shards the eval file was picked from (a shard or a folder): the eval file "
              "must be the reference's pick of them (default: the source `data mlperf` recorded).")
@click.option("--workers", type=click.IntRange(min=1), default=os.cpu_count() or 1,
              show_default="one per core", help="Shards checked at once, each by its own process.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def verify(directory: Path, vocab_path: Path | None, max_seq_length: int | None, max_predictions: int | None,
           eval_files: tuple[Path, ...], eval_source: Path | None, workers: int, quiet: bool) -> None:
    """Check a dataset and write its manifest. Every shard below DIRECTORY (keys, shapes, dtypes, token ids,
    masked positions, segment ids, sample counts), then duplicate samples, eval samples in training, the eval
    pick and the vocabulary; prints a summary and a verdict, and writes DIRECTORY/manifest.json, which training
    checks at start-up."""
    from bert.prep.shard_check import Limits
    from bert.prep.verify import verify_dataset

    limits = Limits(max_seq_length, max_predictions)
    report = data_errors(lambda: verify_dataset(directory, vocab_path, limits, workers, not quiet,
                                                 eval_files=list(eval_files), eval_source=eval_source))
    _print_verification(report)


def _print_verification(report) -> None:
    """A verification's summary, whether the tree is the official MLPerf dataset, its problems (then a failing
    exit) or the manifest it wrote."""
    from bert.prep.official_files import dataset_verdict
    from bert.prep.verify import summary_lines

    for line in [*summary_lines(report), *report.check_lines]:
        click.echo(line)
    click.echo(dataset_verdict(report.root, {e.path: e.sha256 for e in report.entries}).line("dataset"))
    if report.problems:
        for line in report.problems:
            click.echo(line, err=True)
        raise DataError(f"{len(report.problems)} problem(s) found; {report.manifest} records them, and training "
                         "refuses this dataset until they are fixed")
    files = sum(1 for e in report.entries if e.samples is not None)
    click.echo(f"verified: no problem in {files} file(s) of samples and the dataset-wide checks; training accepts "
               f"this dataset (manifest: {report.manifest})")


for _command in SHARD_COMMANDS:
    data.add_command(_command)

COMMANDS = [data]

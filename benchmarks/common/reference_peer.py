"""The reference `create_pretraining_data.py` (google-research/bert, or the MLCommons copy in
training/.../bert/cleanup_scripts) as a peer: run unmodified, in a process of its own, for the data
benchmark and for regenerating the test fixtures. Needs TensorFlow (`pip install -e .[tf]`); under
TensorFlow 2 the script's `import tensorflow` is given `tensorflow.compat.v1`, whose flags, logging, gfile,
python_io and train.Example are the ones it was written for.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

_PRELUDE = """
import sys
import tensorflow as tf
if not tf.__version__.startswith("1."):
    import tensorflow.compat.v1 as tf
    sys.modules["tensorflow"] = tf
script_dir = sys.argv[1]
sys.path.insert(0, script_dir)
"""

_RUN = _PRELUDE + """
import atexit, os, runpy, time
sys.argv = [os.path.join(script_dir, "create_pretraining_data.py"), *sys.argv[2:]]
start_cpu, start_wall = time.process_time(), time.perf_counter()
atexit.register(lambda: print(f"reference_seconds cpu={time.process_time() - start_cpu:.3f} "
                              f"wall={time.perf_counter() - start_wall:.3f}", file=sys.stderr))
runpy.run_path(sys.argv[0], run_name="__main__")
"""

_TOKENIZE = _PRELUDE + """
import json
import tokenization
if hasattr(tokenization, "FLAGS"):
    tokenization.FLAGS(["tokenize"])  # the MLCommons copy reads a flag of its own
tokenizer = tokenization.FullTokenizer(vocab_file=sys.argv[2], do_lower_case=True)
lines = json.load(sys.stdin)
json.dump([tokenizer.convert_tokens_to_ids(tokenizer.tokenize(line)) for line in lines], sys.stdout)
"""


def check_reference_dir(folder: Path) -> Path:
    for name in ("create_pretraining_data.py", "tokenization.py"):
        if not (folder / name).is_file():
            raise SystemExit(f"{folder}: no {name}; give the folder of the reference scripts (a checkout of "
                             "google-research/bert, or mlcommons/training's bert cleanup_scripts)")
    return folder


def _environment() -> dict[str, str]:
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}


def run_reference(script_dir: Path, text: Path, vocab: Path, output: Path, max_seq_length: int,
                  max_predictions: int, dupe_factor: int, seed: int = 12345) -> tuple[float, float]:
    """Runs the script on one text file; returns the (CPU, wall) seconds of its main (TensorFlow's import
    excluded)."""
    flags = [f"--input_file={text}", f"--output_file={output}", f"--vocab_file={vocab}", "--do_lower_case=True",
             f"--max_seq_length={max_seq_length}", f"--max_predictions_per_seq={max_predictions}",
             "--masked_lm_prob=0.15", "--short_seq_prob=0.1", f"--random_seed={seed}",
             f"--dupe_factor={dupe_factor}"]
    done = subprocess.run([sys.executable, "-c", _RUN, str(script_dir), *flags], capture_output=True, text=True,
                          env=_environment())
    timing = [line for line in done.stderr.splitlines() if line.startswith("reference_seconds")]
    if done.returncode or not timing:
        raise SystemExit(f"the reference script failed:\n{done.stderr[-3000:]}")
    fields = dict(field.split("=") for field in timing[-1].split()[1:])
    return float(fields["cpu"]), float(fields["wall"])


def reference_token_ids(script_dir: Path, vocab: Path, lines: list[str]) -> list[list[int]]:
    """The reference FullTokenizer(do_lower_case=True)'s ids of each line."""
    done = subprocess.run([sys.executable, "-c", _TOKENIZE, str(script_dir), str(vocab)], input=json.dumps(lines),
                          capture_output=True, text=True, env=_environment())
    if done.returncode:
        raise SystemExit(f"the reference tokenizer failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)

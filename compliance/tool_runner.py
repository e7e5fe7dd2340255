"""The official mlperf-logging tools, run inside one process of their own (`python -m compliance.tool_runner
REQUEST RESULT`, started by compliance.tool_runs), each as its own command line runs it, with what each one said
and decided recorded along the way.

Each tool is called through the function its `python -m` entry point calls, after the same logging set-up:
the compliance checker (`mlp_compliance.main` on one log), the RCP checker (`check_directory`, pruned RCPs), the
package checker (`check_training_package`) and the result summarizer (its `main`, with the arguments of its command
line). Starting them in one process instead of one each saves a Python start and the imports of scipy and
pandas per tool. While the package checker runs, the functions it calls for each log (the compliance checker),
each system JSON (the system description checker) and each results folder (the RCP checker) are wrapped so that
their verdicts and output are recorded, per file; the wrappers return what the tools return and re-raise what
they raise, so the package checker decides exactly as it does alone.

Only files that compliance.staging wrote reach this process: copies of what the harness read and judged. It imports
nothing but the standard library and mlperf_logging, and writes into its working folder (the tools' own logs and
the summarizer's tables) and, as the package checker does, scaling.json beside the staged logs. One line per
finished step goes to stdout (`done`), for the caller's progress bar.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import sys
import traceback
from pathlib import Path

USAGE = "training"
FORMAT = "%(levelname)s - %(message)s"  # the tools' own format


class Capture:
    """Everything the tools print (stdout, stderr, their logging), in order, in one buffer."""

    def __init__(self) -> None:
        self.buffer = io.StringIO()

    def mark(self) -> int:
        return self.buffer.tell()

    def since(self, mark: int) -> str:
        return self.buffer.getvalue()[mark:]

    @contextlib.contextmanager
    def tool_logging(self, level: int | None):
        """Root logging as the tools' entry points set it (INFO, their format, to this buffer); with level None as
        a tool that sets nothing finds it (Python's default: warnings and errors, the bare message)."""
        root = logging.getLogger()
        for handler in root.handlers[:]:
            root.removeHandler(handler)
        handler = logging.StreamHandler(self.buffer)
        if level is not None:
            handler.setFormatter(logging.Formatter(FORMAT))
        root.addHandler(handler)
        root.setLevel(level if level is not None else logging.WARNING)
        with contextlib.redirect_stdout(self.buffer), contextlib.redirect_stderr(self.buffer):
            try:
                yield
            finally:
                root.removeHandler(handler)


def _failure(capture: Capture) -> None:
    """A tool raised: its traceback goes where a command line shows it."""
    capture.buffer.write(traceback.format_exc())


def compliance_log(path: str, ruleset: str) -> dict:
    """`python -m mlperf_logging.compliance_checker --usage training --ruleset R LOG`: its verdict and output."""
    from mlperf_logging.compliance_checker import mlp_compliance

    capture = Capture()
    valid = False
    with capture.tool_logging(logging.INFO):
        try:
            checker = mlp_compliance.make_checker(USAGE, ruleset, False, False)
            valid, *_ = mlp_compliance.main(path, f"{USAGE}_{ruleset}/common.yaml", checker)
            logging.info("SUCCESS") if valid else logging.error("FAILED")
        except Exception:
            _failure(capture)
            valid = False
        finally:
            mlp_compliance.enqueued_configs.clear()  # alone in its process, a failed check leaves nothing behind
    return {"passed": bool(valid), "output": capture.since(0)}


def rcp_folder(folder: str, ruleset: str) -> dict:
    """`python -m mlperf_logging.rcp_checker DIR --rcp_usage training --rcp_version R`: its verdict and output."""
    from mlperf_logging.rcp_checker import rcp_checker

    capture = Capture()
    passed = False
    with capture.tool_logging(logging.INFO):
        try:
            passed, message, _ = rcp_checker.check_directory(folder, USAGE, ruleset, False, False,
                                                              rcp_pass="pruned_rcps")
            if passed:
                logging.info("%s, RCP test PASSED", message)
            else:
                logging.error("%s, RCP test FAILED, consider adding --rcp_bypass in when running the package_checker.",
                              message)
        except Exception:
            _failure(capture)
            passed = False
    return {"passed": bool(passed), "output": capture.since(0)}


@contextlib.contextmanager
def _recorded(module, name: str, capture: Capture, into: dict, key):
    """`module.name` wrapped while the block runs: after each call, into[key(args)] = its verdict (the first item
    of what it returns) and what it printed meanwhile; the wrapper returns or raises as the original does."""
    original = getattr(module, name)

    def wrapper(*args, **kwargs):
        mark = capture.mark()
        try:
            result = original(*args, **kwargs)
        except BaseException:
            into[key(args)] = {"passed": False, "output": capture.since(mark) + traceback.format_exc()}
            raise
        into[key(args)] = {"passed": bool(result[0]), "output": capture.since(mark)}
        return result
    setattr(module, name, wrapper)
    try:
        yield
    finally:
        setattr(module, name, original)


def package_system(org: str, ruleset: str) -> dict:
    """`python -m mlperf_logging.package_checker ORG training R` on a package of one system, with the verdict and
    output of each log's compliance check, of the system JSON's check and of the RCP check it ran, and the
    scaling.json it wrote."""
    from mlperf_logging.compliance_checker import mlp_compliance
    from mlperf_logging.package_checker import package_checker
    from mlperf_logging.rcp_checker import rcp_checker
    from mlperf_logging.system_desc_checker import system_desc_checker

    capture = Capture()
    logs: dict = {}
    checks: dict = {}  # the system JSON's and the results folder's (one each: the package holds one system)
    with capture.tool_logging(logging.INFO), \
            _recorded(mlp_compliance, "main", capture, logs, lambda args: os.path.basename(args[0])), \
            _recorded(system_desc_checker, "check_system_desc", capture, checks, lambda args: "system"), \
            _recorded(rcp_checker, "check_directory", capture, checks, lambda args: "rcp"):
        try:
            package_checker.check_training_package(org, USAGE, ruleset, False, False, False, False, False,
                                                   "package_checker.log")
        except Exception:
            _failure(capture)
        mlp_compliance.enqueued_configs.clear()
    written = {str(p.relative_to(org)): p.read_text() for p in sorted(Path(org).glob("results/*/*/scaling.json"))}
    return {"logs": logs, "system": checks.get("system"), "rcp": checks.get("rcp"), "output": capture.since(0),
            "written": written}


def summarize(org: str, ruleset: str, workdir: Path) -> dict:
    """`python -m mlperf_logging.result_summarizer ORG training R --csv summary.csv` in `workdir`: its output and
    the records of summary_detailed.json."""
    from mlperf_logging.compliance_checker import mlp_compliance
    from mlperf_logging.result_summarizer import result_summarizer

    capture = Capture()
    workdir.mkdir(parents=True, exist_ok=True)
    here, argv = os.getcwd(), sys.argv
    os.chdir(workdir)
    sys.argv = ["mlperf_logging.result_summarizer", org, USAGE, ruleset, "--csv", "summary.csv"]
    with capture.tool_logging(None):
        try:
            result_summarizer.main()
        except SystemExit:
            pass
        except Exception:
            _failure(capture)
        finally:
            mlp_compliance.enqueued_configs.clear()
            sys.argv = argv
            os.chdir(here)
    detailed = workdir / "summary_detailed.json"
    records = json.loads(detailed.read_text()) if detailed.is_file() else []
    return {"output": capture.since(0), "records": records}


def run(request: dict) -> dict:
    ruleset = request["ruleset"]
    result: dict = {"logs": {}, "rcp": {}, "systems": {}}
    for path in request.get("logs", []):
        result["logs"][path] = compliance_log(path, ruleset)
        print("done", flush=True)
    for folder in request.get("rcp_folders", []):
        result["rcp"][folder] = rcp_folder(folder, ruleset)
    for index, system in enumerate(request.get("systems", [])):
        found = package_system(system["org"], ruleset) if system["package"] else {}
        if system["summarize"]:
            found["summary"] = summarize(system["org"], ruleset, Path(f"summary-{index}").resolve())
        result["systems"][system["org"]] = found
        print("done", flush=True)
    return result


def main(argv: list[str]) -> None:
    request_file, result_file = argv
    result = run(json.loads(Path(request_file).read_text()))
    Path(result_file).write_text(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])

"""The submitter's last mile over the official mlperf-logging tools: result logs parsed once (result_log),
plain-words checks before the tools (precheck), the tools with their real verdict (checkers, check), the
submission tree (package), its score (score) and a report (report, plots, render)."""

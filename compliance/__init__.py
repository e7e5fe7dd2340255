"""The submitter's last mile over the official mlperf-logging tools: every file of a submission read by one reader
(files; result logs parsed once in result_log), plain-words checks before the tools (precheck), the judgement of
what the logs say (judgement) and of whether a package holds what ran (provenance), the tools with their real
verdict (checkers, check), the submission tree (package), its score (score) and a report (report, plots, render)."""

"""The submitter's last mile over the official mlperf-logging tools: the harness's own rules, the tools with their
real verdict, and the commands that show it. Where each job lives (each module's docstring says more):

The rules, by what they read (each says what it finds as a compliance.findings.Finding):
    log_rules       one result log: the plain-words checks the tools do badly or crash on (a malformed line, the
                    division, the fields) and whether it is the record of a genuine run (its values, one run, its
                    work inside the clock, time taken, a success its evals back)
    folder_rules    the runs of one folder together: how many, one configuration, the reference convergence
                    points, which runs count under olympic scoring, copies within the folder, the runs against a
                    descriptor
    package_rules   a whole package: its layout, each system JSON as the tools read it, copies across its systems,
                    the hardware its logs state or print against their system JSON, the least time that hardware
                    allows
    provenance      a package this harness made: every part present (targets, code, descriptor) and agreeing with
                    the logs; the package's folder against its submitter
  and what they measure with: copies (whether two runs are one), hardware (the least time a run takes on a
  machine), software (the system description's software fields from what the runs logged).

Reading what a submitter hands over: files (every file read by one reader, nothing that hangs or is too large),
result_log (a result log parsed once), staging (the copies the tools get, and the log values that must not become
a file name); targets (what PATH holds: a log, a folder, a submission, a results repository).

The official tools: checkers (each tool's command line and its verdict; the RCP reference points), tool_runs (the
tools on staged copies, in processes of their own), tool_runner (that process), tool_cache (each tool run once
on the same files).

The verdict and the commands: verdict (a row per log, the findings, the tools' lines, whether it passes), check,
score, package, report, review, run_summary (`log summary`); render and overview print them, plots draws the
figures, output_folder replaces an output folder in one step, errors are the one-line errors of the commands.
"""

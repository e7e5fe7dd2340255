"""The MLPerf BERT trainer, in floors that import only downwards (tests/test_layering.py holds the table): the
foundation (typed settings, safe file reads, what the harness owns, signals, MLPerf's rules and RCPs); the
components, each with its settings beside it (model, optim, data, distributed, prep, and the step's, eval's,
search's and simulator's settings); the descriptor, which composes them (system, its files, the closed division's
rules, the reference's hyperparameters); what reads the whole descriptor (launch, simulate, mllog, the step and its
compile warm-up, the eval, the checkpoint); the loop (train, hpo); the command line (cli) on top, beside
compliance."""

"""The MLPerf BERT trainer, in floors that import only downwards: the descriptor and the model's names and
config at the bottom (system, config, tf_names, typed_config, mlperf_rules); the model, the training input path
(data), the optimizers (optim), data parallelism (distributed) and the log (mllog) above them; the step, the
eval and the run loop (step, eval, train) above those; offline preparation (prep), the simulators (simulate),
the hyperparameter search (hpo) and the command line (cli) on top."""

"""What the benchmarks, the acceptance check of a GPU machine and the tests share: ranks on this host (ranks),
timing on a device (timing) and where its time goes (profiling), the results file (results_file), data made for a
measurement (data), the compiled LAMB update held to the eager one (lamb_pair), the peers (transformers_peer,
reference_peer) and the guard against host synchronisation (host_sync). None of it ships in the `bert` package."""

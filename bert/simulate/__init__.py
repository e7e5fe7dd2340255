"""Models of what this harness runs, from a descriptor: time to train (time_to_train), the load balance of each
run.balance strategy (load_balance) and the model FLOPs per sequence (flops)."""

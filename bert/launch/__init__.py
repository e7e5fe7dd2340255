"""From a descriptor to started ranks, before any rank runs: the launch plan and the dry run (plan), a Slurm
allocation against the descriptor (slurm), the pre-flight of every node (preflight: what each node finds,
node_facts; how the nodes report to node 0, rendezvous), what the first rank would refuse (readiness), and the
torchrun wrapper the plan starts (torchrun). What runs inside the ranks is bert.distributed."""

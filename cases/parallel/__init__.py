"""The `parallel.*` catalogue IDs, one module each: data parallelism (notes 000/001 "Multi-GPU",
002 "多GPU训练", 004 "DISTRIBUTED DATA PARALLEL").

What runs where: the multi-process parts (DDP training, the all-reduce algorithms over a process
group) run in `cases._launch.dist_worker` under torchrun. What the ranks run sits in `cases/_lib`
(`data_parallel`: the model, data, truth and bounds; `collectives`: the all-reduce algorithms and
their α–β model), so the worker imports no case; which launches are made, with which arguments, is
`cases/_launch/dist_launches`. Each module here holds one case: its declaration, its in-process checks
(run by the generic tests) and the judges that turn its launched runs' rank files into findings
and benchmark rows (`launched_*`, called by `suite/test_distributed.py`;
`cases/_launch/launched_training` reads the training runs two cases share).
"""

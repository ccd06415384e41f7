"""What launches processes for the cases (not cases themselves): the distributed workers that
torchrun or mp.spawn starts (`dist_worker`, and `dist_launch_worker` for the notes' own launcher),
the launches a run makes of them and the record a launched point keeps (`dist_launches`), the
launcher's guarantees under faults (`launch_faults`), the launched training runs' rank files read
(`launched_training`), and a case function run in a fresh interpreter (`isolated`). Every process
is started through `harness.run.launch`; what the ranks compute (the techniques) sits in
`cases/_lib`."""

"""Distributed training's plumbing (notes 000/001 "Multi-GPU", 003 "多GPU并行训练", 004 "DDP"): the
process group's set-up (`setup`) and DistributedSampler (`sampler`)."""

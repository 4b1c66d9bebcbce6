"""Multi-GPU tasks (`multi_gpu: true`): a case runs `world_size` ranks, one per GPU, joined
in a process group (torch.distributed: NCCL on GPUs, gloo on the CPU).

group: the judge's own rank processes (`RankGroup`), trusted, joined in a group of their
own: the task's reference runs there, since it calls collectives itself (its `ref_kernel`
reduce-scatters, its `check_implementation` calls `ref_kernel`). reference_rank: the
process of one of them.
"""

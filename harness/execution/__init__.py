"""Where evaluations run: below both the commands (harness/frontends) and the contest
server (harness/server), which start every evaluation through it and import nothing of
each other for it.

- `protocol`: the contract: a `JudgeRequest` in, `Judged` or `Unjudged` out;
- `in_process`: the evaluation in this process (`submit`, `compare`, every judge process);
- `judge_process`: one evaluation in its own judge process (a request as JSON on standard
  input, its answer back), and stopping every such process this one runs;
- `backends`: where a batch's evaluations run (the local GPUs or CPU slots, or Ray);
- `stopping`: SIGTERM as an ordinary exit, so that a stopped process ends its worker and
  removes its folders.
"""

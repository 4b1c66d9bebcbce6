#!/usr/bin/env bash
# (CPU machine, 2 cores; before: git worktree add /tmp/wt_before 8289009~1) process walls, s
# alternate: the commit before exit_now (/tmp/wt_before) and HEAD, test mode, CPU
for i in 1 2 3 4 5 6; do
  for side in before after; do
    dir=/work/main; [ $side = before ] && dir=/tmp/wt_before
    s=$(date +%s.%N)
    (cd $dir && python runner.py submit submissions/vectoradd/add_torch.py --task vectoradd --mode test --device cpu --no-record > /dev/null 2>&1)
    echo "$side $(python -c "import time;print(round(time.time()-$s,3))")"
  done
done

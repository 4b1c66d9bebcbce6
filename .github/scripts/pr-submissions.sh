#!/usr/bin/env bash
# Take a pull request's new submission files into this checkout (the BASE branch's), so that
# the base branch's harness and tasks judge them, never the pull request's own.
#   .github/scripts/pr-submissions.sh BASE_SHA HEAD_SHA > added.txt
# Both commits must be fetched. Refuses (exit 1, the reason on stderr) a pull request that
# changes anything but adding .py files under submissions/: a judge edited beside a
# submission would otherwise judge it. Prints the added files' paths, one a line.
set -euo pipefail
base=$1 head=$2
refused=0
while IFS=$'\t' read -r status path rest; do
  [ -n "$status" ] || continue
  if [ "$status" != "A" ] || [[ "$path" != submissions/*.py ]] || [[ "$path" == *..* ]]; then
    echo "refused: this pull request changes $path ($status); a submission pull request may only add .py files under submissions/" >&2
    refused=1
  fi
done < <(git diff --name-status --no-renames "$base...$head")
if [ "$refused" -ne 0 ]; then
  echo "Open a separate pull request for changes to the harness, tasks or other files: submissions are judged by the base branch's harness." >&2
  exit 1
fi
git diff --name-only --diff-filter=A --no-renames "$base...$head" -- 'submissions/**.py' |
while read -r path; do
  mkdir -p "$(dirname "$path")"
  git show "$head:$path" > "$path"  # the file's content only: nothing else of the pull request
  echo "$path"
done

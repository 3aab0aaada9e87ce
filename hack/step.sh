#!/usr/bin/env bash
# Runs one step of `make test` (or of CI) and says how long it took, so a
# slow run names its slow step in the log:
#
#   hack/step.sh NAME COMMAND [ARGS...]
#
# prints "==> NAME" before and "<== NAME: 93s" (or "... failed (exit 2)")
# after, and exits with the command's status. When STEP_LOG names a file,
# "NAME<TAB>SECONDS<TAB>STATUS" is appended to it: .ci/run prints it as a
# table at the end.
set -uo pipefail
if [[ $# -lt 2 ]]; then
	echo "usage: hack/step.sh NAME COMMAND [ARGS...]" >&2
	exit 2
fi
name=$1
shift
echo "==> $name"
start=$SECONDS
"$@"
rc=$?
took=$((SECONDS - start))
if [[ $rc -eq 0 ]]; then
	echo "<== $name: ${took}s"
else
	echo "<== $name: failed (exit $rc) after ${took}s"
fi
if [[ -n ${STEP_LOG:-} ]]; then
	printf '%s\t%s\t%s\n' "$name" "$took" "$rc" >>"$STEP_LOG"
fi
exit $rc

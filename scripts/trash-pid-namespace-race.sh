#!/bin/sh
# Deletes in this pid namespace while a store in a new pid namespace
# (unshare, needs root) opens the same root in a loop (each open sweeps
# the trash). Usage: race.sh <dsh-persist binary>
B=$1; D=$(mktemp -d); mkdir -m 700 "$D/root"
python3 - "$D/root" <<'PY'
import os, sys
R = sys.argv[1]
for i in range(6):
    d = f'{R}/--srv-x--/s{i}'
    os.makedirs(f'{d}/bulk')
    open(f'{d}/session.jsonl', 'w').write('{"type":"session","version":0,"id":"s%d","createdAt":1,"cwd":"/srv/x","delegationDepth":0}\n' % i)
    for j in range(60000):
        open(f'{d}/bulk/f{j}', 'w').close()
PY
unshare -pf --mount-proc sh -c "while [ ! -e $D/stop ]; do $B list --jsonl-raw $D/root -q > /dev/null 2>&1; done" &
sleep 0.5
for i in 0 1 2 3 4 5; do $B delete --jsonl-raw "$D/root" -y -q s$i 2>&1 | tail -1; done
touch "$D/stop"; wait; rm -rf "$D"

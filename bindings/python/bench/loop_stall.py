"""Benchmark, not a test (issue 18): the longest asyncio loop stall while a
host works through dsh_persist.aio, measured by a 1 ms ticker.

    python bench/loop_stall.py [jsonl|jsonl-none|sqlite]

Prints the longest gap between ticks beyond the 1 ms period (goal <= 5 ms)
for 200 append+flush cycles and a 100k-event load, and for comparison the
same work through the synchronous calls on the loop.
"""

import asyncio
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from dsh_persist.aio import AsyncStore  # noqa: E402
from conv import complete_turn  # noqa: E402


def config(kind, d):
    return {
        "jsonl": {"backend": "jsonl", "root": os.path.join(d, "root")},
        "jsonl-none": {"backend": "jsonl", "root": os.path.join(d, "root"), "compression": "none"},
        "sqlite": {"backend": "sqlite", "path": os.path.join(d, "s.db")},
    }[kind]


async def stall(work):
    worst = 0.0
    stop = False

    async def ticker():
        nonlocal worst
        last = time.perf_counter()
        while not stop:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            worst = max(worst, (now - last) * 1000 - 1)
            last = now

    t = asyncio.create_task(ticker())
    await asyncio.sleep(0.005)
    await work()
    await asyncio.sleep(0.003)
    stop = True
    await t
    return max(0.0, worst)


async def main(kind):
    d = tempfile.mkdtemp(prefix="dsh-stall-")
    try:
        async with AsyncStore.open(config(kind, d)) as store:
            big = await store.start({"id": "big"})
            turn, n = 1, 0
            while n < 100_000:
                n = complete_turn(big.sync, turn) + 1
                turn += 1
            await big.close()
            count = len((await store.inspect("big"))["events"])
            s = await store.start({"id": "cycles"})

            async def cycles(flush, first):
                for i in range(first, first + 200):
                    s.append("turn/start", {"turn": i + 1})
                    s.append("turn/end", {"turn": i + 1, "reason": {"kind": "completed"}})
                    await flush()

            async def sync_flush():
                s.sync.flush()
                await asyncio.sleep(0)

            async def sync_load():
                store.sync.load("big")

            rows = [
                ("200 x append+flush (await)", await stall(lambda: cycles(s.flush, 0))),
                (f"load_raw of {count} events (await)", await stall(lambda: store.load_raw("big"))),
                # json.loads of the whole log is one C call that holds the GIL.
                (f"load of {count} events (await)", await stall(lambda: store.load("big"))),
                ("200 x append+flush (sync)", await stall(lambda: cycles(sync_flush, 200))),
                (f"load of {count} events (sync)", await stall(sync_load)),
            ]
            await s.close()
        print(f"backend {kind}: longest asyncio loop stall (1 ms ticker; goal <= 5 ms for the awaitables)")
        for what, ms in rows:
            print(f"  {what:34} {ms:.1f} ms")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "jsonl"))

"""Shared body of the fake nccl-tests binaries: print a recorded log instead of measuring.

Environment:
  FAKE_NCCL_TESTS_ARGS  append each call's arguments (one JSON list per line) to this file
  FAKE_NCCL_TESTS_FAIL  fail like nccl-tests on a machine without GPUs
"""

import json
import os
import shutil
import sys
from pathlib import Path

LOGS = Path(__file__).resolve().parent.parent / "logs"
JSON_CAPABLE = {"all_reduce"}  # only this fake offers -J, like an older build for the others

USAGE = """USAGE: {name}
\t[-t,--nthreads <num threads>]
\t[-g,--ngpus <gpus per thread>]
\t[-b,--minbytes <min size in bytes>]
\t[-e,--maxbytes <max size in bytes>]
\t[-f,--stepfactor <increment factor>]
\t[-c,--check <check iteration count>]
{json}\t[-h,--help]
"""


def main(collective: str, args: list[str]) -> int:
    record = os.environ.get("FAKE_NCCL_TESTS_ARGS")
    if record:
        with open(record, "a", encoding="utf-8") as f:
            f.write(json.dumps([collective, *args]) + "\n")
    if "--help" in args or "-h" in args:
        json_line = "\t[-J,--output_file <output file>]\n" if collective in JSON_CAPABLE else ""
        print(USAGE.format(name=f"{collective}_perf", json=json_line), end="")
        return 0
    if os.environ.get("FAKE_NCCL_TESTS_FAIL"):
        print("# nThread 1 nGpus 2 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5")
        print("fake-host: Test CUDA failure common.cu:1029 'no CUDA-capable device is detected'")
        print(" .. fake-host pid 4242: Test failure common.cu:1158")
        return 2
    sys.stdout.write((LOGS / f"{collective}.txt").read_text(encoding="utf-8"))
    if "-J" in args:
        shutil.copyfile(LOGS / f"{collective}.json", args[args.index("-J") + 1])
    return 0

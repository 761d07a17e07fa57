"""What parked replies cost a serving process: its memory growth against the JSON posted.

A real ``modelwire serve`` process (the default in-process store, ``--confirm-tools``) is
sent N conversations of about 1 MiB each (a user message of words drawn from a 3,000-word
vocabulary: text, not a repeated phrase that would compress to nothing); each reply calls
a tool that waits for the user's confirmation, so every reply parks and its stream lingers.
The baseline is the JSON posted, in the same run: the target is a growth of the process's
resident memory (``VmRSS``) of at most 1.5x it (60 replies: at most about 100 MB).
Every reply's stream is checked: it asks for the confirmation and gives a resume token.

    python benchmarks/serve_memory.py              # 60 conversations of ~1 MiB
    python benchmarks/serve_memory.py --check      # 3 of them, what CI runs
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import time

import httpx2 as httpx

from modelwire.testing import ProviderServer, sse_reply
from modelwire.testing.sse import body

TARGET = 1.5


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def _conversation(n: int) -> bytes:
    rnd = random.Random(n)
    vocabulary = [
        "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 9))) for _ in range(3000)
    ]
    text = " ".join(rnd.choice(vocabulary) for _ in range(200_000))[: 1024 * 1024]
    return json.dumps(
        {"messages": [{"role": "user", "name": "user", "content": [{"type": "text", "text": text}]}]}
    ).encode()


def run(count: int) -> tuple[int, int]:
    """(bytes of JSON posted, bytes the process grew by)."""
    with ProviderServer() as provider:
        provider.keep_requests = False
        provider.respond = lambda request: sse_reply(
            body("anthropic", ("tool", "toolu_1", "calculate", '{"expression": "6 * 7"}'), usage=(20, 9))
        )
        port = _free_port()
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env["ANTHROPIC_API_KEY"] = "sk-test"
        cmd = [
            sys.executable,
            "-m",
            "modelwire.cli",
            "serve",
            "--port",
            str(port),
            "--model",
            "anthropic:claude-sonnet-4-5",
            "--base-url",
            provider.url,
            "--tool",
            "modelwire.demo:calculate",
            "--confirm-tools",
        ]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise RuntimeError("modelwire serve did not start") from None
                    time.sleep(0.05)
            url = f"http://127.0.0.1:{port}/reply"
            with httpx.Client(timeout=120) as client:
                client.post(url, json={"input": "warm up"})  # imports and first-use costs before the baseline
                before = _rss(proc.pid)
                posted = 0
                for n in range(count):
                    data = _conversation(n)
                    posted += len(data)
                    answer = client.post(url, content=data, headers={"content-type": "application/json"})
                    if (
                        answer.status_code != 200
                        or b"REQUIRE_USER_CONFIRM" not in answer.content
                        or b"resume_token" not in answer.content
                    ):
                        raise AssertionError(f"reply {n} did not park: {answer.status_code} {answer.content[-300:]!r}")
                time.sleep(0.5)
                grown = _rss(proc.pid) - before
        finally:
            proc.terminate()
            proc.wait(10)
    return posted, grown


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replies", type=int, default=60)
    parser.add_argument("--check", action="store_true", help="3 replies: the checks, not the figure")
    args = parser.parse_args()
    posted, grown = run(3 if args.check else args.replies)
    ratio = grown / posted
    print(
        (
            f"{posted / 2**20:.1f} MiB of JSON posted in {3 if args.check else args.replies} parked "
            f"replies; the process grew {grown / 2**20:.1f} MiB: {ratio:.2f}x (target {TARGET}x)"
        )
    )
    if args.check:
        print("checked: every reply parked and gave a resume token")
        return 0
    if ratio > TARGET:
        print(f"MISSED: {ratio:.2f}x is over {TARGET}x by {ratio - TARGET:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

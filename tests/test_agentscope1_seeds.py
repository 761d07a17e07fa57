"""The AgentScope 1.x examples of the seed documents (``003_*``: messages, blocks, ``to_dict``
/ ``from_dict``; ``004_*`` describes the same classes in prose and has no code) run as written
under AgentScope 1.0.21 in its own environment, and print what the seed prints, both as they
are and with every message read by modelwire and written back between one example and the
next. None of them calls a model."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import agentscope1_env

ROOT = Path(__file__).resolve().parents[1]
SEEDS = next((p / "shared" / "seeds" for p in ROOT.parents if (p / "shared" / "seeds").is_dir()), None)
pytestmark = pytest.mark.skipif(SEEDS is None, reason="the seed documents are in ../shared/seeds")
STARTS = re.compile(r"^(from \w|import \w|print\(|[A-Za-z_][\w.]* = )")


def _seed(prefix: str) -> str:
    (path,) = SEEDS.glob(f"{prefix}_*.txt")  # type: ignore[union-attr]
    return path.read_text(encoding="utf-8")


def _compiles(lines: list[str]) -> bool:
    try:
        compile("\n".join(lines), "<seed>", "exec")
    except SyntaxError:
        return False
    return True


def examples(text: str) -> list[tuple[str, str]]:
    """The seed's code blocks, each with the text after it up to the next block: a block is a
    run of lines that starts like a statement and compiles, blank lines inside it included."""
    lines = text.splitlines()
    out: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(lines):
        if not STARTS.match(lines[i]):
            if out:
                out[-1][1].append(lines[i])
            i += 1
            continue
        block, i = _block(lines, i)
        out.append(("\n".join(block), []))
    return [(code, "\n".join(after)) for code, after in out]


def _block(lines: list[str], i: int) -> tuple[list[str], int]:
    block = [lines[i]]
    i += 1
    while i < len(lines):
        if _compiles(block):
            nxt = next((j for j in range(i, len(lines)) if lines[j].strip()), len(lines))
            if nxt == len(lines) or not (STARTS.match(lines[nxt]) or lines[nxt].startswith((" ", ")", "]"))):
                return block, i
        block.append(lines[i])
        i += 1
    return block, i


def _printed(expected_after: str, printed: str) -> list[str]:
    """The lines the seed shows after a block that the block printed (its first len(printed)
    non-blank lines), with the values that differ per run (a message's id and time) masked."""
    want = [line for line in printed.splitlines() if line.strip()]
    seed = [line for line in expected_after.splitlines() if line.strip()][: len(want)]
    # The seed was printed by an AgentScope 1.x before 1.0.16, whose Msg kept a missing
    # metadata as None; 1.0.16 made it {} (message/_message_base.py: ``metadata or {}``).
    seed = [line.replace('"metadata": null', '"metadata": {}') for line in seed]
    return [_masked(line) for line in seed], [_masked(line) for line in want]


def _masked(line: str) -> str:
    line = re.sub(r'("id": )"[^"]+"', r'\1"<id>"', line)
    return re.sub(r'("timestamp": )"[^"]+"', r'\1"<time>"', line).rstrip()


@pytest.mark.parametrize("through_modelwire", [False, True])
def test_the_seed_s_1x_examples_print_what_the_seed_prints(through_modelwire):
    blocks = examples(_seed("003"))
    codes = [code for code, _ in blocks]
    assert any("Msg.from_dict(serialized_msg)" in code for code in codes)
    assert sum("print(" in code for code in codes) >= 3
    printed = agentscope1_env.run("seed_examples.py", {"blocks": codes, "through_modelwire": through_modelwire})
    compared = 0
    for (code, after), out in zip(blocks, printed):
        if out:
            seed_lines, our_lines = _printed(after, out)
            assert our_lines == seed_lines, code
            compared += len(our_lines)
    assert compared > 30

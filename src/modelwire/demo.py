"""``modelwire demo``: a small agent with a real tool, replaying a recorded conversation.

It needs no API key and no network: the model's side comes from a cassette the project
recorded (``cassettes/demo/calculator.json``, shipped in the package), played through the
same transport hook as any cassette. The calculator really runs, and its output must match
what was recorded, or the replay stops with a mismatch.
"""

from __future__ import annotations

import ast
import operator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from .agent import Agent

_OPS: dict[type[ast.AST], Callable[..., Any]] = {  # operator's functions: Any in, Any out
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}

DEMO_MODEL = "anthropic:claude-sonnet-4-5"
DEMO_BASE_URL = "http://127.0.0.1:8765"  # where the recording's provider server listened
DEMO_QUESTION = "What is (1234 * 5678) + 42?"
DEMO_SYSTEM = "You are a careful assistant. Use the calculator for arithmetic."


def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression: numbers, + - * / ** and parentheses.

    Args:
        expression: the expression, for example "(2 + 3) * 4"
    """

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            right = ev(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > 100:
                raise ValueError("exponent too large")
            result: float = _OPS[type(node.op)](ev(node.left), right)
            return result
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            signed: float = _OPS[type(node.op)](ev(node.operand))
            return signed
        raise ValueError(f"unsupported expression element: {type(node).__name__}")

    value = ev(ast.parse(expression, mode="eval").body)
    return str(int(value)) if float(value).is_integer() else repr(value)


def demo_cassette() -> Path:
    """The demo recording: in the installed package, or in the repository's cassettes/."""
    packaged = Path(__file__).parent / "_data" / "demo.json"
    if packaged.is_file():
        return packaged
    return Path(__file__).resolve().parents[2] / "cassettes" / "demo" / "calculator.json"


def demo_agent() -> Agent:
    from .agent import Agent
    from .models import load_model

    model = load_model(
        DEMO_MODEL, api_key="replay-key-not-secret", base_url=DEMO_BASE_URL, max_tokens=2048, thinking_budget=1024
    )
    return Agent("Calc", model, DEMO_SYSTEM, tools=[calculate], max_iters=4)


def run_demo(out: IO[str], view: str = "pretty", record: bool = False) -> int:
    import asyncio

    from ._render import renderer
    from .cassettes import use_cassette
    from .message import UserMsg

    import sys

    path = demo_cassette()
    if not record:
        # With --events / --json the header goes to stderr, so stdout stays machine-readable.
        head = out if view == "pretty" else sys.stderr
        head.write(f"modelwire demo: a REPLAY of a recorded conversation ({path.name}), no API key, no network.\n")
        head.write("The calculator tool really runs; the model's words come from the recording.\n\n")
        head.write(f"you> {DEMO_QUESTION}\n")
    agent = demo_agent()
    render = renderer(view, out)

    async def go() -> None:
        async for event in agent.reply_stream(UserMsg("user", DEMO_QUESTION), raise_errors=False):
            render(event)
        render.close()

    with use_cassette(path, "all" if record else "none", notes=RECORDING_NOTES, timing=record):
        asyncio.run(go())
    if not record and view == "pretty":
        out.write(
            "\nTo run it for real: export ANTHROPIC_API_KEY=...  (or OPENAI_API_KEY=...)\n"
            f'  modelwire chat --model {DEMO_MODEL} --tool modelwire.demo:calculate "{DEMO_QUESTION}"\n'
        )
    return 0


RECORDING_NOTES = (
    "Recorded by cassettes/record.py through modelwire.cassettes (record_mode='all') against "
    "modelwire.testing.ProviderServer on 127.0.0.1:8765, which answered with Anthropic Messages "
    "SSE bodies written by hand from the documented wire format (no real API is reachable where "
    "it was made). The requests are the demo agent's own, calculator result included."
)

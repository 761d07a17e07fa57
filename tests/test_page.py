"""The chat page, driven in headless Chromium (Debian's ``chromium``, through Playwright's
driver) against ``modelwire serve`` and ``EventStreamApp`` on 127.0.0.1.

- ``modelwire serve`` with no model replays the demo recording: the page, used from the
  keyboard, shows the reply text and the calculator's result, the same as Python folds
  from the same replay; a screenshot is saved as a test artefact.
- The stop button ends a reply and the provider connection is closed.
- A tool needing confirmation shows Allow / Deny; allowing it runs the tool, whose image
  result is shown; thinking stays collapsed; usage is shown at the end.

Screenshots go to ``$MODELWIRE_ARTIFACTS`` (default ``test-artifacts/``)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from modelwire.agent import Tool
from modelwire.message import DataBlock, UserMsg
from modelwire.testing import ProviderServer, sse_reply
from modelwire.testing.sse import body

from test_serve import Served, agent_app

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="the page tests drive Chromium with playwright (dev extra)"
)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="needs Chromium (apt-get install chromium; .ci/run installs it)"
)
ARTIFACTS = Path(os.environ.get("MODELWIRE_ARTIFACTS", Path(__file__).resolve().parents[1] / "test-artifacts"))


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def opened(page, url: str) -> None:
    """``url`` loaded and the chat ready to use: the page keeps its form disabled until it has
    its settings and its handlers (a key pressed before would be lost)."""
    page.goto(url)
    page.wait_for_selector("#input:enabled", timeout=60000)


class ServeProcess:
    """``modelwire serve`` in a subprocess, as a user starts it."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        clean = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "MODELWIRE_MODEL"}
        cmd = [sys.executable, "-m", "modelwire.cli", "serve", "--port", str(self.port), *args]
        self.proc = subprocess.Popen(
            cmd, env={**clean, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def __enter__(self) -> str:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return f"http://127.0.0.1:{self.port}/"
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(
                        (
                            "modelwire serve did not start: "
                            f"{self.proc.stderr.read() if self.proc.poll() is not None else 'timeout'}"
                        )
                    )
                time.sleep(0.05)

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def demo_reply_in_python():
    """The demo replay folded by Python, as ``modelwire serve`` without a model serves it."""
    from modelwire.cassettes import use_cassette
    from modelwire.demo import DEMO_QUESTION, demo_agent, demo_cassette

    def run():
        agent = demo_agent()
        with use_cassette(demo_cassette(), "none"):
            return asyncio.run(agent.reply(UserMsg("user", DEMO_QUESTION)))

    # Playwright's sync API keeps an event loop running in this thread.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(run).result()


def test_modelwire_serve_replays_the_demo_into_the_page_from_the_keyboard(browser):
    expected = demo_reply_in_python()
    with ServeProcess() as url:
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))  # a CSP violation shows here
        opened(page, url)
        assert page.locator("#banner").is_visible() and "Demo replay" in page.inner_text("#banner")
        page.focus("#input")
        page.keyboard.press("Enter")  # the demo question is filled in
        page.wait_for_selector("article.assistant .stats", timeout=60000)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "chat-page-demo.png"), full_page=True)
        texts = page.locator("article.assistant .text").all_inner_texts()
        results = page.locator("article.assistant .tool .result").all_inner_texts()
        thinking_open = page.eval_on_selector_all("article.assistant details.thinking", "els => els.map(e => e.open)")
        stats = page.inner_text("article.assistant .stats")
        focused = page.evaluate("document.activeElement.id")
    assert errors == []
    assert texts == [b.text for b in expected.content if b.type == "text"]
    assert results == ["".join(x.text for x in b.output) for b in expected.content if b.type == "tool_result"]
    assert results == ["7006694"]  # the calculator really ran
    assert thinking_open == [False] * sum(b.type == "thinking" for b in expected.content) and thinking_open  # collapsed
    assert f"{expected.usage.input_tokens} tokens in, {expected.usage.output_tokens} out" in stats
    assert focused == "input"  # ready for the next message
    assert (ARTIFACTS / "chat-page-demo.png").stat().st_size > 1000


def test_the_stop_button_ends_the_reply_and_closes_the_provider_connection(browser):
    long = body("anthropic", ("text", " ".join(["word"] * 600)))
    with ProviderServer() as provider:
        provider.replies = [sse_reply(long, delay=0.02)]
        with ServeProcess(
            "--model", "anthropic:claude-sonnet-4-5", "--base-url", provider.url, env={"ANTHROPIC_API_KEY": "sk-test"}
        ) as url:
            page = browser.new_page()
            opened(page, url)
            assert page.locator("#banner").is_hidden()
            page.fill("#input", "Talk for a long time.")
            page.click("#send")
            page.wait_for_function(
                "() => (document.querySelector('article.assistant .text')?.textContent.length ?? 0) > 40", timeout=60000
            )
            assert page.is_enabled("#stop") and page.is_disabled("#send")
            page.click("#stop")
            page.wait_for_selector("[data-end=stopped]", timeout=60000)
            deadline = time.monotonic() + 30
            while not provider.disconnects and time.monotonic() < deadline:
                time.sleep(0.01)
            shown = page.inner_text("article.assistant .text")
            send_back = page.is_enabled("#send")
    # A disconnect is noted only when a write fails: the stream was cut, not sent to its end.
    assert provider.disconnects, "the provider stream stayed open after Stop"
    assert 40 < len(shown) < len(" ".join(["word"] * 600))  # what came before Stop stays on screen
    assert send_back


PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def photo(city: str):
    """A photo of a city."""
    return [
        f"a photo of {city}",
        DataBlock(source={"type": "base64", "data": PIXEL, "media_type": "image/png"}, name=f"{city}.png"),
    ]


@pytest.mark.parametrize("answer", ["Allow", "Deny"])
def test_a_confirmation_prompt_runs_or_denies_the_tool_and_an_image_result_is_shown(browser, answer):
    with ProviderServer() as provider:
        provider.replies = [
            sse_reply(
                body(
                    "anthropic",
                    ("think", "I should fetch a photo."),
                    ("tool", "toolu_1", "photo", '{"city": "Oslo"}'),
                    usage=(30, 10),
                )
            ),
            sse_reply(
                body("anthropic", ("text", "Here is Oslo." if answer == "Allow" else "No photo then."), usage=(50, 5))
            ),
        ]

        with Served(agent_app(provider, Tool(photo, requires_confirmation=True))) as url:
            page = browser.new_page()
            opened(page, url + "/")
            page.fill("#input", "Show me Oslo.")
            page.keyboard.press("Enter")
            page.wait_for_selector(".confirm button", timeout=60000)
            assert page.evaluate("document.activeElement.textContent") == "Allow"  # the prompt takes the focus
            if answer == "Allow":
                page.keyboard.press("Enter")
            else:
                page.click("text=Deny")
            page.wait_for_selector("article.assistant .stats", timeout=60000)
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"chat-page-confirm-{answer.lower()}.png"), full_page=True)
            result = page.inner_text(".tool .result")
            images = page.eval_on_selector_all(".tool .result img", "els => els.map(e => [e.naturalWidth, e.alt])")
            text = page.inner_text("article.assistant .text")
            stats = page.inner_text("article.assistant .stats")
            confirm_gone = page.locator(".confirm").count() == 0
    assert confirm_gone
    if answer == "Allow":
        assert result.startswith("a photo of Oslo") and images == [
            [1, "image"]
        ]  # decoded; result data events carry no name
        assert text.strip() == "Here is Oslo."
    else:
        assert result.startswith("(denied)") and images == []
        assert text.strip() == "No photo then."
    assert "80 tokens in, 15 out" in stats


def test_the_demo_asks_before_its_tool_and_answers_a_second_question_too(browser):
    with ServeProcess("--confirm-tools") as url:
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        opened(page, url)
        page.focus("#input")
        page.keyboard.press("Enter")
        page.wait_for_selector(".confirm button", timeout=60000)
        page.keyboard.press("Enter")  # Allow has the focus
        page.wait_for_selector("article.assistant:nth-of-type(2) .stats", timeout=60000)
        page.fill("#input", "And once more?")
        page.keyboard.press("Enter")
        page.wait_for_selector("article:nth-of-type(4) .confirm button", timeout=60000)
        page.click("article:nth-of-type(4) >> text=Allow")
        page.wait_for_selector("article.assistant:nth-of-type(4) .stats", timeout=60000)
        replies = page.locator("article.assistant")
        results = [replies.nth(i).locator(".tool .result").all_inner_texts() for i in range(2)]
        failures = page.locator(".failure").all_inner_texts()
    assert errors == [] and failures == []
    assert results == [["7006694"], ["7006694"]]  # each question replays the recording, the tool really runs


def test_an_external_tool_is_answered_from_the_page_and_the_reply_goes_on(browser):
    with ProviderServer() as provider:
        provider.replies = [
            sse_reply(body("anthropic", ("tool", "toolu_1", "lookup", '{"q": "opening hours"}'), usage=(30, 10))),
            sse_reply(body("anthropic", ("text", "They open at nine."), usage=(50, 5))),
        ]

        lookup = Tool(
            name="lookup",
            description="Looked up by a person.",
            parameters={"type": "object", "properties": {"q": {"type": "string"}}},
            external=True,
        )
        with Served(agent_app(provider, lookup)) as url:
            page = browser.new_page()
            opened(page, url + "/")
            page.fill("#input", "When do they open?")
            page.keyboard.press("Enter")
            page.wait_for_selector(".confirm input", timeout=60000)
            assert page.evaluate("document.activeElement.tagName") == "INPUT"  # the prompt takes the focus
            page.keyboard.type("9:00 to 17:00")
            page.keyboard.press("Enter")
            page.wait_for_selector("article.assistant .stats", timeout=60000)
            result = page.inner_text(".tool .result")
            text = page.inner_text("article.assistant .text")
        sent = provider.requests
    assert result == "9:00 to 17:00"
    assert text.strip() == "They open at nine."
    assert "9:00 to 17:00" in json.dumps(sent[1]["json"]["messages"][-1])


def page_with_stream(raw: bytes):
    """The chat page, and a reply endpoint that answers any POST with ``raw`` in one write
    (one network read for the page): for what the page does with a given stream."""
    from modelwire.serve import EventStreamApp

    page_app = EventStreamApp(lambda: None)

    async def app(scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "POST":
            while (await receive()).get("more_body"):
                pass
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]}
            )
            await send({"type": "http.response.body", "body": raw})
            return
        await page_app(scope, receive, send)

    return app


def test_events_in_the_same_read_as_an_error_event_are_shown(browser):
    """A server failure after part of a reply, all in one network read: the part is kept."""
    from modelwire.event import ReplyStartEvent, TextBlockDeltaEvent, TextBlockStartEvent, event_to_json

    frames = [
        ReplyStartEvent(session_id="s", reply_id="r1", name="Buddy"),
        TextBlockStartEvent(reply_id="r1", block_id="b1"),
        TextBlockDeltaEvent(reply_id="r1", block_id="b1", delta="a partial answer"),
    ]
    one_read = (
        b"".join(b"data: " + event_to_json(e).encode() + b"\n\n" for e in frames)
        + b'event: error\ndata: {"type": "ERROR", "message": "the server broke"}\n\n'
    )

    with Served(page_with_stream(one_read)) as url:
        page = browser.new_page()
        opened(page, url + "/")
        page.fill("#input", "Hi")
        page.keyboard.press("Enter")
        page.wait_for_selector("article.assistant .failure", timeout=60000)
        text = page.inner_text("article.assistant .text")
        failure = page.inner_text("article.assistant .failure")
    assert text.strip() == "a partial answer"
    assert "the server broke" in failure


def test_the_form_is_disabled_until_the_page_has_its_settings_then_it_sends(browser):
    """The page reads its settings (``config.json``) before it sets its handlers: until they
    come its form is disabled (an Enter pressed before only added a line to the box, and the
    message was never sent); then it is enabled, focused, and sends."""
    import threading

    from modelwire.serve import EventStreamApp

    asked, released, posted = threading.Event(), threading.Event(), []
    page_app = EventStreamApp(lambda: None)
    failure = b'event: error\ndata: {"type": "ERROR", "message": "no model here"}\n\n'

    async def app(scope, receive, send):
        if scope["type"] == "http" and scope["path"] == "/config.json":
            asked.set()
            await asyncio.get_running_loop().run_in_executor(None, released.wait, 60)
        if scope["type"] == "http" and scope["method"] == "POST":
            chunks = [await receive()]
            while chunks[-1].get("more_body"):
                chunks.append(await receive())
            posted.append(json.loads(b"".join(c.get("body", b"") for c in chunks)))
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]}
            )
            await send({"type": "http.response.body", "body": failure})
            return
        await page_app(scope, receive, send)

    with Served(app) as url:
        page = browser.new_page()
        page.goto(url + "/", wait_until="commit")  # (the settings are held: the page is not ready)
        assert asked.wait(60), "the page never asked for its settings"
        before = page.is_disabled("#input"), page.is_disabled("#send")
        released.set()
        page.wait_for_selector("#input:enabled", timeout=60000)
        focused = page.evaluate("document.activeElement.id")
        page.keyboard.type("Hi")
        page.keyboard.press("Enter")
        page.wait_for_selector("article.assistant .failure", timeout=60000)
    assert before == (True, True)
    assert focused == "input"
    assert [m["content"] for m in posted[0]["messages"]] == [[{"type": "text", "text": "Hi"}]]


def test_a_reload_in_the_middle_of_a_reply_takes_it_up_again(browser):
    words = [f"w{i}" for i in range(400)]
    long = body("anthropic", ("text", " ".join(words)), usage=(12, 400))
    made: list = []
    with ProviderServer() as provider:
        provider.replies = [sse_reply(long, delay=0.01)]
        with Served(agent_app(provider, made=made)) as url:
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            opened(page, url + "/")
            page.fill("#input", "Count for me.")
            page.keyboard.press("Enter")
            page.wait_for_function(
                "() => (document.querySelector('article.assistant .text')?.textContent.length ?? 0) > 60", timeout=60000
            )
            page.reload()  # the connection goes with the old page; the reply goes on on the server
            page.wait_for_selector("article.assistant .stats", timeout=60000)
            shown = page.inner_text("article.assistant .text")
            user = page.inner_text("article.user")
            stats = page.inner_text("article.assistant .stats")
    assert errors == []
    assert user == "Count for me."  # the conversation came back with the page
    assert shown.split() == words == made[0].context[-1].get_text_content().split()
    assert "12 tokens in, 400 out" in stats
    assert len(provider.requests) == 1  # taken up, not asked again


def test_tool_output_images_load_only_from_data_urls(browser):
    """A prompt-injected tool could put data in an image URL for the browser to fetch."""
    from modelwire.event import (
        ReplyEndEvent,
        ReplyStartEvent,
        ToolCallEndEvent,
        ToolCallStartEvent,
        ToolResultDataDeltaEvent,
        ToolResultEndEvent,
        ToolResultStartEvent,
        event_to_json,
    )

    r = "r1"
    frames = [
        ReplyStartEvent(session_id="s", reply_id=r, name="Buddy"),
        ToolCallStartEvent(reply_id=r, tool_call_id="c1", tool_call_name="photo"),
        ToolCallEndEvent(reply_id=r, tool_call_id="c1"),
        ToolResultStartEvent(reply_id=r, tool_call_id="c1", tool_call_name="photo"),
        ToolResultDataDeltaEvent(
            reply_id=r,
            tool_call_id="c1",
            block_id="d1",
            media_type="image/png",
            url="http://127.0.0.1:9/leak.png?secret=42",
        ),
        ToolResultDataDeltaEvent(reply_id=r, tool_call_id="c1", block_id="d2", media_type="image/png", data=PIXEL),
        ToolResultEndEvent(reply_id=r, tool_call_id="c1", state="success"),
        ReplyEndEvent(session_id="s", reply_id=r),
    ]
    stream = b"".join(b"data: " + event_to_json(e).encode() + b"\n\n" for e in frames)

    with Served(page_with_stream(stream)) as url:
        page = browser.new_page()
        asked: list[str] = []
        page.on("request", lambda req: asked.append(req.url))
        opened(page, url + "/")
        page.fill("#input", "A photo?")
        page.keyboard.press("Enter")
        page.wait_for_selector(".tool .result img", timeout=60000)
        page.wait_for_function("() => !document.querySelector('#send').disabled", timeout=60000)  # the reply ended
        images = page.eval_on_selector_all(".tool .result img", "els => els.map(e => e.src.slice(0, 22))")
        links = page.eval_on_selector_all(".tool .result a", "els => els.map(e => e.href)")
    assert images == ["data:image/png;base64,"]  # the inline one is shown
    assert links == ["http://127.0.0.1:9/leak.png?secret=42"]  # the other is a link to follow, not a fetch
    assert not any("leak.png" in u for u in asked)

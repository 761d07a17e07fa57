"""What a newcomer trips on in the first hour: each mistake answered with its fix."""

from __future__ import annotations

import asyncio

import pytest
from modelwire.testing.server import error_reply

from modelwire import errors
from modelwire.message import UserMsg
from modelwire.models import load_model
from modelwire.models.transport import RetryPolicy


def test_a_misspelt_option_says_which_one_was_meant():
    with pytest.raises(errors.UnsupportedOptionError) as caught:
        load_model("anthropic:claude-sonnet-4-5", api_key="k", temprature=0.5)
    assert "did you mean 'temperature'?" in str(caught.value)
    with pytest.raises(errors.UnsupportedOptionError) as caught:
        load_model("anthropic:claude-sonnet-4-5", api_key="k", zzzz=1)
    assert "did you mean" not in str(caught.value) and "known options" in str(caught.value)


# Anthropic's answer to an unknown model id: {"type": "error", "error": {"type": "not_found_error",
# "message": "model: <id>"}} (the API's 404, as the anthropic SDK's NotFoundError carries it).
def _not_found(model: str):
    return error_reply(404, {"type": "error", "error": {"type": "not_found_error", "message": f"model: {model}"}})


def _ask(server, spec: str) -> errors.ProviderError:
    model = load_model(spec, api_key="sk-test", base_url=server.url, retry=RetryPolicy(max_retries=0))
    server.script(_not_found(spec.split(":", 1)[1]))
    with pytest.raises(errors.ProviderError) as caught:
        asyncio.run(model.complete([UserMsg("user", "hi")]))
    return caught.value


def test_a_misspelt_model_answered_404_names_the_model_the_table_knows(server):
    err = _ask(server, "anthropic:claude-sonet-4-5")
    assert err.status_code == 404
    assert "did you mean anthropic:claude-sonnet-4-5?" in str(err)
    assert "model: claude-sonet-4-5" in str(err)  # the provider's own words kept


def test_a_model_the_table_knows_or_nothing_near_gets_no_guess(server):
    assert "did you mean" not in str(_ask(server, "anthropic:claude-sonnet-4-5"))
    assert "did you mean" not in str(_ask(server, "anthropic:some-private-finetune"))

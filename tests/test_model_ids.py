"""How a model id is read against the capability table: the clouds' prefixes and suffixes, a
dated snapshot, a bare ``-v1`` (the first version of a named model, the model itself) and a
``-v2`` (a version of its own, whose rules are assumed from its family, and said so)."""

from __future__ import annotations

import pytest

from modelwire.models import load_model
from modelwire.models.capabilities import assumed_from, from_table, normalize, table_entries

BEDROCK = "https://bedrock-runtime.us-east-1.amazonaws.com"


def family_of(model: str) -> str | None:
    """The family of the row the table gives ``model`` (None: no row)."""
    record = from_table(model)
    return next((family for _, entry, family in table_entries() if entry is record), None)


@pytest.mark.parametrize(
    "model,name,family",
    [
        # Bedrock documents "-v1:0" as the version of the model on Bedrock
        # (https://docs.aws.amazon.com/bedrock/latest/userguide/models-supported.html).
        ("anthropic.claude-sonnet-5-5-v1:0", "claude-sonnet-5-5", "Claude Sonnet 5.5"),
        ("us.anthropic.claude-sonnet-5-5-v1:0", "claude-sonnet-5-5", "Claude Sonnet 5.5"),
        # The same id without its ":0", as users write it.
        ("claude-sonnet-5-5-v1", "claude-sonnet-5-5", "Claude Sonnet 5.5"),
        ("claude-opus-4-7-v1", "claude-opus-4-7", "Claude Opus 4.8, Opus 4.7"),
        ("gpt-6-sol-v1", "gpt-6-sol", "GPT-6 Sol, GPT-6 Luna"),
        # A provisioned-throughput context after the version.
        (
            "us.anthropic.claude-haiku-4-5-20251001-v1:0:200k",
            "claude-haiku-4-5-20251001",
            "Claude Sonnet 4.5, Haiku 4.5",
        ),
        # Dated snapshots: Anthropic's, OpenAI's, Vertex's; a date then a bare -v1.
        ("claude-sonnet-5-5-20260928", "claude-sonnet-5-5-20260928", "Claude Sonnet 5.5"),
        ("claude-sonnet-5-5-20260928-v1", "claude-sonnet-5-5-20260928", "Claude Sonnet 5.5"),
        ("gpt-6-sol-2026-09-22", "gpt-6-sol-2026-09-22", "GPT-6 Sol, GPT-6 Luna"),
        ("claude-sonnet-5-5@20260928", "claude-sonnet-5-5", "Claude Sonnet 5.5"),
    ],
)
def test_a_suffix_the_provider_gives_a_model_names_that_model_exactly(model, name, family):
    assert normalize(model) == name
    assert family_of(model) == family
    assert assumed_from(model) is None  # the row names it: nothing assumed


@pytest.mark.parametrize(
    "model,family",
    [
        # A second version of a named model is a model of its own: its family's rules, assumed.
        ("claude-haiku-5-5-v2", "Claude Haiku 5.5"),
        ("gpt-6-sol-v2", "GPT-6 Sol, GPT-6 Luna"),
        # A bare -v1 after a version the table does not name: still that version, assumed.
        ("claude-sonnet-5-7-v1", "Claude Sonnet 5"),
    ],
)
def test_a_version_of_its_own_is_assumed_from_its_family(model, family):
    assert assumed_from(model) == family


def test_a_bare_v1_after_a_name_without_a_version_is_left_as_it_is():
    # "deepseek-v1" is not the first version of a model named "deepseek": the -v1 is its version.
    assert normalize("deepseek-v1") == "deepseek-v1"


@pytest.mark.parametrize(
    "spec,options,assumed",
    [
        ("anthropic:claude-sonnet-5-5-v1", {}, None),
        ("bedrock:us.anthropic.claude-sonnet-5-5-v1:0", {"base_url": BEDROCK}, None),
        ("openai:gpt-6-sol-v1", {}, None),
        ("anthropic:claude-haiku-5-5-v2", {}, "Claude Haiku 5.5"),
    ],
)
def test_the_model_says_what_it_assumed_in_words(spec, options, assumed):
    model = load_model(spec, api_key="sk-test", **options)
    assert model.assumed_from == assumed
    said = model.assumption()
    if assumed is None:
        assert said is None
    else:
        assert said is not None and f"assumed from {assumed}" in said and spec in said

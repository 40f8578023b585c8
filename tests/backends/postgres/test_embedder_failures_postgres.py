"""A failing embedder on Postgres (issue 31, defect 6): named, nothing written, huge
vectors keep their direction, the model gets a tool error (checks: tests/hybrid)."""

from __future__ import annotations

import pytest
from tests.hybrid.test_embedder_failures import (
    FAILURES,
    FlakyEmbedder,
    StoreMaker,
    check_failures_write_nothing,
    check_huge_vectors_keep_their_direction,
    check_the_model_gets_a_tool_error,
)

from recallstore.backends.postgres import PostgresMemoryStore


@pytest.fixture
def make(postgres_url: str, postgres_schema: str) -> StoreMaker:
    def build(embedder: FlakyEmbedder) -> PostgresMemoryStore:
        return PostgresMemoryStore(postgres_url, schema=postgres_schema, embedder=embedder)

    return build


@pytest.mark.parametrize("mode", list(FAILURES))
async def test_a_failing_embedder_is_named_and_writes_nothing(make: StoreMaker, mode: str) -> None:
    await check_failures_write_nothing(make, mode)


async def test_vectors_scaled_by_1e30_keep_their_direction(make: StoreMaker) -> None:
    await check_huge_vectors_keep_their_direction(make)


async def test_the_model_sees_a_tool_error_it_can_act_on(make: StoreMaker) -> None:
    await check_the_model_gets_a_tool_error(make)

"""Scopes as text: the lenient parser behind the lens's scope field, and the one formatter."""

from __future__ import annotations

import pytest

from recallstore.errors import MemoryValidationError
from recallstore.scope_text import format_scope, parse_scope_text

SCOPE = {"tenant": "acme", "user": "u_42"}


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([], {}),
        (["", "  "], {}),
        (["tenant=acme"], {"tenant": "acme"}),
        (["tenant=acme", "user=u_42"], SCOPE),
        (["tenant=acme, user=u_42"], SCOPE),
        (["note=a,b"], {"note": "a,b"}),
        (["note=a,b, user=u_42"], {"note": "a,b", "user": "u_42"}),
        (["expr=x=y"], {"expr": "x=y"}),
        (["empty="], {"empty": ""}),
        # A comma splits only before another "key=": the rest belongs to the value.
        (["tenant=acme, user"], {"tenant": "acme, user"}),
    ],
)
def test_scope_parameters(values: list[str], expected: dict[str, str]) -> None:
    assert parse_scope_text(values) == expected


@pytest.mark.parametrize("value", ["tenant", "=acme", " = acme"])
def test_a_scope_pair_without_a_key_or_equals_sign_is_refused(value: str) -> None:
    with pytest.raises(MemoryValidationError) as caught:
        parse_scope_text([value])
    assert caught.value.field == "scope"


def test_format_scope_round_trips() -> None:
    assert parse_scope_text([format_scope(SCOPE)]) == SCOPE


def test_format_scope_writes_pairs_in_order_and_nothing_for_an_empty_scope() -> None:
    assert format_scope(SCOPE) == "tenant=acme, user=u_42"
    assert format_scope({}) == ""

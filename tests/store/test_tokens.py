"""The token rules every HTTP surface shares (recallstore.tokens), table by table."""

from __future__ import annotations

import pytest

from recallstore.tokens import any_token_matches, bearer_token, token_matches

TOKEN = "s3cret-token-of-32-characters-xx"


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ([f"Bearer {TOKEN}"], TOKEN),
        ([f"bearer {TOKEN}"], TOKEN),
        ([f"BEARER   {TOKEN}  "], TOKEN),
        ([f"Bearer {TOKEN}".encode()], TOKEN),
        ([], None),
        (["Bearer "], None),
        (["Bearer"], None),
        ([f"Basic {TOKEN}"], None),
        ([TOKEN], None),
        # Two headers: which one a server read depended on its parser, so neither counts.
        ([f"Bearer {TOKEN}", f"Bearer {TOKEN}"], None),
        ([f"Bearer {TOKEN}", "Bearer other"], None),
        ([b"Bearer x", b"Bearer y"], None),
    ],
)
def test_bearer_token(headers: list[str | bytes], expected: str | None) -> None:
    assert bearer_token(headers) == expected


@pytest.mark.parametrize(
    ("candidate", "matches"),
    [(TOKEN, True), (TOKEN + "x", False), (TOKEN[:-1], False), ("", False), (None, False)],
)
def test_token_matches(candidate: str | None, matches: bool) -> None:
    assert token_matches(candidate, TOKEN) is matches


def test_any_token_matches_compares_every_candidate() -> None:
    assert any_token_matches([None, "wrong", TOKEN], TOKEN)
    assert not any_token_matches([None, "wrong"], TOKEN)
    assert not any_token_matches([], TOKEN)

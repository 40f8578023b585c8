"""The lens's request parsing: invalidation reasons from forms and JSON bodies."""

from __future__ import annotations

import pytest

from recallstore.dashboard._requests import check_reason
from recallstore.errors import MemoryValidationError


def test_reasons_are_stripped_bounded_and_blank_means_none() -> None:
    assert check_reason("  moved away ") == "moved away"
    assert check_reason("   ") is None
    assert check_reason(None) is None
    for bad in ("x" * 1001, "a\x00b", 7):
        with pytest.raises(MemoryValidationError) as caught:
            check_reason(bad)
        assert caught.value.field == "reason"

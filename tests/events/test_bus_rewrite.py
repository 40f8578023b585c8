"""``EventBus.rewrite``: what a forget did to the journal, done to the retained events."""

from __future__ import annotations

from recallstore.events import EventBus, MemoryEvent, MemorySearchEvent
from recallstore.events.models import MemorySearchData


def _search(user: str, conversation: str) -> MemorySearchEvent:
    data = MemorySearchData(mode="keyword", query_chars=3, limit=5)
    return MemorySearchEvent(scope={"user": user}, conversation_id=conversation, data=data)


def test_rewrite_drops_replaces_and_keeps_retained_events_in_order() -> None:
    bus = EventBus()
    for user, conversation in (("ana", "c1"), ("bo", "c1"), ("bo", "c2")):
        bus.publish(_search(user, conversation))

    def change(event: MemoryEvent) -> MemoryEvent | None:
        if event.scope == {"user": "ana"}:
            return None
        if event.conversation_id == "c1":
            return event.model_copy(update={"conversation_id": None})
        return event

    assert bus.rewrite(change) == 2
    kept = bus.replay()
    assert [(e.id, e.scope, e.conversation_id) for e in kept] == [
        (2, {"user": "bo"}, None),
        (3, {"user": "bo"}, "c2"),
    ]
    assert bus.rewrite(lambda event: event) == 0
    assert bus.last_id == 3

"""The recall block as a digest (issue 37): handles the tools resolve, excerpts of long
memories, near-identical statements once, and a relevance floor for recall and tools."""

from __future__ import annotations

import re

from recallstore import MemoryCapability, MemoryStore, MemoryWriteInput
from recallstore._search.floor import RELATIVE_FLOOR, above_floor
from recallstore.prompt import excerpt_of
from recallstore.sameness import normal_form, statement_key

SCOPE = {"user": "ana"}


async def _write(store: MemoryStore, *contents: str, scope: dict[str, str] = SCOPE) -> list[str]:
    records = await store.write([MemoryWriteInput(scope=scope, content=c) for c in contents])
    return [record.id for record in records]


async def test_handles_in_the_block_name_records_for_the_tools(store: MemoryStore) -> None:
    ids = await _write(store, "Ana lives in Lisbon.", "Ana works at Acme in Lisbon.")
    capability = MemoryCapability(store, scope_fields=["user"])
    memory = await capability.instantiate(
        SCOPE, conversation_id="c1", first_user_text="Where in Lisbon?"
    )
    block = memory.recall_block
    assert block is not None
    shown = dict(re.findall(r"^- \[(m\d+) \d{4}-\d{2}-\d{2}\] (.*)$", block, re.MULTILINE))
    assert sorted(shown) == ["m1", "m2"]
    assert sorted(memory.recall.handles.values()) == sorted(ids)
    first = memory.recall.handles["m1"]
    # supersedes by handle: the result names the full id.
    saved = await memory.toolbox.call(
        "memory_save", {"content": "Ana lives in Porto now.", "supersedes": "m1"}
    )
    assert saved["ok"] is True
    assert saved["superseded_id"] == first
    assert (await store.get(first)).is_invalidated  # type: ignore[union-attr]
    # A later turn's toolbox for the same conversation resolves the same handles.
    later = capability.toolbox(SCOPE, conversation_id="c1")
    result = await later.call("memory_invalidate", {"id": "m2"})
    assert result["ok"] is True
    assert (await store.get(memory.recall.handles["m2"])).is_invalidated  # type: ignore[union-attr]


async def test_an_unknown_or_foreign_handle_is_not_found(store: MemoryStore) -> None:
    await _write(store, "Ana likes tea.")
    await _write(store, "Bob likes coffee.", scope={"user": "bob"})
    capability = MemoryCapability(store, scope_fields=["user"])
    bob = await capability.instantiate(
        {"user": "bob"}, conversation_id="c-bob", first_user_text="coffee"
    )
    assert bob.recall.handles.keys() == {"m1"}
    ana = await capability.instantiate(SCOPE, conversation_id="c-ana", first_user_text="hello")
    assert ana.recall.handles == {}
    for toolbox in (ana.toolbox, capability.toolbox(SCOPE, conversation_id="c-bob")):
        result = await toolbox.call("memory_invalidate", {"id": "m1"})
        assert result["ok"] is False
        assert result["error"]["code"] == "not_found"
        assert "'m1'" in result["error"]["message"]
    # A toolbox without the conversation knows no handles either.
    plain = capability.toolbox({"user": "bob"})
    assert (await plain.call("memory_invalidate", {"id": "m1"}))["error"]["code"] == "not_found"
    assert not (await store.get(bob.recall.handles["m1"])).is_invalidated  # type: ignore[union-attr]


async def test_a_long_memory_is_excerpted_and_whole_in_search(store: MemoryStore) -> None:
    filler = " ".join(f"Sentence {n} is about the weather and nothing else." for n in range(12))
    content = f"{filler} The flat in Alfama costs 900 euros a month. {filler}"
    await _write(store, content)
    capability = MemoryCapability(store, scope_fields=["user"])
    memory = await capability.instantiate(
        SCOPE, conversation_id="c1", first_user_text="How much is the Alfama flat?"
    )
    assert memory.recall_block is not None
    line = next(line for line in memory.recall_block.splitlines() if line.startswith("- [m1 "))
    assert line.endswith("] … The flat in Alfama costs 900 euros a month. …")
    found = await memory.toolbox.call("memory_search", {"query": "Alfama flat"})
    assert found["memories"][0]["content"] == content


def test_excerpt_keeps_matching_sentences_in_order_and_marks_cuts() -> None:
    text = (
        "We met in Porto. It rained all week and the trains were late again. "
        "My sister Rita got married in Porto in June. The food was good. "
        "Rita moved to Lisbon afterwards." + " Nothing else happened." * 20
    )
    assert excerpt_of(text, "Where did Rita get married?") == (
        "… My sister Rita got married in Porto in June. … Rita moved to Lisbon afterwards. …"
    )
    # Nothing matches: the opening, cut where the limit falls.
    opening = excerpt_of(text, "quantum")
    assert opening.startswith("We met in Porto.")
    assert opening.endswith("…")
    assert len(opening) <= 300
    assert excerpt_of("Short enough.", "anything") == "Short enough."


async def test_near_identical_statements_are_shown_once(store: MemoryStore) -> None:
    # Inner punctuation differs, so these are not equal (normal_form), only near-identical.
    await _write(
        store,
        "Ana lives in Lisbon (Portugal)!",
        "ana lives in lisbon, portugal",
        "Ana lives in Lisbon, 2",
    )
    memory = await MemoryCapability(store, scope_fields=["user"]).instantiate(
        SCOPE, conversation_id="c1", first_user_text="Where does Ana live, Lisbon?"
    )
    contents = [record.content for record in memory.recall.entries]
    assert len(contents) == 2
    assert "Ana lives in Lisbon, 2" in contents
    assert normal_form("Ana lives in Lisbon (Portugal)!") != normal_form(
        "ana lives in lisbon, portugal"
    )
    assert statement_key("3.5 km") != statement_key("35 km")
    assert statement_key("🍵") != statement_key("☕")


async def test_the_relevance_floor_keeps_weak_matches_out(store: MemoryStore) -> None:
    await _write(
        store,
        "Ana's passport number ends in 42 and her passport expires in May.",
        *[f"Ana had lunch with colleague number {n} on a Monday." for n in range(8)],
    )
    capability = MemoryCapability(store, scope_fields=["user"])
    memory = await capability.instantiate(
        SCOPE, conversation_id="c1", first_user_text="When does my passport expire, Monday?"
    )
    contents = [record.content for record in memory.recall.entries]
    # The best hit and the next two (ALWAYS_KEPT), not the other six weak matches.
    assert len(contents) == 3
    assert contents[0] == "Ana's passport number ends in 42 and her passport expires in May."
    found = await memory.toolbox.call("memory_search", {"query": "passport expire Monday"})
    assert len(found["memories"]) == 3
    # The store's own search is unchanged: every record sharing a word (S10/S11).
    from recallstore import MemorySearchQuery

    hits = await store.search(MemorySearchQuery(query="passport expire Monday", scope=SCOPE))
    assert len(hits) == 9


def test_above_floor_is_relative_and_leaves_unscored_hits_alone() -> None:
    assert above_floor([10.0, 5.0, 0.1, 1.0, 0.9], lambda s: s) == [10.0, 5.0, 0.1, 1.0]
    assert above_floor([1.0, -0.5, -0.9, -1.0], lambda s: s) == [1.0, -0.5, -0.9]
    assert RELATIVE_FLOOR == 0.1
    assert above_floor([None, 1.0], lambda s: s) == [None, 1.0]
    assert above_floor([-1.0, -3.0], lambda s: s) == [-1.0, -3.0]
    assert above_floor([], lambda s: s) == []

"""Memories and the first message of a later conversation that needs each, in other words.

What a user says on day one is saved the way an agent words it; weeks later a new
conversation opens the way a person starts one. Every pair shares no word that keyword
search could match (``test_paraphrase_recall`` checks it with the store's own stemmer),
so keyword search alone cannot find them. Written by hand, for realism and variety, not
against any model: one user (Ana) over the four kinds of memory.
"""

from __future__ import annotations

from typing import NamedTuple

from recallstore.records import MemoryKind


class Paraphrase(NamedTuple):
    """A saved memory and a first message that needs it, sharing no content word."""

    kind: MemoryKind
    memory: str
    first_message: str


PARAPHRASES: tuple[Paraphrase, ...] = (
    # Who she is.
    Paraphrase("profile", "Works as a nurse in the cardiac ward.", "What's my job again?"),
    Paraphrase("profile", "Lives in Lisbon, Portugal, since 2019.", "Which city do I call home?"),
    Paraphrase("profile", "Has two daughters, Maya (7) and Inês (4).", "How many kids have I got?"),
    Paraphrase(
        "profile",
        "Speaks Portuguese natively; English is her second language.",
        "What's my mother tongue?",
    ),
    Paraphrase("profile", "Born on 14 March 1988.", "When's my birthday?"),
    Paraphrase(
        "profile",
        "Studied mechanical engineering at TU Delft.",
        "Where did I go to university?",
    ),
    Paraphrase("profile", "Is vegetarian.", "Do I eat meat?"),
    Paraphrase(
        "profile",
        "Married to Tom, who teaches chemistry at a high school.",
        "What does my husband do for a living?",
    ),
    Paraphrase(
        "profile",
        "Uses a wheelchair since a spinal injury in 2015.",
        "Will that museum's staircase be a problem for me?",
    ),
    # What she likes and how she wants things.
    Paraphrase(
        "preference",
        "Prefers answers as short bullet points, not long paragraphs.",
        "How do I like replies formatted?",
    ),
    Paraphrase(
        "preference",
        "Likes a window seat on flights.",
        "I'm booking a plane ticket to Rome, which spot in the cabin do I usually want?",
    ),
    Paraphrase(
        "preference",
        "Hates coriander: it tastes like soap to her.",
        "Is there any herb I can't stand?",
    ),
    Paraphrase(
        "preference",
        "Wants distances in kilometres and temperatures in Celsius.",
        "How far is Boston from New York? Use the measurement system I'm used to.",
    ),
    Paraphrase(
        "preference",
        "Her favourite music is 1970s jazz, especially Miles Davis.",
        "Recommend some records for tonight.",
    ),
    Paraphrase(
        "preference",
        "Wants to be addressed informally, by her first name.",
        "How should you greet me?",
    ),
    Paraphrase("preference", "Drinks coffee black, without sugar.", "How do I take my espresso?"),
    Paraphrase(
        "preference",
        "Prefers Python for scripting.",
        "Write me a small program to rename my files, in whatever I normally code in.",
    ),
    Paraphrase(
        "preference",
        "Likes to exercise early, before her shift starts.",
        "When's the best time of day for me to fit in a workout?",
    ),
    # Facts about her life.
    Paraphrase("fact", "Allergic to peanuts.", "Is satay sauce safe for me?"),
    Paraphrase(
        "fact",
        "Has type 1 diabetes and wears an insulin pump.",
        "Can I have a big slice of cake at the party, or should I watch my sugar?",
    ),
    Paraphrase("fact", "Her car is a 2017 Toyota Prius.", "What vehicle do I drive?"),
    Paraphrase("fact", "Her dog Biscuit is a golden retriever.", "What breed is my pet?"),
    Paraphrase(
        "fact",
        "Her passport expires in August 2027.",
        "Is my travel document still valid for a trip abroad next spring?",
    ),
    Paraphrase("fact", "Earns 52,000 euros a year.", "How much is my salary?"),
    Paraphrase(
        "fact",
        "The flat's rent is due on the first of each month.",
        "When do I have to pay the landlord?",
    ),
    Paraphrase("fact", "Is lactose intolerant.", "Can I drink a milkshake?"),
    Paraphrase(
        "fact",
        "Her blood type is O negative.",
        "If I ever needed a transfusion, which donors would match me?",
    ),
    # Things that happened.
    Paraphrase(
        "episode",
        "Ran the Berlin marathon in September 2024 in 3 hours 58 minutes.",
        "How did that big race I did last autumn go?",
    ),
    Paraphrase(
        "episode",
        "Had her wisdom teeth removed on 3 June; recovery took a week.",
        "When was my dental surgery?",
    ),
    Paraphrase("episode", "Moved house from Porto to Lisbon last spring.", "When did I relocate?"),
    Paraphrase(
        "episode",
        "Got promoted to head nurse in January.",
        "Did I get a new title at the hospital recently?",
    ),
    Paraphrase(
        "episode",
        "Lost her wallet on the train to Sintra last Friday.",
        "I misplaced something on a railway journey recently, what was it?",
    ),
    Paraphrase("episode", "Adopted a cat from the shelter in March.", "When did I get my kitten?"),
    Paraphrase(
        "episode",
        "Her father had heart surgery in October and is recovering.",
        "How is my dad doing after his operation?",
    ),
    Paraphrase(
        "episode",
        "Celebrated her 10th wedding anniversary in Paris.",
        "Where did my spouse and I go to mark a decade of marriage?",
    ),
    Paraphrase(
        "episode",
        "Failed her driving test the first time and passed on the second try in May.",
        "Did I get my licence on my initial attempt?",
    ),
)

"""Keyword and hybrid ranking, shared by every backend: pure functions, no I/O.

``text`` tokenises as SQLite FTS5's ``unicode61`` does, ``porter`` stems as its
``porter`` tokenizer does, ``query`` turns query text into weighted terms and scores
records (stop words, BM25, pseudo-relevance feedback), and ``fusion`` merges a keyword
ranking with a vector ranking. Private: the backends and the data contract use it.
"""

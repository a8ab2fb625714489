"""Working memory (episodes.md "Working memory", docs/working-memory.md): per-session entries held in
the process only, under a token cap; the signals that reached the learning threshold are archived as
episodes when the session ends. `decide.py` is pure; `sessions.py` holds the entries; `flows.py`
reads and changes them; `channels.py` declares the three channels."""

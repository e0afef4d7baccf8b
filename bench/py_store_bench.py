"""Session-store benchmark of Python Hermes, the peer of hermes-store's `store_bench` example.

    <venv>/bin/python bench/py_store_bench.py --db DIR/state.db --messages N --queries FILE

Same corpus (the generator below mirrors `Corpus` in
crates/hermes-store/examples/store_bench.rs word for word), same session size (200 messages),
same query list. Inserts go through `hermes_state.SessionDB.append_message` (its own commit per
message, as its agent does); searches through `SessionDB.search_messages(query, limit=20)`,
its entry point for the `session_search` tool. Prints the same JSON keys as the Rust example.
`--insert-only` skips the searches and `--prefix P` names the sessions `P_0000000`, … (titles
`P session N`), so this and the Rust example can take turns inserting into one `state.db`
(`bench/run`'s `samefile` section); `insert_p50_us` / `insert_p99_us` are per-message times.
"""

import argparse
import json
import math
import os
import time
from pathlib import Path

SYLLABLES = (
    "ba be bi bo bu da de di do du ka ke ki ko ku la le li lo lu ma me mi mo mu "
    "na ne ni no nu ra re ri ro ru sa se si so su ta te ti to tu va ve vi vo vu"
).split()
VOCABULARY = 20_000
PER_SESSION = 200
MASK = (1 << 64) - 1


class Corpus:
    def __init__(self):
        self.state = 0x9E3779B97F4A7C15

    def next(self):
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) & MASK
        return self.state >> 33

    @staticmethod
    def word(i):
        return SYLLABLES[i % 50] + SYLLABLES[(i // 50) % 50] + SYLLABLES[(i // 2500) % 50]

    def message(self):
        n = 6 + self.next() % 30
        words = []
        for _ in range(n):
            a = self.next() % VOCABULARY
            b = self.next() % VOCABULARY
            words.append(self.word(a * b // VOCABULARY))
        return " ".join(words)


def percentile(values, p):
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = math.ceil(p / 100 * len(ordered))
    return ordered[min(max(rank, 1), len(ordered)) - 1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--queries")
    parser.add_argument("--insert-only", action="store_true")
    parser.add_argument("--prefix", default="bench")
    args = parser.parse_args()
    if not args.insert_only and not args.queries:
        parser.error("--queries is required (unless --insert-only)")
    queries = [] if args.insert_only else [
        line.strip()
        for line in Path(args.queries).read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]

    from hermes_state import SessionDB  # the venv's hermes-agent

    db_path = Path(args.db)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    db = SessionDB(db_path=db_path)
    corpus = Corpus()
    session = None
    sessions = 0
    insert_us = []
    start = time.perf_counter()
    for i in range(args.messages):
        if i % PER_SESSION == 0:
            session = f"{args.prefix}_{sessions:07d}"
            db.create_session(session, "cli", model="bench-model")
            db.set_session_title(session, f"{args.prefix} session {sessions}")
            sessions += 1
        role = "user" if i % 2 == 0 else "assistant"
        text = corpus.message()
        t = time.perf_counter()
        db.append_message(session, role, text)
        insert_us.append((time.perf_counter() - t) * 1e6)
    insert_s = time.perf_counter() - start

    for q in queries:
        db.search_messages(q, limit=20)
    search_ms = []
    hits = 0
    for q in queries:
        t = time.perf_counter()
        hits += len(db.search_messages(q, limit=20))
        search_ms.append((time.perf_counter() - t) * 1e3)
    db.close()

    size = sum(
        os.path.getsize(f"{db_path}{suffix}")
        for suffix in ("", "-wal", "-shm")
        if os.path.exists(f"{db_path}{suffix}")
    )
    print(
        json.dumps(
            {
                "messages": args.messages,
                "sessions": sessions,
                "insert_s": insert_s,
                "insert_us_per_message": insert_s * 1e6 / max(args.messages, 1),
                "insert_p50_us": percentile(insert_us, 50) if insert_us else None,
                "insert_p99_us": percentile(insert_us, 99) if insert_us else None,
                "db_bytes": size,
                "queries": len(queries),
                "search_ms": search_ms,
                "search_p50_ms": percentile(search_ms, 50),
                "search_p99_ms": percentile(search_ms, 99),
                "hits_total": hits,
            }
        )
    )


if __name__ == "__main__":
    main()

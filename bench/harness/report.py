"""The printed table of bench/run and the target checks (issue 6 targets)."""


def _get(doc, key, who, field):
    v = doc["results"].get(key, {}).get(who, {})
    return v.get(field) if isinstance(v, dict) else None


def _fmt(v, unit, digits=1):
    if v is None:
        return "—"
    if unit == "ms" and v < 10:
        digits = 2
    return f"{v:,.{digits}f} {unit}".strip()


def _ratio(ours, peer):
    if ours in (None, 0) or peer is None:
        return ""
    r = peer / ours
    return f"{r:,.0f}×" if r >= 10 else f"{r:.1f}×"


def rows(doc):
    """(what, ours, peer, peer/ours) rows; a ratio above 1 means hermes is faster/leaner."""
    out = []

    def add(what, key, field, unit, digits=1, ratio=True):
        o, p = _get(doc, key, "ours", field), _get(doc, key, "peer", field)
        if o is None and p is None:
            return
        out.append((what, _fmt(o, unit, digits), _fmt(p, unit, digits), _ratio(o, p) if ratio else ""))

    cfg = doc.get("config", {})
    add("`--version` wall", "version", "wall_ms", "ms")
    add("`--version` peak RSS", "version", "rss_mb", "MB")
    add("`--help` wall", "help", "wall_ms", "ms")
    add("`--help` peak RSS", "help", "rss_mb", "MB")
    add("`chat -q`, 1 tool call: wall", "oneshot", "wall_ms", "ms")
    add("`chat -q`, 1 tool call: peak RSS", "oneshot", "rss_mb", "MB")
    add(f"agent overhead per turn (REPL, {cfg.get('overhead_turns')} turns, 1 tool call each)",
        "turn_overhead", "per_turn_ms", "ms", 2)
    add("CPU time of the REPL process per turn (same runs)", "turn_overhead", "cpu_ms_per_turn", "ms", 2)
    add("agent overhead per turn, in-process (cargo bench)", "turn_overhead_inprocess", "per_turn_ms", "ms", 2)
    add("CPU time per turn, in-process (same runs)", "turn_overhead_inprocess", "cpu_ms_per_turn", "ms", 2)
    add("  … spans formatted by a log layer", "turn_overhead_inprocess_logs", "per_turn_ms", "ms", 2)
    add("  … and exported over OTLP/HTTP (loopback sink)", "turn_overhead_inprocess_otlp", "per_turn_ms", "ms", 2)
    add(f"idle REPL RSS after {cfg.get('idle_s')} s", "idle_repl", "rss_mb", "MB")
    add("session resume, 200 messages, p50", "session_resume", "resume_p50_ms", "ms", 2)
    add("session resume, 200 messages, p99", "session_resume", "resume_p99_ms", "ms", 2)
    gw = doc["results"].get("gateway", {}).get("ours")
    if gw and gw.get("sessions"):
        def split(d, prefix=""):
            rss = d.get(f"{prefix}rss_mb")
            if rss is None:
                return "—"
            return (f"{_fmt(rss, 'MB')} (heap {d.get(f'{prefix}anon_mb', 0):.1f} + "
                    f"binary pages {d.get(f'{prefix}file_mb', 0):.1f})")
        routed = f"{gw['sessions']:,} chats × {gw['messages_per_session']} messages"
        out.append(("gateway RSS at start (webhook adapter, no chats)", split(gw, "fresh_"), "—", ""))
        out.append((f"gateway RSS right after routing {routed} (serving)",
                    split(gw, "after_routing_"), "—", ""))
        out.append((f"gateway RSS idle after {routed} ({gw['settle_s']} s settled, ≤ 1 cached agent)",
                    split(gw, "idle_"), "—", ""))
        for live in gw.get("live", []):
            out.append((f"gateway RSS with {live['agents']} live agents (same chats, one more message each)",
                        split(live), "—", ""))
        kept = doc["results"]["gateway"].get("ours_no_idle_release") or {}
        if kept.get("sessions"):
            out.append((f"gateway RSS idle after {routed}, `idle_release_after: 0` (nothing given back)",
                        split(kept, "idle_"), "—", ""))
        add("gateway routing throughput (16 chats in flight)", "gateway", "turns_per_s", "turns/s", 0, ratio=False)
    small = doc["results"].get("store_same_size", {})
    if small.get("ours", {}).get("messages"):
        n = f"{small['ours']['messages']:,}"
        add(f"store, {n} messages: insert per message (1 commit each)", "store_same_size",
            "insert_us_per_message", "µs", 0)
        add(f"store, {n} messages: file size", "store_same_size", "db_mb", "MB", 1)
        add(f"store, {n} messages: search p50 (100 queries)", "store_same_size", "search_p50_ms", "ms", 2)
        add(f"store, {n} messages: search p99", "store_same_size", "search_p99_ms", "ms", 2)
    same = doc["results"].get("store_same_file", {})
    if same.get("ours", {}).get("messages"):
        n = f"{same['ours']['messages']:,}"
        add(f"one state.db, both programs taking turns ({n} messages each): insert per message",
            "store_same_file", "insert_us_per_message", "µs", 0)
        add("same file: insert p50", "store_same_file", "insert_p50_us", "µs", 0)
        add("same file: insert p99", "store_same_file", "insert_p99_us", "µs", 0)
    big = doc["results"].get("store", {}).get("ours")
    if big and big.get("messages"):
        n = f"{big['messages']:,}"
        add(f"store, {n} messages: insert per message", "store", "insert_us_per_message", "µs", 0)
        add(f"store, {n} messages: file size", "store", "db_mb", "MB", 0)
        add(f"store, {n} messages: search p50", "store", "search_p50_ms", "ms", 2)
        add(f"store, {n} messages: search p99", "store", "search_p99_ms", "ms", 2)
    pg = doc["results"].get("store_postgres", {}).get("ours")
    if pg and pg.get("messages"):
        n = f"{pg['messages']:,}"
        add(f"PostgreSQL store, {n} messages: insert per message (1 transaction each)",
            "store_postgres", "insert_us_per_message", "µs", 0, ratio=False)
        add(f"PostgreSQL store, {n} messages: search p50", "store_postgres", "search_p50_ms", "ms", 2,
            ratio=False)
        add(f"PostgreSQL store, {n} messages: search p99", "store_postgres", "search_p99_ms", "ms", 2,
            ratio=False)
    mig = doc["results"].get("sessiondb_migrate", {}).get("ours")
    if mig and mig.get("messages"):
        add(f"`hermes sessiondb migrate`, {mig['messages']:,} messages SQLite → PostgreSQL",
            "sessiondb_migrate", "messages_per_s", "messages/s", 0, ratio=False)
    api = doc["results"].get("api_replicas", {}).get("ours", {})
    for key, what in (("sqlite_1", "one process on SQLite"), ("postgres_1", "1 replica on PostgreSQL"),
                      ("postgres_2", "2 replicas on PostgreSQL"), ("postgres_3", "3 replicas on PostgreSQL")):
        row = api.get(key) or {}
        if row.get("turns_per_s"):
            conc = row.get("concurrency")
            out.append((f"API turns, {what} ({conc} in flight): throughput",
                        f"{row['turns_per_s']:.0f} turns/s", "—", ""))
            out.append((f"API turns, {what}: latency p50 / p99",
                        f"{row['p50_ms']:.1f} / {row['p99_ms']:.1f} ms", "—", ""))
        elif row.get("error"):
            out.append((f"API turns, {what}", f"failed: {row['error']}", "—", ""))
    soak = doc["results"].get("soak", {})
    if soak:
        turns = soak.get("ours", {}).get("turns")
        add(f"REPL RSS growth over {turns} turns", "soak", "rss_growth_kb_per_turn", "KB/turn", 2, ratio=False)
        add("state.db growth over the same turns", "soak", "db_growth_kb_per_turn", "KB/turn", 2, ratio=False)
        every = doc.get("config", {}).get("soak_every")
        add(f"REPL RSS at turn {every}", "soak", "rss_mb_first_sample", "MB", 1, ratio=False)
        add(f"REPL RSS at turn {turns}", "soak", "rss_mb_end", "MB", 1, ratio=False)
        add(f"REPL RSS after /new and {2 * (every or 0)} more turns", "soak",
            "rss_mb_after_new_session_turns", "MB", 1, ratio=False)
    add("local model prefill (SmolLM2-135M Q4_1)", "local_model", "prefill_tok_s", "tok/s", 0, ratio=False)
    add("local model decode", "local_model", "decode_tok_s", "tok/s", 0, ratio=False)
    lm = doc["results"].get("local_model", {}).get("ours") or {}
    if lm.get("rss_mb") is not None:
        out.append((f"local model RSS, context {lm.get('context_tokens') or '?'} tokens (peak)",
                    f"{lm['rss_mb']:.1f} MB ({lm['peak_rss_mb']:.1f} MB)", "—", ""))
    chat = doc["results"].get("local_chat", {}).get("ours") or {}
    peer = doc["results"].get("local_chat", {}).get("peer") or {}
    server = peer.get("server", "llama.cpp server")

    def secs(r, field):
        return f"{r[field] / 1000:.2f} s" if r and r.get(field) is not None else "—"

    for label, name in (("default", "default tools (none for this model)"),
                        ("file_terminal", "-t file,terminal")):
        r = chat.get(label)
        if not r:
            continue
        # The peer column: the same request through llama-cpp-python's server (first run
        # after the server started; warm = its in-memory prefix reuse). Only `-t
        # file,terminal` is the same request on both sides.
        p = peer.get(label)
        out.append((f"local `chat -q` capital of France, {name}: first run after install",
                    f"{r['first_run_ms'] / 1000:.2f} s",
                    secs(p, "first_run_ms") + (f" ({server}, fresh server)" if p else ""), ""))
        out.append((f"local `chat -q`, {name}: later runs (median of {r['runs']})",
                    f"{r['warm_ms'] / 1000:.2f} s",
                    secs(p, "warm_ms") + (f" ({server})" if p else ""), ""))
        if r.get("repl_first_answer_ms") is not None:
            out.append((f"local REPL, {name}: Enter to the answer on screen (cache warm)",
                        f"{r['repl_first_answer_ms'] / 1000:.2f} s", "—", ""))
        if r.get("peak_rss_mb") is not None:
            out.append((f"local `chat -q`, {name}: peak RSS", f"{r['peak_rss_mb']:.0f} MB", "—", ""))
        if r.get("cache_entries"):
            out.append((f"local prompt cache, {name}: one saved prefix",
                        f"{r['cache_entry_mb']:.1f} MB", "—", ""))
    if peer.get("memory"):
        p = peer["memory"]
        out.append((f"`chat -q` capital of France to {server}, `-t memory`, compact prompt: "
                    "first run / later runs (median)",
                    "—", f"{secs(p, 'first_run_ms')} / {secs(p, 'warm_ms')}", ""))
    if peer.get("skipped"):
        out.append(("local peer (llama.cpp server)", "—", f"skipped: {peer['skipped']}", ""))
    return out


def table(doc):
    peer = doc.get("peer") or "peer"
    head = f"| benchmark | hermes (Rust) | {peer.split(' (')[0]} | peer / hermes |\n|---|---|---|---|\n"
    body = "".join(f"| {a} | {b} | {c} | {d} |\n" for a, b, c, d in rows(doc))
    for key, per in doc["results"].items():
        for who, value in per.items():
            if isinstance(value, dict) and "error" in value:
                body += f"| {key} ({who}) | failed: {value['error'][:120]} | | |\n"
    lines = [f"hermes: {doc.get('ours')}; peer: {peer}; mode: {doc.get('mode')}; "
             f"machine: {doc['machine'].get('cpu')}, {doc['machine'].get('cores')} cores", "", head + body]
    for t in doc.get("targets", []):
        state = "met" if t["met"] else ("NOT met" if t["met"] is False else "not measured")
        lines.append(f"target {t['what']} {t['target']}: {_fmt(t['value'], t['unit'], 2)} — {state}")
    return "\n".join(lines)


def targets(doc):
    """The issue's targets, checked against hermes' numbers."""
    store = doc["results"].get("store", {}).get("ours", {})
    fts_value = store.get("search_p99_ms")
    fts_note = f"at {store.get('messages', 0):,} messages" if store else ""
    checks = [
        ("`--version` wall", "≤ 5 ms", _get(doc, "version", "ours", "wall_ms"), "ms", 5),
        ("`--version` peak RSS", "≤ 8 MB", _get(doc, "version", "ours", "rss_mb"), "MB", 8),
        ("agent overhead per turn (REPL)", "≤ 1 ms", _get(doc, "turn_overhead", "ours", "per_turn_ms"), "ms", 1),
        ("agent overhead per turn (in-process)", "≤ 1 ms",
         _get(doc, "turn_overhead_inprocess", "ours", "per_turn_ms"), "ms", 1),
        (f"FTS p99 {fts_note}".strip(), "≤ 20 ms at 1M messages", fts_value, "ms", 20),
        ("gateway idle RSS after 1,000 routed sessions", "≤ 15 MB",
         _get(doc, "gateway", "ours", "idle_rss_mb"), "MB", 15),
    ]
    pg = doc["results"].get("store_postgres", {}).get("ours", {})
    if pg:
        checks.append((f"PostgreSQL FTS p99 at {pg.get('messages', 0):,} messages",
                       "≤ 20 ms at 1M messages", pg.get("search_p99_ms"), "ms", 20))
    out = []
    for what, target, value, unit, limit in checks:
        met = None if value is None else value <= limit
        if what.startswith("FTS") and store and store.get("messages", 0) < 1_000_000 and met:
            met = None  # a smaller store cannot show the 1M target
        if what.startswith("PostgreSQL") and pg.get("messages", 0) < 1_000_000 and met:
            met = None
        if what.startswith("gateway") and _get(doc, "gateway", "ours", "sessions") != 1000 and met:
            met = None  # fewer chats cannot show the 1,000-session target
        out.append({"what": what, "target": target, "value": value, "unit": unit, "met": met})
    return out

"""``dshlog stats``: numbers counted by hand from the golden logs (fixtures/golden/EXPECTED.md)."""

from __future__ import annotations

import json

import orjson
import pytest

from conftest import CORPUS, FIXTURES, GOLDEN, corpus_files, corpus_ids, requires_corpus, run_env
from dshlog.errors import ExitCode
from dshlog.model.stats import stats_counters, total_stats
from dshlog.model.summary import summarize

LOOP = GOLDEN / "loop-events.json"

# loop-events.json, by hand: turns 1-4 start at seqs 1, 17, 26, 34; steps at 3, 12, 19, 28, 36;
# settlements: messages 8, 13, 22, 30 (interrupted), 38 and attempt 21; attempt 21 (turn 2 step 1) is
# retried by message 22 of the same step; turn 3 ends aborted by the user; one tool call (echo, c1,
# seq 9) whose result is not an error; usage 10/5 + 10/4 + 10/2 + 10/6 (seq 30 has none);
# times 1792499042229 .. 1792499042269.
LOOP_STATS = {
    "events": 41,
    "turns": 4,
    "steps": 5,
    "modelCalls": 6,
    "attempts": 1,
    "retries": 1,
    "interrupted": 1,
    "cancellations": 1,
    "toolCalls": {"echo": {"calls": 1, "errors": 0}},
    "tokens": {"inputTokens": 40, "outputTokens": 17},
    "tokensByModel": {"mock/mock": {"inputTokens": 40, "outputTokens": 17}},
    "firstTime": 1792499042229,
    "lastTime": 1792499042269,
    "durationMs": 40,
    "timed": True,
}


def test_loop_numbers():
    s = summarize(json.loads(LOOP.read_text()))
    assert stats_counters(s) == LOOP_STATS


def test_retry_counts_once_when_the_log_also_has_llm_retry():
    events = [
        {"type": "step/start", "seq": 0, "time": 1, "data": {"turn": 1, "step": 1}},
        {"type": "assistant/attempt", "seq": 1, "time": 2, "data": {"turn": 1, "step": 1, "stream": []}},
        {"type": "llm/retry", "seq": 2, "time": 3, "data": {"turn": 1, "step": 1, "retry": 1}},
        {"type": "assistant/message", "seq": 3, "time": 4, "data": {"turn": 1, "step": 1, "message": {"role": "assistant", "content": []}}},
        # an attempt in another step followed by a message is not a retry of it
        {"type": "assistant/attempt", "seq": 4, "time": 5, "data": {"turn": 1, "step": 2, "stream": []}},
        {"type": "assistant/message", "seq": 5, "time": 6, "data": {"turn": 2, "step": 1, "message": {"role": "assistant", "content": []}}},
    ]
    assert summarize(events).retries == 1


def test_cli_json_shape_and_totals(tmp_path):
    crash = tmp_path / "crash.json"
    crash.write_text(json.dumps(json.loads((GOLDEN / "crash-persisted.json").read_text()) + json.loads((GOLDEN / "crash-closers.json").read_text())))
    code, out, err = run_env("stats", str(LOOP), str(crash), "--json")
    assert code == 0, err
    doc = orjson.loads(out)
    assert doc["shape"] == 1 and set(doc) == {"shape", "sessions", "total"}
    loop, cr = doc["sessions"]
    assert {k: loop[k] for k in LOOP_STATS} == LOOP_STATS
    assert loop["path"] == str(LOOP) and loop["version"] == 4 and loop["projection"] is False
    # the crash log plus dsh's closers: deploy (c1) was started, echo (c2) never was; both results are errors
    assert cr["toolCalls"] == {"deploy": {"calls": 1, "errors": 1}, "echo": {"calls": 0, "errors": 1}}
    assert (cr["turns"], cr["steps"], cr["modelCalls"], cr["durationMs"]) == (1, 1, 1, 4)
    tot = doc["total"]
    assert tot["sessions"] == 2
    assert (tot["turns"], tot["steps"], tot["modelCalls"], tot["retries"], tot["cancellations"]) == (5, 6, 7, 1, 1)
    assert tot["toolCalls"] == {"deploy": {"calls": 1, "errors": 1}, "echo": {"calls": 1, "errors": 1}}
    assert tot["tokensByModel"] == {"mock/mock": {"inputTokens": 50, "outputTokens": 22}}
    assert tot["durationMs"] == 44


def test_cli_plain_table():
    code, out, _ = run_env("stats", str(FIXTURES / "v4" / "loop"))
    assert code == 0
    lines = out.decode().splitlines()
    assert lines[0].split("\t")[:6] == ["session", "turns", "steps", "calls", "retries", "cancelled"]
    assert lines[1].split("\t") == ["loop-0001", "4", "5", "6", "1", "1", "1 (0 err)", "40", "17", "40 ms"]
    assert "# tokens by model" in lines


def test_zstd_reads_the_same():
    code, out, _ = run_env("stats", str(FIXTURES / "v4" / "loop-zstd"), "--json")
    assert code == 0
    s = orjson.loads(out)["sessions"][0]
    assert {k: s[k] for k in LOOP_STATS} == LOOP_STATS


def test_projection_has_no_duration(tmp_path):
    rows = [r for r in (orjson.loads(x) for x in (FIXTURES / "v4/loop/session.v4.jsonl").read_bytes().splitlines())]
    for r in rows[1:]:
        del r["seq"], r["time"]
    p = tmp_path / "session.v4.jsonl"
    p.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    code, out, _ = run_env("stats", str(p), "--json")
    s = orjson.loads(out)["sessions"][0]
    assert s["projection"] is True and s["timed"] is False and s["durationMs"] == 0
    assert (s["turns"], s["modelCalls"], s["retries"]) == (4, 6, 1)
    code, out, _ = run_env("stats", str(p))
    assert out.decode().splitlines()[1].endswith("\t-")


def test_total_of_nothing_is_zero():
    assert total_stats([])["sessions"] == 0


@requires_corpus
def test_corpus_llm_retry_log():
    p = CORPUS / "v4" / "zq0929" / "snapshots__session__empty-response-retry__writer.expected.jsonl"
    if not p.exists():
        pytest.skip(f"{p.name} not in this corpus")
    from dshlog.read.session import open_log

    with open_log(p, strict=False) as log:
        s = summarize(r.event for r in log.stored())
    assert (s.retries, s.attempts, s.model_calls, s.title) == (1, 1, 2, "This prompt first receives an")


@requires_corpus
@pytest.mark.parametrize("path", corpus_files(), ids=corpus_ids())
def test_stats_and_tail_run_on_every_corpus_file(path):
    for cmd in (["stats", "--json"], ["tail", "-n", "3"]):
        code, out, err = run_env(*cmd, str(path))
        assert b"Traceback" not in err and b"internal error" not in err, (cmd, err.decode(errors="replace"))
        assert code in (ExitCode.OK, ExitCode.UNSUPPORTED, ExitCode.CORRUPT), (cmd, code, err.decode(errors="replace"))
        if cmd[0] == "stats" and code == 0:
            doc = orjson.loads(out)
            assert doc["total"]["events"] == doc["sessions"][0]["events"]


def _all_logs():
    from conftest import FIXTURES, corpus_files

    return [FIXTURES / "v0" / "text-turn" / "session.jsonl", FIXTURES / "v1" / "text-turn" / "session.v1.jsonl"] + [
        p for p in corpus_files() if p.suffix == ".jsonl"
    ]


def test_summary_of_whole_packed_rows_equals_the_expanded_one():
    """`info`/`stats` read v0/v1 packed rows whole; the counts must equal those of the expanded events."""
    from dshlog.errors import DshlogError
    from dshlog.read.session import open_log
    from dshlog.model.summary import summarize

    checked = 0
    for path in _all_logs():
        try:
            with open_log(path, strict=False) as a:
                expanded = summarize(r.event for r in a.stored()).as_dict()
            with open_log(path, strict=False) as b:
                compact = summarize(b.stored_runs()).as_dict()
        except DshlogError:
            continue
        assert compact == expanded, path
        checked += 1
    assert checked >= 2


def test_stats_and_the_transcript_read_an_attempts_usage_alike():
    """An attempt's stream is read by one rule (``model.summary.stream_usage``) for both counters:
    the last usage chunk whose usage is an object; a record that is not a chunk is no usage."""
    from dshlog.model import transcript as tr

    def usage(value):
        return {"type": "chunk", "time": 1, "chunk": {"type": "usage", "usage": value}}

    stream = [usage({"inputTokens": 3, "outputTokens": 1}), usage("damaged"),
              {"type": "text-chunks", "chunk": {"type": "usage", "usage": {"inputTokens": 99}}}]
    events = [
        {"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}},
        {"type": "step/start", "seq": 1, "time": 2, "data": {"turn": 1, "step": 1}},
        {"type": "assistant/attempt", "seq": 2, "time": 3, "data": {"turn": 1, "step": 1, "stream": stream}},
        {"type": "turn/end", "seq": 3, "time": 4, "data": {"turn": 1, "outcome": {"kind": "error"}}},
    ]
    shown = [i.tokens for i in tr.transcript(events) if isinstance(i, tr.StepUsage)]
    assert summarize(events).tokens == {"inputTokens": 3, "outputTokens": 1}
    assert shown == [summarize(events).tokens]

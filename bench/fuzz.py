"""Mutation fuzzer for every dshlog command: hostile and broken logs end cleanly.

    python bench/fuzz.py [--seconds 300] [--seed N]      (make fuzz)

Starting from the shared corpus and the project's fixtures, each input is
mutated (bytes flipped, truncated, lines duplicated, dropped, reordered or
spliced from another log, fields retyped to strings, huge ints, floats, nulls,
deep nesting...) and given to every command.  A command must end with a result
or a clean error (exit 0, 2-6 or 10): never exit 1 ("internal error"), never a
traceback, never a hang, and never a partial output file.  The run prints the
counts that RELIABILITY.md quotes; any failure is written to ``bench/out/fuzz``
for replay and makes the exit status 1.

``tests/test_fuzz.py`` drives the same mutators and checks through hypothesis.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import orjson

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DSHLOG_SHARED", ROOT.parent / "shared"))
ALLOWED = {0, 2, 3, 4, 5, 6, 10}
MAX_SEED_BYTES = 256 << 10
TIMEOUT_S = 20


def seed_files() -> list[Path]:
    """Corpus files and fixtures small enough to mutate quickly."""
    roots = [SHARED / "corpus", ROOT / "fixtures"]
    out = []
    for r in roots:
        if not r.is_dir():
            continue
        for p in sorted(r.rglob("*")):
            if p.is_file() and p.suffix in (".jsonl", ".json", ".zstd") and not p.name.startswith("MANIFEST") \
                    and p.stat().st_size <= MAX_SEED_BYTES:
                out.append(p)
    return out


# ----------------------------------------------------------------------------- mutators

HOSTILE: list[Callable[[random.Random], Any]] = [
    lambda r: "str",
    lambda r: "",
    lambda r: None,
    lambda r: True,
    lambda r: 2**70,
    lambda r: -(2**63),
    lambda r: 2**53 + 1,
    lambda r: -1,
    lambda r: 1.5,
    lambda r: 1e300,
    lambda r: -0.0,
    lambda r: [],
    lambda r: {},
    lambda r: [None] * r.randint(1, 50),
    lambda r: "x" * r.randint(1, 100_000),
    lambda r: "\ud800",
    lambda r: "../../x",
    lambda r: "/etc/passwd",
    lambda r: f"@@DEEP{r.choice([10, 500, 1100, 3000, 100_000])}@@",  # spliced in as text after encoding
    lambda r: {"type": "text", "text": None},
    lambda r: [{"type": "tool-call", "id": 7, "name": None}],
]


_DEEP = __import__("re").compile(rb'"@@DEEP([0-9]+)@@"')


def _deepen(enc: bytes) -> bytes:
    """Replace a deep-nesting marker by that many nested arrays (too deep for any encoder)."""
    return _DEEP.sub(lambda m: b"[" * int(m.group(1)) + b"0" + b"]" * int(m.group(1)), enc)


def _paths(obj: Any, prefix: tuple = (), limit: int = 400) -> Iterator[tuple]:
    """Every (container path) inside a parsed JSON value, breadth-limited."""
    stack = [(prefix, obj)]
    n = 0
    while stack and n < limit:
        p, v = stack.pop()
        n += 1
        if isinstance(v, dict):
            for k, x in v.items():
                yield p + (k,)
                stack.append((p + (k,), x))
        elif isinstance(v, list):
            for i, x in enumerate(v[:20]):
                yield p + (i,)
                stack.append((p + (i,), x))


def _set(obj: Any, path: tuple, value: Any) -> None:
    for k in path[:-1]:
        obj = obj[k]
    obj[path[-1]] = value


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def m_flip(data: bytes, r: random.Random) -> bytes:
    if not data:
        return data
    b = bytearray(data)
    for _ in range(r.randint(1, 8)):
        i = r.randrange(len(b))
        b[i] = r.choice([b[i] ^ (1 << r.randrange(8)), r.randrange(256), 0x0A, 0x22, 0x7B, 0x5D])
    return bytes(b)


def m_truncate(data: bytes, r: random.Random) -> bytes:
    return data[: r.randrange(len(data) + 1)] if data else data


def m_duplicate(data: bytes, r: random.Random) -> bytes:
    ls = _lines(data)
    if not ls:
        return data
    i = r.randrange(len(ls))
    ls[i:i] = [ls[i]] * r.randint(1, 3)
    return b"".join(ls)


def m_drop(data: bytes, r: random.Random) -> bytes:
    ls = _lines(data)
    if len(ls) > 1:
        del ls[r.randrange(len(ls))]
    return b"".join(ls)


def m_reorder(data: bytes, r: random.Random) -> bytes:
    ls = _lines(data)
    if len(ls) > 2:
        i, j = r.randrange(len(ls)), r.randrange(len(ls))
        ls[i], ls[j] = ls[j], ls[i]
        if r.random() < 0.3:
            body = ls[1:]
            r.shuffle(body)
            ls[1:] = body
    return b"".join(ls)


def m_retype(data: bytes, r: random.Random) -> bytes:
    """Replace one field of one JSON line by a hostile value (a string where an object belongs...)."""
    ls = _lines(data)
    if not ls:
        return data
    for _ in range(10):
        i = r.randrange(len(ls))
        try:
            obj = orjson.loads(ls[i])
        except orjson.JSONDecodeError:
            continue
        paths = list(_paths(obj))
        value = r.choice(HOSTILE)(r)
        if not paths:
            obj = value
        else:
            _set(obj, r.choice(paths), value)
        try:
            enc = orjson.dumps(obj)
        except (TypeError, orjson.JSONEncodeError):
            import json as _json

            enc = _json.dumps(obj, ensure_ascii=False, allow_nan=True).encode("utf-8", "surrogatepass")
        ls[i] = _deepen(enc) + (b"\n" if ls[i].endswith(b"\n") else b"")
        return b"".join(ls)
    return data


def m_garbage(data: bytes, r: random.Random) -> bytes:
    ls = _lines(data)
    junk = r.choice([b"\x00" * 10, b"\xff\xfe", b"{", b"[]", b"null", b'{"type":"session"}', b"\x28\xb5\x2f\xfd", b"\r\n",
                     b'{"type":"turn/end","seq":999999,"time":1,"data":{}}', b"1e999", b'"\\ud800"'])
    ls.insert(r.randrange(len(ls) + 1), junk + (b"\n" if r.random() < 0.7 else b""))
    return b"".join(ls)


def m_splice(data: bytes, r: random.Random, others: list[bytes] | None = None) -> bytes:
    if not others:
        return data
    o = _lines(r.choice(others))
    ls = _lines(data)
    if not o:
        return data
    k = r.randint(1, min(5, len(o)))
    s = r.randrange(len(o) - k + 1)
    ls[r.randrange(len(ls) + 1):0] = o[s : s + k]
    return b"".join(ls)


MUTATORS: dict[str, Callable[..., bytes]] = {
    "flip": m_flip,
    "truncate": m_truncate,
    "duplicate": m_duplicate,
    "drop": m_drop,
    "reorder": m_reorder,
    "retype": m_retype,
    "garbage": m_garbage,
    "splice": m_splice,
}


def decoded(path: Path) -> tuple[bytes, bool]:
    """Plaintext of a seed and whether it was zstd (mutations apply to plaintext, then re-framed)."""
    raw = path.read_bytes()
    if raw.startswith(b"\x28\xb5\x2f\xfd"):
        import zstandard

        try:
            with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw), read_across_frames=True) as rd:
                return rd.read(), True
        except zstandard.ZstdError:
            return raw, False
    return raw, False


def reframe(plain: bytes, r: random.Random) -> bytes:
    """zstd container as dsh writes it: header frame, then frames of 1-3 lines; sometimes a torn last frame."""
    import zstandard

    c = zstandard.ZstdCompressor(write_checksum=True)
    ls = _lines(plain)
    out = [c.compress(ls[0])] if ls else []
    i = 1
    while i < len(ls):
        k = r.randint(1, 3)
        out.append(c.compress(b"".join(ls[i : i + k])))
        i += k
    data = b"".join(out)
    if r.random() < 0.2 and data:
        data = data[: r.randrange(len(data))]
    if r.random() < 0.1 and data:
        data = m_flip(data, r)
    return data


def mutate(seed: bytes, zstd: bool, ops: list[tuple[str, int]], others: list[bytes]) -> bytes:
    data = seed
    for name, s in ops:
        r = random.Random(s)
        fn = MUTATORS[name]
        data = fn(data, r, others) if name == "splice" else fn(data, r)
    if zstd:
        data = reframe(data, random.Random(len(ops) * 7919 + len(data)))
    return data


# ----------------------------------------------------------------------------- running commands

COMMANDS: list[tuple[str, list[str]]] = [
    ("events", ["events", "{f}"]),
    ("events --json", ["events", "--json", "{f}"]),
    ("info", ["info", "{f}"]),
    ("validate", ["validate", "{f}"]),
    ("surface", ["surface", "{f}"]),
    ("requests", ["requests", "{f}"]),
    ("rebuild", ["rebuild", "--request", "1", "{f}"]),
    ("repair", ["repair", "{f}"]),
    ("fork", ["fork", "{f}", "-o", "{o}"]),
    ("migrate --dry-run", ["migrate", "--dry-run", "--no-children", "{f}"]),
]


class Hang(Exception):
    """A command ran longer than TIMEOUT_S."""


def _alarm(signum: int, frame: Any) -> None:
    raise Hang()


def run_command(argv: list[str]) -> tuple[int, bytes, bytes]:
    """Run ``dshlog argv`` in this process with captured stdout/stderr; returns (code, out, err)."""
    from dshlog.cli import main

    out, err = io.BytesIO(), io.BytesIO()
    o_w = io.TextIOWrapper(out, encoding="utf-8", errors="surrogateescape", write_through=True)
    e_w = io.TextIOWrapper(err, encoding="utf-8", errors="surrogateescape", write_through=True)
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIMEOUT_S)
    try:
        with contextlib.redirect_stdout(o_w), contextlib.redirect_stderr(e_w):
            code = int(main(argv))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    o_w.flush()
    e_w.flush()
    return code, out.getvalue(), err.getvalue()


def _traceback(argv: list[str]) -> str:
    """Where an internal error came from (rerun with --debug, which re-raises)."""
    import traceback

    try:
        run_command(["--debug", *argv])
    except Exception:
        return "\n" + "".join(traceback.format_exc().splitlines(keepends=True)[-12:])
    return ""


def check_input(data: bytes, name: str, workdir: Path) -> list[str]:
    """Give ``data`` (stored as ``name``) to every command; return the failures (empty when all is well)."""
    failures: list[str] = []
    d = Path(tempfile.mkdtemp(dir=workdir))
    f = d / name
    f.write_bytes(data)
    outdir = d / "out"
    outdir.mkdir()
    for label, tmpl in COMMANDS:
        o = outdir / f"{label.split()[0]}.jsonl"
        argv = [a.replace("{f}", str(f)).replace("{o}", str(o)) for a in tmpl]
        before = sorted(os.listdir(d))
        try:
            code, out, err = run_command(argv)
        except Hang:
            failures.append(f"{label}: no answer within {TIMEOUT_S}s")
            continue
        if code not in ALLOWED:
            failures.append(f"{label}: exit {code}: {err.decode('utf-8', 'replace')[-300:]}{_traceback(argv)}")
        if b"Traceback" in err or b"internal error" in err:
            failures.append(f"{label}: traceback / internal error: {err.decode('utf-8', 'replace')[-300:]}")
        if f.read_bytes() != data:
            failures.append(f"{label}: the input file changed")
        if sorted(os.listdir(d)) != before:
            failures.append(f"{label}: files appeared beside the input: {sorted(set(os.listdir(d)) - set(before))}")
        produced = os.listdir(outdir)
        if code != 0 and produced:
            failures.append(f"{label}: exit {code} but left {produced}")
        if code == 0 and label == "fork":
            if produced != [o.name]:
                failures.append(f"fork: unexpected output files {produced}")
            else:
                c2, _, e2 = run_command(["validate", str(o)])
                if c2 == 1 or b"Traceback" in e2:
                    failures.append("fork: its child does not even read back")
        for p in produced:
            os.unlink(outdir / p)
    import shutil

    shutil.rmtree(d, ignore_errors=True)
    return failures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=300.0)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--report", type=Path, default=None, help="append a JSON line of counts to this file")
    a = ap.parse_args(argv)
    rng = random.Random(a.seed)
    seeds = seed_files()
    plain = [decoded(p) for p in seeds]
    others = [p for p, _ in plain]
    work = Path(tempfile.mkdtemp(prefix="dshlog-fuzz-"))
    fail_dir = ROOT / "bench" / "out" / "fuzz"
    inputs = runs = failures = 0
    by_mut: dict[str, int] = {k: 0 for k in MUTATORS}
    end = time.monotonic() + a.seconds
    while time.monotonic() < end:
        i = rng.randrange(len(seeds))
        ops = [(rng.choice(list(MUTATORS)), rng.randrange(2**32)) for _ in range(rng.randint(1, 4))]
        for op, _ in ops:
            by_mut[op] += 1
        data = mutate(plain[i][0], plain[i][1], ops, others)
        found = check_input(data, seeds[i].name, work)
        inputs += 1
        runs += len(COMMANDS)
        if found:
            failures += 1
            fail_dir.mkdir(parents=True, exist_ok=True)
            (fail_dir / f"fail-{a.seed}-{inputs}-{seeds[i].name}").write_bytes(data)
            print(f"FAIL {seeds[i].name} {ops}: {len(found)} checks, first: {found[0][:3000]}", file=sys.stderr)
    counts = {"test": "fuzz (bench/fuzz.py)", "seed": a.seed, "seconds": a.seconds, "seeds": len(seeds),
              "inputs": inputs, "commandRuns": runs, "failures": failures, "mutations": by_mut}
    print(json.dumps(counts, indent=2))
    if a.report:
        a.report.parent.mkdir(parents=True, exist_ok=True)
        with open(a.report, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(counts) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

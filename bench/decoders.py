"""How fast can a line of a v4 log be decoded?  The candidate decoders, side by side.

    python bench/decoders.py FILE... [--repeat 3]

Each candidate reads the whole file line by line in this process (CPU seconds, the
best of ``--repeat`` runs, interleaved so load on a shared machine hits all alike):

* ``orjson``: ``orjson.loads`` of every line (dshlog's reader today; the bench floor);
* ``msgspec envelope``: a ``msgspec.Struct`` of ``type, seq, time, surfaceOp,
  sourceEventSeqs`` with ``data`` kept as ``msgspec.Raw`` (the lazy envelope floor);
* ``msgspec envelope + typed stream``: the same, plus ``data.stream`` decoded into
  tagged ``Struct`` records whose field types and safe-integer bounds are checked in
  C (what ``validate`` checks of a stream in Python), the rest of ``data`` raw;
* ``msgspec dicts``: ``msgspec.json.decode`` into builtins (``orjson``'s job, for scale);
* ``simdjson lazy``: ``pysimdjson``'s parser, reading ``type`` and ``seq`` of each line
  (its documents are lazy proxies; ``data`` is never materialised).

Optional libraries that are not installed are skipped with a note.
"""

# No `from __future__ import annotations`: msgspec reads the Structs' annotations, local names included.

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import orjson


def _candidates() -> dict[str, Callable[[list[bytes]], None]]:
    out: dict[str, Callable[[list[bytes]], None]] = {}

    def orjson_loop(lines: list[bytes]) -> None:
        loads = orjson.loads
        for line in lines:
            loads(line)

    out["orjson"] = orjson_loop
    try:
        import msgspec
    except ImportError:
        print("decoders: msgspec not installed; its rows are skipped", file=sys.stderr)
    else:
        safe = 2**53 - 1
        SafeInt = Annotated[int, msgspec.Meta(ge=-safe, le=safe)]
        Count = Annotated[int, msgspec.Meta(ge=0, le=safe)]
        Strings = Annotated[list[str], msgspec.Meta(min_length=1)]
        NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]

        class Envelope(msgspec.Struct):
            type: str
            seq: int | None = None
            time: int | None = None
            surfaceOp: str | dict | None = None
            sourceEventSeqs: list[int] | None = None
            data: msgspec.Raw = msgspec.Raw()

        class Chunk(msgspec.Struct, forbid_unknown_fields=False):
            type: str

        class ChunkRecord(msgspec.Struct, tag_field="type", tag="chunk", forbid_unknown_fields=True):
            time: SafeInt
            chunk: Chunk

        class TextRun(msgspec.Struct, tag_field="type", tag="text-chunks", forbid_unknown_fields=True):
            time0: SafeInt
            index: Count
            dt: list[SafeInt]
            texts: Strings

        class ReasoningRun(msgspec.Struct, tag_field="type", tag="reasoning-chunks", forbid_unknown_fields=True):
            time0: SafeInt
            index: Count
            dt: list[SafeInt]
            texts: Strings

        class ToolRun(msgspec.Struct, tag_field="type", tag="tool-call-chunks", forbid_unknown_fields=True):
            time0: SafeInt
            index: Count
            dt: list[SafeInt]
            id: NonEmpty
            args: Strings
            name: NonEmpty | None = None

        class Data(msgspec.Struct):
            stream: list[ChunkRecord | TextRun | ReasoningRun | ToolRun] | None = None

        class TypedEnvelope(msgspec.Struct):
            type: str
            seq: int | None = None
            time: int | None = None
            surfaceOp: str | dict | None = None
            sourceEventSeqs: list[int] | None = None
            data: Data | None = None

        envelope = msgspec.json.Decoder(Envelope).decode
        typed = msgspec.json.Decoder(TypedEnvelope).decode
        builtins = msgspec.json.Decoder().decode

        def envelope_loop(lines: list[bytes]) -> None:
            for line in lines:
                envelope(line)

        def typed_loop(lines: list[bytes]) -> None:
            for line in lines:
                try:
                    typed(line)
                except msgspec.ValidationError:
                    pass  # a stream the C check cannot prove: the exact checks would run

        def builtins_loop(lines: list[bytes]) -> None:
            for line in lines:
                builtins(line)

        out["msgspec envelope"] = envelope_loop
        out["msgspec envelope + typed stream"] = typed_loop
        out["msgspec dicts"] = builtins_loop
    try:
        import simdjson
    except ImportError:
        print("decoders: pysimdjson not installed; its row is skipped", file=sys.stderr)
    else:
        parser = simdjson.Parser()

        def simdjson_loop(lines: list[bytes]) -> None:
            parse = parser.parse
            for line in lines:
                doc: Any = parse(line)
                doc["type"], doc["seq"]
                del doc  # a parser's document must be released before the next parse

        out["simdjson lazy"] = simdjson_loop
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)
    candidates = _candidates()
    for path in a.files:
        lines = path.read_bytes().splitlines()[1:]  # the header is not an event
        best = dict.fromkeys(candidates, float("inf"))
        for _ in range(a.repeat):
            for name, run in candidates.items():
                start = time.process_time()
                run(lines)
                best[name] = min(best[name], time.process_time() - start)
        floor = best["orjson"]
        print(f"{path} ({path.stat().st_size / 1e6:.1f} MB, {len(lines)} events)")
        for name, seconds in best.items():
            print(f"  {name:34s} {seconds:6.3f} s  {seconds / floor:5.2f}x orjson")
    return 0


if __name__ == "__main__":
    sys.exit(main())

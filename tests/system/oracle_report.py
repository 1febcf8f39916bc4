"""Agreement of dshlog with dsh's own code, per command and per corpus era, as Markdown.

Runs exactly the comparisons of ``test_oracle.py`` (same inputs, same matching rules,
from ``oracle_support``) and counts, instead of failing:

    .venv/bin/python tests/system/oracle_report.py                 # table on stdout
    .venv/bin/python tests/system/oracle_report.py -o fidelity.md  # ... into a file
    .venv/bin/python tests/system/oracle_report.py --update docs/fidelity.md  # between its markers
    .venv/bin/python tests/system/oracle_report.py --details d.jsonl  # every verdict, one JSON line each

A disagreement listed in ``test_oracle.DOCUMENTED_DEVIATIONS`` (the one table of
them) is counted apart, as documented; every other disagreement is a bug.

The era is the first directory under the corpus (v0, v0-enveloped, ...); the
project's fixtures and the generated damage are their own rows.  Nothing is cached:
every run asks the oracle and dshlog afresh.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from system import oracle_support as S  # noqa: E402
from system.test_oracle import DOCUMENTED_DEVIATIONS  # noqa: E402

BEGIN, END = "<!-- fidelity:begin -->", "<!-- fidelity:end -->"

ERA_ORDER = ["v0-early", "v0", "v0-enveloped", "v0-wrapped", "v1", "v2", "v3", "v4", "v4-wrapped", "v5", "fixtures", "generated"]
COLUMNS = [*S.COMMANDS, "fork@SEQ", "prefix@SEQ"]


def _column(command: str, at: int | None) -> str:
    return command if at is None else f"{command}@SEQ"


def _cell(agree: int, total: int, documented: int = 0) -> str:
    if total == 0:
        return "–"
    text = f"{agree}/{total}" + ("" if agree == total else f" ({100 * agree // total}%)")
    return text + (f" +{documented}d" if documented else "")


def render(agree: Counter, total: Counter, inputs: Counter, sha256: str, seconds: float, documented: Counter | None = None) -> str:
    """The Markdown report: one row per era, one column per command, ``agreeing/compared``."""
    documented = documented if documented is not None else Counter()
    eras = [e for e in ERA_ORDER if inputs[e]] + sorted(e for e in inputs if e not in ERA_ORDER)
    lines = [
        "# dshlog against dsh's own code",
        "",
        f"Each cell: comparisons where dshlog's answer is exactly dsh's / comparisons made "
        f"(oracle sha256 `{sha256[:16]}`, {sum(total.values())} comparisons in {seconds:.0f} s); "
        "`+Nd`: N of the others are documented deviations. "
        "`fork@SEQ` and `prefix@SEQ` fork a few v4 logs at every seq.",
        "",
        "| era | logs | " + " | ".join(COLUMNS) + " | all |",
        "|---|---:|" + "---:|" * (len(COLUMNS) + 1),
    ]
    for era in eras + ["all"]:
        pick = (lambda k: True) if era == "all" else (lambda k, e=era: k[0] == e)
        cells = []
        for col in COLUMNS:
            a = sum(v for k, v in agree.items() if pick(k) and k[1] == col)
            t = sum(v for k, v in total.items() if pick(k) and k[1] == col)
            d = sum(v for k, v in documented.items() if pick(k) and k[1] == col)
            cells.append(_cell(a, t, d))
        a = sum(v for k, v in agree.items() if pick(k))
        t = sum(v for k, v in total.items() if pick(k))
        d = sum(v for k, v in documented.items() if pick(k))
        n = sum(inputs.values()) if era == "all" else inputs[era]
        name = "**all**" if era == "all" else era
        lines.append(f"| {name} | {n} | " + " | ".join(cells) + f" | {_cell(a, t, d)} |")
    bugs = sum(total.values()) - sum(agree.values()) - sum(documented.values())
    lines += ["", f"Undocumented disagreements: {bugs}."]
    return "\n".join(lines) + "\n"


def update(path: Path, table: str) -> None:
    """Rewrite the part of ``path`` between the fidelity markers with ``table``."""
    text = path.read_text(encoding="utf-8")
    head, sep, rest = text.partition(BEGIN)
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise SystemExit(f"oracle_report: {path} lacks the {BEGIN} / {END} markers")
    body = table.split("\n", 2)[2]  # the figures, without the report's own title
    path.write_text(f"{head}{BEGIN}\n{body}{END}{tail}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", type=Path, help="write the Markdown table here (default: stdout)")
    ap.add_argument("--update", type=Path, help="rewrite the figures between the fidelity markers of this file")
    ap.add_argument("--details", type=Path, help="write every verdict as one JSON line here")
    args = ap.parse_args(argv)
    reason = S.unavailable()
    if reason:
        print(f"oracle_report: {reason}", file=sys.stderr)
        return 2
    started = time.monotonic()
    inputs = S.all_inputs()
    by_id = {inp.id: inp for inp in inputs}
    workdir = S.new_workdir()
    details = args.details.open("w", encoding="utf-8") if args.details else None
    try:
        S.materialize(inputs, workdir)
        oracle = S.Oracle()
        try:
            comparisons = S.cases(inputs)
            for command, input_id, at in comparisons:
                for request in S.Comparer.requests(command, by_id[input_id], at):
                    oracle.submit(request)
            comparer = S.Comparer(oracle, workdir)
            agree: Counter = Counter()
            total: Counter = Counter()
            documented: Counter = Counter()
            for command, input_id, at in comparisons:
                inp = by_id[input_id]
                verdict = comparer.compare(command, inp, at)
                key = (inp.era, _column(command, at))
                total[key] += 1
                agree[key] += verdict.agree
                case = (_column(command, at).replace("SEQ", str(at)), input_id)
                documented[key] += (not verdict.agree) and case in DOCUMENTED_DEVIATIONS
                if details is not None:
                    details.write(json.dumps({"command": command, "at": at, "input": input_id, "era": inp.era, "agree": verdict.agree,
                                              "difference": verdict.difference, "oracle": verdict.oracle, "dshlog": verdict.dshlog},
                                             ensure_ascii=False) + "\n")
        finally:
            oracle.close()
    finally:
        if details is not None:
            details.close()
        shutil.rmtree(workdir, ignore_errors=True)
    text = render(agree, total, Counter(inp.era for inp in inputs), oracle.sha256, time.monotonic() - started, documented)
    if args.update:
        update(args.update, text)
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    elif not args.update:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

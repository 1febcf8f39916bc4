"""Time every dshlog command on large generated logs against a parse-only floor.

    python bench/run.py [--sizes 30M,120M,480M] [--shapes default,no-compaction,huge,many-small]
                        [--repeat 1] [--no-write]

For each size and shape the generated v4 and v0 logs (plain and ``.zstd``; missing
ones are generated first, see ``bench/generate.py``) are fed to each command in a
fresh subprocess, and the wall time and peak RSS of that child are recorded.  The
*floor* is a plain Python loop that reads the same file line by line and
``orjson.loads`` every line and nothing else: no tool written in Python can read
the log faster, so ``wall / floor`` says how much the tool adds on top of parsing.
A second floor, when ``msgspec`` is installed, decodes only the envelope of each
line (``type, seq, time, surfaceOp, sourceEventSeqs``) and keeps ``data`` as raw
bytes: what a reader that parses payloads lazily would pay at least.

Shapes (``bench/generate.py``): ``default`` compacts every few dozen steps, so the
model's view stays small; ``no-compaction`` never compacts, so it grows with the
log (both run every command); ``huge`` has a few tool outputs of tens of MB (the
reading commands); ``many-small`` is a root of many small sessions (the commands
that take many sessions: ``migrate -R`` on a copy, ``validate`` and ``stats`` of
every session, ``ls --grep``).

Commands the installed ``dshlog`` does not have yet (per ``dshlog --help``) are
listed as n/a, so the runner can be re-run unchanged as commands land.  The table
goes to stdout and into ``BENCHMARKS.md`` between the ``bench:begin``/``bench:end``
markers (the rest of that file is left alone).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import generate as gen  # noqa: E402
import startup as start  # noqa: E402
from targets import STARTUP_RATIO  # noqa: E402

PY = sys.executable
DSHLOG = [PY, "-m", "dshlog.cli"] if not (Path(PY).parent / "dshlog").exists() else [str(Path(PY).parent / "dshlog")]
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"
FLOOR_CODE = "import orjson,sys\nwith open(sys.argv[1],'rb') as f:\n    for line in f: orjson.loads(line)\n"
FLOOR_ZSTD_CODE = (
    "import orjson,sys,zstandard\nwith open(sys.argv[1],'rb') as f:\n"
    "    r=zstandard.ZstdDecompressor().stream_reader(f,read_across_frames=True)\n"
    "    import io\n    for line in io.BufferedReader(r,1<<20): orjson.loads(line)\n"
)
# The lazy envelope pass: the fields every command looks at are decoded, `data` stays bytes.
ENVELOPE = (
    "import msgspec,sys\n"
    "class Envelope(msgspec.Struct):\n"
    "    type: str\n    seq: int | None = None\n    time: int | None = None\n"
    "    surfaceOp: str | dict | None = None\n    sourceEventSeqs: list[int] | None = None\n"
    "    data: msgspec.Raw = msgspec.Raw()\n"
    "decode = msgspec.json.Decoder(Envelope).decode\n"
)
MSGSPEC_CODE = ENVELOPE + "with open(sys.argv[1],'rb') as f:\n    for line in f: decode(line)\n"
MSGSPEC_ZSTD_CODE = ENVELOPE + (
    "import io,zstandard\nwith open(sys.argv[1],'rb') as f:\n"
    "    r=zstandard.ZstdDecompressor().stream_reader(f,read_across_frames=True)\n"
    "    for line in io.BufferedReader(r,1<<20): decode(line)\n"
)
# The floors over a whole root: every session file below it (many-small)
MANY_FLOOR_CODE = (
    "import glob,io,orjson,sys,zstandard\n"
    "for p in sorted(glob.glob(sys.argv[1]+'/*/*/session*')):\n"
    "    with open(p,'rb') as f:\n"
    "        src=io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(f,read_across_frames=True),1<<20) if p.endswith('.zstd') else f\n"
    "        for line in src: orjson.loads(line)\n"
)
FLOOR_LABEL = "floor (orjson per line)"
MSGSPEC_LABEL = "floor (msgspec envelope, data raw)"
SHAPES = ("default", "no-compaction", "huge", "many-small")

# (label, argv after `dshlog`, needs command, target ratio to floor for v4; every v0 reader: V0_TARGET)
READ_COMMANDS = [
    ("validate", ["validate", "{f}"], "validate", 2.0),
    ("info", ["info", "{f}"], "info", 1.0),
    ("events", ["events", "{f}"], "events", 1.0),
    ("events --json", ["events", "--json", "{f}"], "events", 1.0),
    ("events --v4 --json", ["events", "--v4", "--json", "{f}"], "events", None),  # dsh's view: no target of its own
    ("stats", ["stats", "{f}"], "stats", 1.0),
    ("tail", ["tail", "{f}"], "tail", 1.0),
    ("surface", ["surface", "{f}"], "surface", 1.5),
    ("requests", ["requests", "{f}"], "requests", 1.5),
    ("rebuild --request last", ["rebuild", "--request", "{last}", "{f}"], "rebuild", 1.5),
]
V0_TARGET = 3.0
MIGRATE_TARGET = 4.0
ZSTD_TARGET = 1.2
RSS_LIMIT_MB = 64.0
RSS_GROWTH = 0.20


@dataclass
class Row:
    size: str
    input: str  # v4, v4.zstd, v0, v0.zstd; many-small: v0+v4, v0+v4.zstd
    command: str
    wall: float | None = None
    cpu: float | None = None
    rss_mb: float | None = None
    floor: float | None = None
    floor_cpu: float | None = None
    plain_wall: float | None = None  # the same command on the plain file (zstd rows)
    target: float | None = None
    note: str = ""
    checks: list[tuple[str, bool]] = field(default_factory=list)
    shape: str = "default"

    @property
    def ratio(self) -> float | None:
        return self.wall / self.floor if self.wall and self.floor else None

    @property
    def cpu_ratio(self) -> float | None:
        return self.cpu / self.floor_cpu if self.cpu and self.floor_cpu else None

    @property
    def zratio(self) -> float | None:
        return self.wall / self.plain_wall if self.wall and self.plain_wall else None


# Children run in a user's ordinary environment: bytecode caching on, stdout buffered.
CHILD_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PYTHONPROFILEIMPORTTIME")}


# Measuring peak RSS needs a small parent.  Linux records the memory of the process that
# forks a child into the child's ru_maxrss (the copied address space counts until exec), so
# children forked by this runner reported at least the runner's own RSS: every command,
# and jq, "peaked" at the runner's 39 MB once it had generated the 480M inputs.  Each
# measured command is therefore spawned by a fresh `python -S -I` launcher (about 8 MB),
# which times it and reports its wait4 figures on a pipe.
LAUNCHER = """
import os, sys, time
out = int(sys.argv[1])
t = time.perf_counter()
pid = os.posix_spawnp(sys.argv[2], sys.argv[2:], os.environ)
_, status, ru = os.wait4(pid, 0)
wall = time.perf_counter() - t
os.write(out, f"{wall} {ru.ru_maxrss} {ru.ru_utime + ru.ru_stime} {os.waitstatus_to_exitcode(status)}".encode())
"""


def run_child(argv: list[str], stdout=subprocess.DEVNULL) -> tuple[float, float, int, str, float]:
    """(wall seconds, peak RSS MiB, exit code, stderr tail, CPU seconds) of one child process."""
    r, w = os.pipe()
    try:
        p = subprocess.Popen(
            [PY, "-S", "-I", "-c", LAUNCHER, str(w), *argv],
            stdout=stdout, stderr=subprocess.PIPE, cwd=ROOT, env=CHILD_ENV, pass_fds=(w,),
        )
        os.close(w)
        w = -1
        err = p.stderr.read() if p.stderr else b""
        p.wait()
        with open(r, "rb", closefd=False) as fh:
            report = fh.read().split()
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
    if len(report) != 4:
        raise RuntimeError(f"launcher failed for {argv}: {err[-300:]!r}")
    wall, maxrss_kb, cpu, rc = float(report[0]), int(report[1]), float(report[2]), int(report[3])
    tail = err.decode("utf-8", "replace").strip().splitlines()
    return wall, maxrss_kb / 1024.0, rc, tail[-1] if tail else "", cpu


def best(argv: list[str], repeat: int) -> tuple[float, float, int, str, float]:
    """Fastest wall time of ``repeat`` runs (and the lowest CPU time, highest peak RSS)."""
    runs = [run_child(argv) for _ in range(repeat)]
    return min(r[0] for r in runs), max(r[1] for r in runs), runs[-1][2], runs[-1][3], min(r[4] for r in runs)


def available_commands() -> set[str]:
    out = subprocess.run(DSHLOG + ["--help"], capture_output=True, text=True, cwd=ROOT).stdout
    cmds = set()
    in_cmds = False
    for line in out.splitlines():
        if line.strip().startswith("Commands:"):
            in_cmds = True
            continue
        if in_cmds:
            m = re.match(r"^\s{2}([a-z][a-z0-9-]*)\b", line)
            if m:
                cmds.add(m.group(1))
    return cmds


def last_request(path: Path) -> int | None:
    """Number of settlements (assistant/message + assistant/attempt) = the last request's number."""
    p = subprocess.run(DSHLOG + ["info", "--json", str(path)], capture_output=True, cwd=ROOT)
    try:
        return int(orjson.loads(p.stdout)["summary"]["modelCalls"])
    except Exception:  # noqa: BLE001 - a benchmark without the count still runs
        return None


def machine() -> str:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 1048576:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return f"`{' '.join(platform.uname())}`; CPU {cpu}, {os.cpu_count()} cores{mem}; Python {platform.python_version()}"


def has_msgspec() -> bool:
    """Whether the interpreter the children run has msgspec (the envelope floor needs it)."""
    return subprocess.run([PY, "-c", "import msgspec"], capture_output=True).returncode == 0


def shape_of(name: str, args) -> gen.Shape:
    if name == "no-compaction":
        return gen.Shape(compaction=False)
    if name == "huge":
        return gen.Shape(huge=args.huge)
    return gen.DEFAULT_SHAPE


def run_floors(size: str, shape: str, paths: dict, args, rows: list[Row]) -> tuple[dict[str, float], dict[str, float]]:
    """The orjson floor of every input (the ratios' denominator), then the lazy envelope floor."""
    floors: dict[str, float] = {}
    fcpu: dict[str, float] = {}
    for v in (4, 0):
        for kind in ("plain", "zstd"):
            f = paths[v][kind]
            label = f"v{v}" + (".zstd" if kind == "zstd" else "")
            code = FLOOR_CODE if kind == "plain" else FLOOR_ZSTD_CODE
            wall, rss, rc, _, cpu = best([PY, "-c", code, str(f)], args.repeat)
            floors[label] = wall
            fcpu[label] = cpu
            rows.append(Row(size, label, FLOOR_LABEL, wall, cpu, rss, floor=floors[f"v{v}"], floor_cpu=fcpu[f"v{v}"], shape=shape))
    for v in (4, 0):
        for kind in ("plain", "zstd"):
            label = f"v{v}" + (".zstd" if kind == "zstd" else "")
            row = Row(size, label, MSGSPEC_LABEL, floor=floors[f"v{v}"], floor_cpu=fcpu[f"v{v}"], shape=shape)
            rows.append(row)
            if not args.msgspec:
                row.note = "skipped: msgspec is not installed"
                continue
            code = MSGSPEC_CODE if kind == "plain" else MSGSPEC_ZSTD_CODE
            row.wall, row.rss_mb, rc, err, row.cpu = best([PY, "-c", code, str(paths[v][kind])], args.repeat)
            if rc != 0:
                row.note = f"exit {rc}: {err[:80]}"
    return floors, fcpu


def migrate_copy(src: Path, argv_tail: list[str], args, row: Row, place) -> None:
    """``dshlog migrate`` on a fresh copy per run (``place(tmp)`` makes it and returns the argument)."""
    tmp = Path(tempfile.mkdtemp(prefix="migrate-", dir=args.data))
    try:
        walls, cpus, rss = [], [], 0.0
        for i in range(args.repeat):
            target = place(tmp / str(i))
            w, r, rc, err, c = run_child(DSHLOG + ["migrate", *argv_tail, str(target)])
            walls.append(w)
            cpus.append(c)
            rss = max(rss, r)
            if rc != 0:
                row.note = f"exit {rc}: {err[:80]}"
            shutil.rmtree(tmp / str(i), ignore_errors=True)
        row.wall, row.rss_mb, row.cpu = min(walls), rss, min(cpus)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def bench_size(size: str, shape_name: str, args, cmds: set[str], rows: list[Row]) -> None:
    shape = shape_of(shape_name, args)
    if shape.huge and gen.parse_size(size) < sum(shape.huge):
        rows.append(Row(size, "v4, v0", "(every reader)", shape=shape_name, note=f"skipped: the huge results ({'+'.join(gen.size_label(n) for n in shape.huge)}) exceed {size}"))
        return
    paths = {v: gen.generate(args.data, size, v, args.seed, shape=shape) for v in (4, 0)}
    floors, fcpu = run_floors(size, shape_name, paths, args, rows)
    jq = shutil.which("jq")
    last = last_request(paths[4]["plain"]) if "rebuild" in cmds else None
    for v in (4, 0):
        if v == 0 and args.v0_sizes is not None and size not in args.v0_sizes:
            continue  # v0 read commands skipped at this size (migrate still runs)
        for label, argv, need, target in READ_COMMANDS:
            plain_wall = None
            for kind in ("plain", "zstd"):
                ilabel = f"v{v}" + (".zstd" if kind == "zstd" else "")
                row = Row(size, ilabel, label, floor=floors[f"v{v}"], floor_cpu=fcpu[f"v{v}"], target=target if v == 4 else V0_TARGET, shape=shape_name)
                if need not in cmds:
                    row.note = "n/a"
                    rows.append(row)
                    continue
                n = last if v == 4 else last_request(paths[v]["plain"])
                argv2 = [a.replace("{f}", str(paths[v][kind])).replace("{last}", str(n)) for a in argv]
                wall, rss, rc, err, cpu = best(DSHLOG + argv2, args.repeat)
                row.wall, row.rss_mb, row.cpu = wall, rss, cpu
                if rc not in (0,):
                    row.note = f"exit {rc}: {err[:80]}"
                if kind == "plain":
                    plain_wall = wall
                else:
                    row.plain_wall = plain_wall
                rows.append(row)
    if shape.huge:
        return  # the huge shape is about the readers
    # migrate: v0 -> v4 into a temporary copy of the session directory
    for kind in ("plain", "zstd"):
        row = Row(size, "v0" + (".zstd" if kind == "zstd" else ""), "migrate", floor=floors["v0"], floor_cpu=fcpu["v0"], target=MIGRATE_TARGET, shape=shape_name)
        if "migrate" not in cmds:
            row.note = "n/a"
            rows.append(row)
            continue
        src = paths[0][kind]

        def place(base: Path, src: Path = src) -> Path:
            dst = base / gen.PROJECT / src.parent.name
            dst.mkdir(parents=True)
            shutil.copy2(src, dst / src.name)
            return dst

        migrate_copy(src, [], args, row, place)
        if kind == "zstd":
            row.plain_wall = next((r.wall for r in rows if r.size == size and r.shape == shape_name and r.command == "migrate" and r.input == "v0"), None)
        rows.append(row)
    if jq:
        wall, rss, rc, _, cpu = best([jq, "-c", "select(.surfaceOp)", str(paths[4]["plain"])], args.repeat)
        rows.append(Row(size, "v4", "jq -c 'select(.surfaceOp)'", wall, cpu, rss, floor=floors["v4"], floor_cpu=fcpu["v4"], shape=shape_name))
    else:
        rows.append(Row(size, "v4", "jq -c 'select(.surfaceOp)'", note="jq not installed", shape=shape_name))


def many_label(manifest: dict) -> str:
    return f"{len(manifest['sessions'])} small"


def bench_many(args, cmds: set[str], rows: list[Row]) -> None:
    """The commands that take many sessions, on a root of many small ones (plain and zstd roots)."""
    manifest = gen.generate_many(args.data, args.many_count, args.seed)
    mp = gen.many_paths(args.data, args.many_count, args.seed)
    size, shape = many_label(manifest), "many-small"
    floor = fcpu = None
    plain_walls: dict[str, float | None] = {}
    for kind in ("plain", "zstd"):
        root = mp[kind]
        ilabel = "v0+v4" + (".zstd" if kind == "zstd" else "")
        wall, rss, rc, _, cpu = best([PY, "-c", MANY_FLOOR_CODE, str(root)], args.repeat)
        if kind == "plain":
            floor, fcpu = wall, cpu
        rows.append(Row(size, ilabel, FLOOR_LABEL + ", every file", wall, cpu, rss, floor=floor, floor_cpu=fcpu, shape=shape))
        dirs = sorted(str(d) for d in root.glob("*/*") if d.is_dir())
        batch = [
            ("validate (every session)", ["validate", *dirs], "validate"),
            ("stats (every session)", ["stats", *dirs], "stats"),
            (f"ls --grep {manifest['marker']}", ["ls", "--grep", manifest["marker"], str(root)], "ls"),
            ("migrate -R (a copy)", None, "migrate"),
        ]
        for label, argv, need in batch:
            row = Row(size, ilabel, label, floor=floor, floor_cpu=fcpu, shape=shape)
            rows.append(row)
            if need not in cmds:
                row.note = "n/a"
                continue
            if argv is None:

                def place(base: Path, root: Path = root) -> Path:
                    shutil.copytree(root, base)
                    return base

                migrate_copy(root, ["-R"], args, row, place)
            else:
                row.wall, row.rss_mb, rc, err, row.cpu = best(DSHLOG + argv, args.repeat)
                if rc != 0:
                    row.note = f"exit {rc}: {err[:80]}"
            if kind == "plain":
                plain_walls[label] = row.wall
            else:
                row.plain_wall = plain_walls.get(label)


def evaluate(rows: list[Row], sizes: list[str]) -> list[tuple[str, str, str]]:
    """Per-row statuses and the cross-row targets: (target, measured, met/missed)."""
    out: list[tuple[str, str, str]] = []
    for r in rows:
        if r.wall is None or r.note.startswith("exit") or r.command.startswith(("floor", "jq")):
            continue
        if r.target is not None and r.ratio is not None:
            r.checks.append((f"≤ {r.target:g}× floor", r.ratio <= r.target))
        if r.zratio is not None:
            r.checks.append((f"≤ {ZSTD_TARGET:g}× plain", r.zratio <= ZSTD_TARGET))
        if r.rss_mb is not None and not r.command.startswith("rebuild"):
            r.checks.append((f"RSS ≤ {RSS_LIMIT_MB:g} MB", r.rss_mb <= RSS_LIMIT_MB))
    # RSS growth from the smallest to the largest measured size, within one shape
    for shape in dict.fromkeys(r.shape for r in rows):
        measured = [s for s in sizes if any(r.size == s and r.shape == shape and r.rss_mb for r in rows)]
        if len(measured) < 2:
            continue
        lo, hi = measured[0], measured[-1]
        for r in rows:
            if r.shape != shape or r.size != hi or r.rss_mb is None or r.command.startswith(("floor", "rebuild", "jq")) or r.note.startswith("exit"):
                continue
            base = next((b for b in rows if b.shape == shape and b.size == lo and b.input == r.input and b.command == r.command and b.rss_mb), None)
            if base:
                g = r.rss_mb / base.rss_mb - 1
                out.append((f"RSS growth {lo}→{hi} < {RSS_GROWTH:.0%}: {r.command} ({r.input}, {shape})", f"{g:+.0%}", "met" if g < RSS_GROWTH else "missed"))
    for shape in dict.fromkeys(r.shape for r in rows):
        for size in sizes:
            jq = next((r for r in rows if r.shape == shape and r.size == size and r.command.startswith("jq") and r.wall), None)
            surf = next((r for r in rows if r.shape == shape and r.size == size and r.command == "surface" and r.input == "v4" and r.wall), None)
            if jq and surf:
                out.append((f"surface faster than jq ({size}, {shape})", f"{surf.wall:.2f} s vs {jq.wall:.2f} s", "met" if surf.wall < jq.wall else "missed"))
    return out


def envelope_comparison(rows: list[Row]) -> list[tuple[str, str, str]]:
    """The lazy envelope floor against the orjson floor on each plain input (information, not a target)."""
    out = []
    for r in rows:
        if r.command != MSGSPEC_LABEL or r.wall is None or r.note or r.input.endswith(".zstd"):
            continue
        base = next((b for b in rows if b.command == FLOOR_LABEL and (b.size, b.shape, b.input) == (r.size, r.shape, r.input) and b.wall), None)
        if base:
            out.append(
                (f"msgspec envelope pass vs orjson floor ({r.size}, {r.shape}, {r.input})",
                 f"{r.wall:.2f} s vs {base.wall:.2f} s wall ({r.wall / base.wall:.2f}×), CPU {r.cpu:.2f} vs {base.cpu:.2f} s, RSS {r.rss_mb:.0f} vs {base.rss_mb:.0f} MB", "–")
            )
    return out


def startup(repeat: int) -> list[tuple[str, str, str]]:
    """The start-up rows (``bench/startup.py`` measures them, against its target): CPU time over the orjson import."""
    out = []
    for r in start.measure(max(repeat, 5)):
        if r.ratio is not None:
            out.append((f"`{r.label}` ≤ {STARTUP_RATIO:g}× `{start.BASELINE}` (CPU)",
                        f"{r.median * 1e3:.0f} ms, {r.ratio:.2f}×", "met" if r.met else "missed"))
    return out


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def fmt(v: float | None, spec: str, suffix: str = "") -> str:
    return "" if v is None else format(v, spec) + suffix


def table(rows: list[Row]) -> str:
    lines = [
        "| size | shape | input | command | wall s | CPU s | × floor | × floor (CPU) | × plain | peak RSS MB | targets (on wall time) |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        if r.note and r.wall is None:
            status = r.note
        else:
            status = "; ".join(f"{name} {'met' if ok else '**missed**'}" for name, ok in r.checks)
            if r.note:
                status = (r.note + "; " + status).strip("; ")
        lines.append(
            f"| {r.size} | {r.shape} | {r.input} | {r.command} | {fmt(r.wall, '.2f')} | {fmt(r.cpu, '.2f')} | {fmt(r.ratio, '.2f')} | {fmt(r.cpu_ratio, '.2f')} | {fmt(r.zratio, '.2f')} | {fmt(r.rss_mb, '.0f')} | {status} |"
        )
    return "\n".join(lines)


def inputs(sizes: list[str], shapes: list[str], args) -> list[str]:
    """One phrase per generated input the run used: sizes on disk, and for a root what it holds."""
    files = []
    for shape in shapes:
        if shape == "many-small":
            mp = gen.many_paths(args.data, args.many_count, args.seed)
            if mp["manifest"].exists():
                m = orjson.loads(mp["manifest"].read_bytes())
                ss = m["sessions"]
                zbytes = sum(f.stat().st_size for f in mp["zstd"].rglob("session*"))
                files.append(
                    f"many-small: {len(ss)} sessions ({sum(s['version'] == 0 for s in ss)} v0, {sum(s['version'] == 4 for s in ss)} v4, "
                    f"{sum(bool(s['parent']) for s in ss)} subagent children, {len({s['cwd'] for s in ss})} projects, "
                    f"{len({s['createdAt'] // gen.DAY_MS for s in ss})} days), {sum(s['bytes'] for s in ss) / 1e6:.1f} MB plain, {zbytes / 1e6:.1f} MB zstd"
                )
            continue
        for size in sizes:
            for v in (4, 0):
                p = gen.session_paths(args.data, size, v, args.seed, shape_of(shape, args))
                if p["plain"].exists():
                    files.append(f"{size} {shape} v{v}: {p['plain'].stat().st_size / 1e6:.1f} MB plain, {p['zstd'].stat().st_size / 1e6:.1f} MB zstd")
    return files


def report(rows: list[Row], extra: list[tuple[str, str, str]], sizes: list[str], shapes: list[str], args) -> str:
    now = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        BEGIN,
        f"Measured {now} by `bench/run.py {' '.join(x for x in sys.argv[1:] if x != '--no-write')}`.",
        "",
        f"Machine: {machine()}.",
        "",
        f"Load average when the run started: {args.load_start}; when it ended: {_loadavg()} (a shared machine inflates wall times; CPU s is the child's user+system time).",
        "Children run with the user's environment minus `PYTHONDONTWRITEBYTECODE`/`PYTHONUNBUFFERED`, as an ordinary shell would.",
        "`× floor` is the wall-time ratio to the orjson loop over the same plain file (`× floor (CPU)` the same for CPU time); `× plain` compares with the same command on the plain file.",
        "",
        f"Inputs (`bench/generate.py`, seed {args.seed}): " + "; ".join(inputs(sizes, shapes, args)) + ".",
        "",
        table(rows),
        "",
        "| target | measured | status |",
        "|---|---|---|",
    ]
    parts += [f"| {a} | {b} | {'**missed**' if c == 'missed' else c} |" for a, b, c in extra]
    parts.append(END)
    return "\n".join(parts)


def write_benchmarks(text: str) -> None:
    path = ROOT / "BENCHMARKS.md"
    old = path.read_text() if path.exists() else "# Benchmarks\n\n" + BEGIN + "\n" + END + "\n"
    if BEGIN in old and END in old:
        new = old[: old.index(BEGIN)] + text + old[old.index(END) + len(END) :]
    else:
        new = old.rstrip() + "\n\n" + text + "\n"
    path.write_text(new)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="30M,120M")
    ap.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated, of {', '.join(SHAPES)} (default: all)")
    ap.add_argument("--huge-sizes", default=gen.HUGE_DEFAULT, help="the huge shape's tool outputs (default %(default)s); sizes below their sum skip it")
    ap.add_argument("--many-count", type=int, default=1000, help="sessions in the many-small root (default %(default)s)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per measurement; the fastest wall time is kept")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--data", type=Path, default=gen.DEFAULT_OUT)
    ap.add_argument("--no-write", action="store_true", help="print the table, leave BENCHMARKS.md alone")
    ap.add_argument("--v0-sizes", default=None, help="sizes at which the v0 read commands run (default: all); migrate always runs")
    a = ap.parse_args(argv)
    sizes = [s.strip().upper() for s in a.sizes.split(",") if s.strip()]
    shapes = [s.strip() for s in a.shapes.split(",") if s.strip()]
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        ap.error(f"unknown shape(s) {', '.join(unknown)}; choose from {', '.join(SHAPES)}")
    a.huge = tuple(gen.parse_size(t) for t in a.huge_sizes.split(",") if t.strip())
    a.v0_sizes = None if a.v0_sizes is None else [s.strip().upper() for s in a.v0_sizes.split(",") if s.strip()]
    a.data.mkdir(parents=True, exist_ok=True)
    a.load_start = _loadavg()
    a.msgspec = has_msgspec()
    if not a.msgspec:
        print("bench: msgspec is not installed; the envelope floor is skipped", file=sys.stderr)
    cmds = available_commands()
    rows: list[Row] = []
    for size in sizes:
        for shape in shapes:
            if shape != "many-small":
                print(f"bench: {size} {shape} ...", file=sys.stderr)
                bench_size(size, shape, a, cmds, rows)
    if "many-small" in shapes:
        print(f"bench: many-small ({a.many_count}) ...", file=sys.stderr)
        bench_many(a, cmds, rows)
    extra = evaluate(rows, sizes) + envelope_comparison(rows) + startup(a.repeat)
    text = report(rows, extra, sizes, shapes, a)
    print(text)
    if not a.no_write:
        write_benchmarks(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Time every dshlog command on large generated logs against a parse-only floor and against dsh's own code.

    python bench/run.py [--sizes 30M,120M] [--shapes default,no-compaction] [--repeat 3]
                        [--data DIR] [--shared ../shared] [--envelope] [--no-write]

For each size and shape the generated logs (plain and ``.zstd``; missing ones are generated
first, see ``bench/generate.py``) are fed to each command in a fresh subprocess, and the CPU
time (the child's user + system, helpers included) and peak RSS of that child are recorded.
Three references run beside the commands, on the same plain file:

* the *floor*: a Python loop that ``orjson.loads`` every line and does nothing else; no tool
  written in Python reads the log faster, so ``× floor`` is what a command adds to parsing;
* *dsh's own code*: ``../shared/oracle/oracle.mjs`` under Node, with the output-free
  ``restore`` (dsh's read-only open) and ``migrate-len`` (dsh's migration with the v4
  encoding) that ``../shared/tools/patch_oracle.py`` adds to a copy of it; ``× dsh`` compares
  each command with the dsh work it does (:data:`READ_COMMANDS`, :data:`MIGRATE`).  The
  floor row's ``× dsh`` compares the two parse floors (dsh's ``header``: read, split,
  ``JSON.parse`` of every line);
* for start-up, ``python -c 'import orjson'`` (``bench/startup.py`` measures those rows).

Each round runs every measurement of a size and shape once, references and commands
interleaved, so a burst of load on the shared machine falls on both sides of a ratio; a ratio
is the median of its per-round ratios, of CPU times but for ``× plain`` (:func:`x_plain`).  The targets are ``bench/targets.py``'s, and each row
is marked against them.  The table goes to stdout and between the ``bench:begin`` and
``bench:end`` markers of ``BENCHMARKS.md`` (the rest of that file is written by hand).

Shapes (``bench/generate.py``): ``default`` compacts every few dozen steps (v4 and v0);
``no-compaction`` never compacts, so the model's view grows with the log (v4); ``huge`` has a
few tool outputs of tens of MB (v4 and v0, the reading commands); ``many-small`` is a root of
many small sessions (the commands that take many sessions).  ``make bench`` runs the first two.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import generate as gen  # noqa: E402 - found through the path set just above
import startup as start  # noqa: E402
import targets  # noqa: E402

PY = sys.executable
DSHLOG = [PY, "-m", "dshlog.cli"] if not (Path(PY).parent / "dshlog").exists() else [str(Path(PY).parent / "dshlog")]
BENCHMARKS = ROOT / "BENCHMARKS.md"
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"
#: dsh's code and the tool that makes it time-able, beside the project (``--shared``)
SHARED = ROOT.parent / "shared"
ORACLE, PATCHER = Path("oracle") / "oracle.mjs", Path("tools") / "patch_oracle.py"
#: Node's heap: dsh holds the whole log (and its migration) in memory
NODE = ["node", "--max-old-space-size=8192"]

FLOOR_CODE = "import orjson,sys\nwith open(sys.argv[1],'rb') as f:\n    for line in f: orjson.loads(line)\n"
FLOOR_ZSTD_CODE = (
    "import io,orjson,sys,zstandard\nwith open(sys.argv[1],'rb') as f:\n"
    "    r=zstandard.ZstdDecompressor().stream_reader(f,read_across_frames=True)\n"
    "    for line in io.BufferedReader(r,1<<20): orjson.loads(line)\n"
)
# The lazy envelope pass (--envelope): the fields every command looks at are decoded, `data` stays bytes.
ENVELOPE = (
    "import msgspec,sys\n"
    "class Envelope(msgspec.Struct):\n"
    "    type: str\n    seq: int | None = None\n    time: int | None = None\n"
    "    surfaceOp: str | dict | None = None\n    sourceEventSeqs: list[int] | None = None\n"
    "    data: msgspec.Raw = msgspec.Raw()\n"
    "decode = msgspec.json.Decoder(Envelope).decode\n"
)
ENVELOPE_CODE = ENVELOPE + "with open(sys.argv[1],'rb') as f:\n    for line in f: decode(line)\n"
ENVELOPE_ZSTD_CODE = ENVELOPE + (
    "import io,zstandard\nwith open(sys.argv[1],'rb') as f:\n"
    "    r=zstandard.ZstdDecompressor().stream_reader(f,read_across_frames=True)\n"
    "    for line in io.BufferedReader(r,1<<20): decode(line)\n"
)
# The floor over a whole root: every session file below it (many-small)
MANY_FLOOR_CODE = (
    "import glob,io,orjson,sys,zstandard\n"
    "for p in sorted(glob.glob(sys.argv[1]+'/*/*/session*')):\n"
    "    with open(p,'rb') as f:\n"
    "        src=io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(f,read_across_frames=True),1<<20) if p.endswith('.zstd') else f\n"
    "        for line in src: orjson.loads(line)\n"
)
FLOOR_LABEL = "floor (orjson per line)"
ENVELOPE_LABEL = "floor (msgspec envelope, data raw)"
SHAPES = ("default", "no-compaction", "huge", "many-small")
DEFAULT_SHAPES = ("default", "no-compaction")
#: The format versions each shape is measured in.
VERSIONS = {"default": (4, 0), "no-compaction": (4,), "huge": (4, 0)}


@dataclass(frozen=True)
class Command:
    """A dshlog command as the table names it, and the dsh work it does.

    ``argv`` follows ``dshlog``: ``{f}`` is the input file, ``{n}`` the number of its last
    request, ``{dir}`` a fresh copy of its session directory.  ``dsh`` is the patched
    oracle's command that does the same work (``None``: nothing of dsh's compares).
    """

    label: str
    argv: tuple[str, ...]
    need: str
    dsh: str | None


# Every reading command is compared with dsh's read-only open (parse, decode each row, the v4
# restore validated or an older log migrated in memory): dsh shows nothing of a log it has not
# restored, and dshlog's readers answer the same question of it.
READ_COMMANDS = (
    Command("validate", ("validate", "{f}"), "validate", "restore"),
    Command("info", ("info", "{f}"), "info", "restore"),
    Command("events", ("events", "{f}"), "events", "restore"),
    Command("events --json", ("events", "--json", "{f}"), "events", "restore"),
    Command("events --v4", ("events", "--v4", "{f}"), "events", "restore"),
    Command("stats", ("stats", "{f}"), "stats", "restore"),
    Command("tail", ("tail", "{f}"), "tail", "restore"),
    Command("surface", ("surface", "{f}"), "surface", "restore"),
    Command("requests", ("requests", "{f}"), "requests", "restore"),
    Command("rebuild --request N", ("rebuild", "--request", "{n}", "{f}"), "rebuild", "restore"),
)
#: A v0 log migrated into a copy of its session directory, against dsh's migration with the v4 encoding.
MIGRATE = Command("migrate", ("migrate", "{dir}"), "migrate", "migrate-len")
#: The parse floor of dsh's driver (the unpatched bundle's command), the floor row's reference.
DSH_FLOOR = "header"

# Children run in a user's ordinary environment: bytecode caching on, stdout buffered.  dshlog's
# cache of per-session results is off: every round must do the work (a warm cache answers
# validate, info, stats and surface of an unchanged log at start-up cost), and bench/cache.py
# measures the cache itself.
CHILD_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PYTHONPROFILEIMPORTTIME")}
CHILD_ENV["DSHLOG_NO_CACHE"] = "1"

# Measuring peak RSS needs a small parent.  Linux records the memory of the process that
# forks a child into the child's ru_maxrss (the copied address space counts until exec), so
# children forked by this runner reported at least the runner's own RSS.  Each measured
# command is therefore spawned by a fresh `python -S -I` launcher (about 8 MB), which times
# it and reports its wait4 figures on a pipe.
LAUNCHER = """
import os, sys, time
out = int(sys.argv[1])
t = time.perf_counter()
pid = os.posix_spawnp(sys.argv[2], sys.argv[2:], os.environ)
_, status, ru = os.wait4(pid, 0)
wall = time.perf_counter() - t
os.write(out, f"{wall} {ru.ru_maxrss} {ru.ru_utime + ru.ru_stime} {os.waitstatus_to_exitcode(status)}".encode())
"""


@dataclass
class Run:
    """One child's figures (CPU and wall seconds, peak RSS MiB) and what went wrong, if anything."""

    cpu: float
    wall: float
    rss_mb: float
    problem: str = ""


def run_child(argv: Sequence[str], *, want_ok: bool = False) -> Run:
    """Run ``argv`` under the launcher; ``want_ok``: its stdout must be the oracle's ``{"status":"ok"}``."""
    r, w = os.pipe()
    try:
        p = subprocess.Popen(
            [PY, "-S", "-I", "-c", LAUNCHER, str(w), *argv],
            stdout=subprocess.PIPE if want_ok else subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, env=CHILD_ENV, pass_fds=(w,),
        )
        os.close(w)
        w = -1
        out, err = p.communicate()
        with open(r, "rb", closefd=False) as fh:
            report = fh.read().split()
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
    if len(report) != 4:
        raise RuntimeError(f"launcher failed for {argv}: {err[-300:]!r}")
    wall, maxrss_kb, cpu, rc = float(report[0]), int(report[1]), float(report[2]), int(report[3])
    lines = err.decode("utf-8", "replace").strip().splitlines()
    problem = "" if rc == 0 else f"exit {rc}: {(lines[-1] if lines else '')[:80]}"
    if want_ok and not problem:
        try:
            status = orjson.loads(out).get("status")
        except orjson.JSONDecodeError:
            status = out[:40].decode("utf-8", "replace")
        if status != "ok":
            problem = f"dsh: {status}"
    return Run(cpu, wall, maxrss_kb / 1024.0, problem)


@dataclass
class Job:
    """One measurement, repeated once per round: a fixed argv, or ``prepare`` making a fresh input in a scratch dir."""

    argv: Sequence[str] = ()
    prepare: Callable[[Path], Sequence[str]] | None = None
    want_ok: bool = False
    runs: list[Run] = field(default_factory=list)

    def run(self, scratch: Path) -> None:
        if self.prepare is None:
            self.runs.append(run_child(self.argv, want_ok=self.want_ok))
            return
        work = Path(tempfile.mkdtemp(prefix="run-", dir=scratch))
        try:
            self.runs.append(run_child(self.prepare(work), want_ok=self.want_ok))
        finally:
            shutil.rmtree(work, ignore_errors=True)

    @property
    def cpu(self) -> float | None:
        return statistics.median(r.cpu for r in self.runs) if self.runs else None

    @property
    def rss_mb(self) -> float | None:
        return max(r.rss_mb for r in self.runs) if self.runs else None

    @property
    def problem(self) -> str:
        return next((r.problem for r in self.runs if r.problem), "")


def ratio(a: Job | None, b: Job | None, *, wall: bool = False) -> float | None:
    """Median over the rounds of ``a``'s CPU time (``wall``: wall time) over ``b``'s in the same round, neither failed."""
    if a is None or b is None:
        return None
    pairs = [(x.wall / y.wall if wall else x.cpu / y.cpu) for x, y in zip(a.runs, b.runs)
             if (y.wall if wall else y.cpu) > 0 and not x.problem and not y.problem]
    return statistics.median(pairs) if pairs else None


def x_plain(zstd: Job | None, plain: Job | None) -> float | None:
    """A ``.zstd`` run against the plain one, in wall time: the forked decoder runs on the second
    core beside the parse, so what a person waits for is the measure, not the CPU both cores spent."""
    return ratio(zstd, plain, wall=True)


def interleave(jobs: Sequence[Job], rounds: int, scratch: Path) -> None:
    """Every job once per round, in order: references and commands share each round's load."""
    for _ in range(rounds):
        for job in jobs:
            job.run(scratch)


@dataclass
class Row:
    """One line of the table."""

    size: str
    input: str
    command: str
    cpu: float | None = None
    x_floor: float | None = None
    x_dsh: float | None = None
    x_plain: float | None = None
    rss_mb: float | None = None
    note: str = ""
    checks: list[targets.Check] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        missed = [c.name for c in self.checks if not c.met]
        said = "**missed** " + ", ".join(missed) if missed else "met" if self.checks else ""
        return "; ".join(x for x in (self.note, said) if x)


@dataclass
class Dsh:
    """dsh's own code, runnable: the patched bundle, or why the ``× dsh`` column is empty."""

    oracle: Path | None
    why_not: str = ""
    version: str = ""

    def argv(self, command: str, path: Path) -> list[str]:
        assert self.oracle is not None
        return [*NODE, str(self.oracle), command, str(path)]


def find_dsh(shared: Path, data: Path) -> Dsh:
    """Patch a copy of dsh's bundle into ``data`` (never into the project), or say why it cannot run."""
    node = shutil.which(NODE[0])
    if node is None:
        return Dsh(None, "node is not installed")
    if not (shared / ORACLE).is_file() or not (shared / PATCHER).is_file():
        return Dsh(None, f"dsh's code is not at {shared / ORACLE} (with {PATCHER})")
    out = data / "oracle-bench.mjs"
    done = subprocess.run([PY, str(shared / PATCHER), str(shared / ORACLE), str(out)], capture_output=True, text=True)
    if done.returncode != 0:
        return Dsh(None, f"{PATCHER} failed: {done.stderr.strip()[-120:]}")
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    return Dsh(out, version=version)


def available_commands() -> set[str]:
    """The commands the installed dshlog has (per ``--help``); the others are listed as n/a."""
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
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


def machine() -> str:
    """CPU model, cores, memory and the interpreters: what the figures were taken on."""
    cpu = "?"
    try:
        cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("model name")), "?")
        mem = f", {int(Path('/proc/meminfo').read_text().split()[1]) / 1048576:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        mem = ""
    return f"{platform.system()} {platform.machine()}, {cpu}, {os.cpu_count()} cores{mem}, Python {platform.python_version()}"


def shape_of(name: str, args: argparse.Namespace) -> gen.Shape:
    if name == "no-compaction":
        return gen.Shape(compaction=False)
    if name == "huge":
        return gen.Shape(huge=args.huge)
    return gen.DEFAULT_SHAPE


def input_label(version: int, shape: str) -> str:
    """The table's input column: the format version, and the shape unless it is the default."""
    return f"v{version}" + ("" if shape == "default" else f" {shape}")


def session_copy(src: Path) -> Callable[[Path], Sequence[str]]:
    """A fresh copy of ``src``'s session directory in dsh's layout, migrated there (``migrate`` writes)."""

    def prepare(work: Path) -> Sequence[str]:
        dst = work / gen.PROJECT / src.parent.name
        dst.mkdir(parents=True)
        shutil.copy2(src, dst / src.name)
        return [*DSHLOG, *(a.replace("{dir}", str(dst)) for a in MIGRATE.argv)]

    return prepare


def bench_size(size: str, shape_name: str, args: argparse.Namespace, cmds: set[str], dsh: Dsh, rows: list[Row]) -> None:
    """Every command of one size and shape, interleaved with its floor and dsh's code over ``args.repeat`` rounds."""
    shape = shape_of(shape_name, args)
    versions = [v for v in VERSIONS[shape_name] if v == 4 or args.v0_sizes is None or size in args.v0_sizes]
    if shape.huge and gen.parse_size(size) < sum(shape.huge):
        rows.append(Row(size, shape_name, "(every reader)", note=f"skipped: the huge results ({'+'.join(gen.size_label(n) for n in shape.huge)}) exceed {size}"))
        return
    paths = {v: gen.generate(args.data, size, v, args.seed, shape=shape) for v in versions}
    jobs: dict[tuple[int, str, str], Job] = {}  # (version, what, plain|zstd)
    for v in versions:
        plain, packed = paths[v]["plain"], paths[v]["zstd"]
        jobs[v, FLOOR_LABEL, "plain"] = Job([PY, "-c", FLOOR_CODE, str(plain)])
        jobs[v, FLOOR_LABEL, "zstd"] = Job([PY, "-c", FLOOR_ZSTD_CODE, str(packed)])
        if args.envelope:
            jobs[v, ENVELOPE_LABEL, "plain"] = Job([PY, "-c", ENVELOPE_CODE, str(plain)])
            jobs[v, ENVELOPE_LABEL, "zstd"] = Job([PY, "-c", ENVELOPE_ZSTD_CODE, str(packed)])
        if dsh.oracle is not None:
            for what in (DSH_FLOOR, "restore", *((MIGRATE.dsh,) if v != 4 and MIGRATE.dsh and not shape.huge else ())):
                jobs[v, f"dsh {what}", "plain"] = Job(dsh.argv(what, plain), want_ok=True)
        n = last_request(plain) if "rebuild" in cmds else None
        for c in READ_COMMANDS:
            if c.need in cmds:
                for kind in ("plain", "zstd"):
                    f = str(paths[v][kind])
                    jobs[v, c.label, kind] = Job([*DSHLOG, *(a.replace("{f}", f).replace("{n}", str(n)) for a in c.argv)])
        if v != 4 and not shape.huge and MIGRATE.need in cmds:
            for kind in ("plain", "zstd"):
                jobs[v, MIGRATE.label, kind] = Job(prepare=session_copy(paths[v][kind]))
    scratch = Path(tempfile.mkdtemp(prefix="bench-", dir=args.data))
    try:
        interleave(list(jobs.values()), args.repeat, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    for v in versions:
        label = input_label(v, shape_name)
        floor = jobs[v, FLOOR_LABEL, "plain"]
        refs = [FLOOR_LABEL, *([ENVELOPE_LABEL] if args.envelope else [])]
        for what in refs:
            rows.append(Row(size, label, what, jobs[v, what, "plain"].cpu, ratio(jobs[v, what, "plain"], floor),
                            ratio(jobs[v, what, "plain"], jobs.get((v, f"dsh {DSH_FLOOR}", "plain"))) if what == FLOOR_LABEL else None,
                            x_plain(jobs[v, what, "zstd"], jobs[v, what, "plain"]), _max_rss(jobs[v, what, "plain"], jobs[v, what, "zstd"]),
                            note=jobs[v, what, "plain"].problem or jobs[v, what, "zstd"].problem))
        for what in ("restore", *((MIGRATE.dsh,) if v != 4 and not shape.huge else ())):
            job = jobs.get((v, f"dsh {what}", "plain"))
            if job is not None:
                rows.append(Row(size, label, f"dsh {what} (node)", job.cpu, ratio(job, floor), rss_mb=job.rss_mb, note=job.problem))
        for c in (*READ_COMMANDS, *((MIGRATE,) if v != 4 and not shape.huge else ())):
            plain_job, zstd_job = jobs.get((v, c.label, "plain")), jobs.get((v, c.label, "zstd"))
            if plain_job is None or zstd_job is None:
                rows.append(Row(size, label, c.label, note="n/a"))
                continue
            ref = jobs.get((v, f"dsh {c.dsh}", "plain"))
            row = Row(size, label, c.label, plain_job.cpu, ratio(plain_job, floor), ratio(plain_job, ref), x_plain(zstd_job, plain_job),
                      _max_rss(plain_job, zstd_job), note=plain_job.problem or zstd_job.problem and f".zstd {zstd_job.problem}")
            if not row.note:
                row.checks = targets.checks(c.label, size, f"v{v}", x_dsh=row.x_dsh, x_floor=row.x_floor, x_plain=row.x_plain, rss_mb=row.rss_mb)
            rows.append(row)


def _max_rss(*jobs: Job) -> float | None:
    """The larger peak of a command's plain and ``.zstd`` runs: the RSS target holds for both."""
    peaks = [j.rss_mb for j in jobs if j.rss_mb is not None]
    return max(peaks) if peaks else None


def bench_many(args: argparse.Namespace, cmds: set[str], rows: list[Row]) -> None:
    """The commands that take many sessions, on a root of many small ones (plain and zstd roots), interleaved."""
    manifest = gen.generate_many(args.data, args.many_count, args.seed)
    mp = gen.many_paths(args.data, args.many_count, args.seed)
    size, label = f"{len(manifest['sessions'])} small", "v0+v4"
    batch: list[tuple[str, list[str] | None, str]] = []
    jobs: dict[tuple[str, str], Job] = {}
    for kind in ("plain", "zstd"):
        root = mp[kind]
        jobs[FLOOR_LABEL, kind] = Job([PY, "-c", MANY_FLOOR_CODE, str(root)])
        dirs = sorted(str(d) for d in root.glob("*/*") if d.is_dir())
        batch = [
            ("validate (every session)", ["validate", *dirs], "validate"),
            ("stats (every session)", ["stats", *dirs], "stats"),
            (f"ls --grep {manifest['marker']}", ["ls", "--grep", manifest["marker"], str(root)], "ls"),
            ("migrate -R (a copy)", None, "migrate"),
        ]
        for what, argv, need in batch:
            if need not in cmds:
                continue
            if argv is not None:
                jobs[what, kind] = Job([*DSHLOG, *argv])
                continue

            def prepare(work: Path, root: Path = root) -> Sequence[str]:
                shutil.copytree(root, work / "root")
                return [*DSHLOG, "migrate", "-R", str(work / "root")]

            jobs[what, kind] = Job(prepare=prepare)
    scratch = Path(tempfile.mkdtemp(prefix="bench-", dir=args.data))
    try:
        interleave(list(jobs.values()), args.repeat, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    floor = jobs[FLOOR_LABEL, "plain"]
    for what in (FLOOR_LABEL + ", every file", *(b[0] for b in batch)):
        key = FLOOR_LABEL if what.startswith(FLOOR_LABEL) else what
        plain_job, zstd_job = jobs.get((key, "plain")), jobs.get((key, "zstd"))
        if plain_job is None or zstd_job is None:
            rows.append(Row(size, label, what, note="n/a"))
            continue
        row = Row(size, label, what, plain_job.cpu, ratio(plain_job, floor), None, x_plain(zstd_job, plain_job), _max_rss(plain_job, zstd_job),
                  note=plain_job.problem or zstd_job.problem)
        if key != FLOOR_LABEL and not row.note:
            row.checks = targets.checks(what, size, label, x_dsh=None, x_floor=None, x_plain=row.x_plain, rss_mb=row.rss_mb)
        rows.append(row)


def startup(repeat: int, rows: list[Row]) -> None:
    """The start-up rows: ``bench/startup.py`` measures them (CPU time over ``python -c 'import orjson'``, the floor)."""
    for r in start.measure(max(repeat, 5)):
        rows.append(Row("start-up", "", f"floor ({r.label})" if r.ratio is None else r.label, r.median,
                        1.0 if r.ratio is None else r.ratio, checks=targets.startup_check(r.ratio)))


def fmt(v: float | None, spec: str) -> str:
    return "" if v is None else format(v, spec)


def table(rows: list[Row]) -> str:
    """The one table: a row per command and input, CPU ratios against the floor, dsh and the plain file."""
    lines = [
        "| size | input | command | CPU s | × floor | × dsh | × plain | peak RSS MB | verdict |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    lines += [
        f"| {r.size} | {r.input} | {r.command} | {fmt(r.cpu, '.2f')} | {fmt(r.x_floor, '.2f')} | {fmt(r.x_dsh, '.2f')} | "
        f"{fmt(r.x_plain, '.2f')} | {fmt(r.rss_mb, '.0f')} | {r.verdict} |"
        for r in rows
    ]
    return "\n".join(lines)


def _commit() -> str | None:
    """The checkout's commit (short), or ``None`` outside a git checkout."""
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def report(rows: list[Row], dsh: Dsh, args: argparse.Namespace, argv: Sequence[str]) -> str:
    """What goes between the markers: when, where and how it was measured, then the table (no heading, no markers)."""
    now = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    node = f"; dsh under Node {dsh.version}" if dsh.oracle else ""
    commit = _commit()
    load = " ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "unknown"
    head = [
        f"Measured {now}{f' on commit {commit}' if commit else ''} by "
        f"`bench/run.py {' '.join(x for x in argv if x != '--no-write')}` "
        f"({args.repeat} interleaved round{'s' if args.repeat != 1 else ''}; a ratio is the median of its per-round ratios).",
        f"Machine: {machine()}{node}; load average at the end {load}.",
    ]
    if dsh.oracle is None:
        head.append(f"`× dsh` is empty: {dsh.why_not}.")
    return "\n".join([*head, "", table(rows)])


def write_benchmarks(text: str, path: Path = BENCHMARKS) -> None:
    """Replace what lies between the one pair of markers with ``text``; a file without exactly one pair is refused.

    Appending a second table (or a second pair of markers) is how the generated section
    once came to repeat itself: a file that does not hold one pair is left alone.
    """
    old = path.read_text(encoding="utf-8")
    if old.count(BEGIN) != 1 or old.count(END) != 1 or old.index(BEGIN) > old.index(END):
        raise SystemExit(f"bench: {path} must hold exactly one {BEGIN} ... {END} pair; the table was not written")
    new = old[: old.index(BEGIN) + len(BEGIN)] + "\n" + text.strip("\n") + "\n" + old[old.index(END):]
    path.write_text(new, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--sizes", default=",".join(targets.SIZES))
    ap.add_argument("--shapes", default=",".join(DEFAULT_SHAPES), help=f"comma-separated, of {', '.join(SHAPES)} (default: %(default)s)")
    ap.add_argument("--huge-sizes", default=gen.HUGE_DEFAULT, help="the huge shape's tool outputs (default %(default)s); sizes below their sum skip it")
    ap.add_argument("--many-count", type=int, default=1000, help="sessions in the many-small root (default %(default)s)")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved rounds; a ratio is the median of its per-round ratios (default %(default)s)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--data", type=Path, default=gen.DEFAULT_OUT, help="generated inputs (default %(default)s)")
    ap.add_argument("--shared", type=Path, default=SHARED, help="where dsh's oracle and its patcher are (default %(default)s)")
    ap.add_argument("--envelope", action="store_true", help="add the msgspec envelope floor (a lazy reader's least cost)")
    ap.add_argument("--no-write", action="store_true", help="print the table, leave BENCHMARKS.md alone")
    ap.add_argument("--v0-sizes", default=None, help="sizes at which the v0 commands run (default: all)")
    raw = sys.argv[1:] if argv is None else argv
    a = ap.parse_args(raw)
    sizes = [s.strip().upper() for s in a.sizes.split(",") if s.strip()]
    shapes = [s.strip() for s in a.shapes.split(",") if s.strip()]
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        ap.error(f"unknown shape(s) {', '.join(unknown)}; choose from {', '.join(SHAPES)}")
    a.huge = tuple(gen.parse_size(t) for t in a.huge_sizes.split(",") if t.strip())
    a.v0_sizes = None if a.v0_sizes is None else [s.strip().upper() for s in a.v0_sizes.split(",") if s.strip()]
    a.data.mkdir(parents=True, exist_ok=True)
    dsh = find_dsh(a.shared, a.data)
    if dsh.oracle is None:
        print(f"bench: × dsh stays empty: {dsh.why_not}", file=sys.stderr)
    cmds = available_commands()
    rows: list[Row] = []
    for size in sizes:
        for shape in shapes:
            if shape != "many-small":
                print(f"bench: {size} {shape} ...", file=sys.stderr)
                bench_size(size, shape, a, cmds, dsh, rows)
    if "many-small" in shapes:
        print(f"bench: many-small ({a.many_count}) ...", file=sys.stderr)
        bench_many(a, cmds, rows)
    startup(a.repeat, rows)
    text = report(rows, dsh, a, raw)
    print(text)
    if not a.no_write:
        write_benchmarks(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

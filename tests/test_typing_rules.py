"""The typing rules `make lint` cannot see: no blanket ignores, every suppression names its code and says why."""

from __future__ import annotations

import re
import tomllib

from conftest import ROOT

SOURCES = sorted(p for d in ("dshlog", "tests", "bench") for p in (ROOT / d).rglob("*.py"))
_IGNORE = re.compile(r"#\s*type:\s*ignore(?P<rest>.*)$")
_NOQA = re.compile(r"#\s*noqa(?P<rest>.*)$")


def test_every_type_ignore_has_a_code_and_a_reason() -> None:
    bad = []
    for path in SOURCES:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = _IGNORE.search(line)
            if m and not re.match(r"\[[-a-z, ]+\]\s+#\s*\S", m.group("rest")):
                bad.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not bad, "a type: ignore without an error code and a reason:\n" + "\n".join(bad)


def test_every_noqa_names_its_rule() -> None:
    bad = []
    for path in SOURCES:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = _NOQA.search(line)
            if m and not re.match(r":\s*[A-Z]+[0-9]+", m.group("rest")):
                bad.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not bad, "a bare noqa:\n" + "\n".join(bad)


def test_no_blanket_ignores() -> None:
    for path in SOURCES:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"^#\s*(mypy:\s*ignore-errors|type:\s*ignore|ruff:\s*noqa)\b", text, re.M), path
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    mypy = config["tool"]["mypy"]
    assert mypy["strict"] is True and mypy["packages"] == ["dshlog"]
    for override in mypy.get("overrides", []):
        assert not override.get("ignore_errors"), override
        assert override.get("disable_error_code"), override  # named codes only
    assert "exclude" not in mypy
    ruff = config["tool"]["ruff"]
    assert "exclude" not in ruff and "extend-exclude" not in ruff
    assert "ALL" not in ruff["lint"].get("ignore", [])


def test_the_checkers_are_pinned_and_run_by_make_test() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extra = config["project"]["optional-dependencies"]["test"]
    assert any(re.fullmatch(r"mypy==[\d.]+", d) for d in extra) and any(re.fullmatch(r"ruff==[\d.]+", d) for d in extra)
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^test: lint\b", makefile, re.M)
    lint = makefile.split("\nlint:", 1)[1].split("\n\n", 1)[0]
    assert "-m mypy" in lint and "-m ruff check" in lint

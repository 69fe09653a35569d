"""``air release``: build the sdist and the wheel of air, with SHA-256 checksums.

Owns (IMPL-REL-6): the sdist by setuptools' PEP 517 ``build_sdist`` of this interpreter, the
wheel built FROM that sdist by ``pip wheel --no-deps`` (an isolated build with the declared
build requirements, so the wheel proves the sdist is complete), the checks of what the sdist
must hold (every test file and example file of the checkout, the LICENSE, MANIFEST.in) and
of the wheel (the ``air`` package and its ``air`` console script), and ``SHA256SUMS``.
Reproducible: every timestamp is ``SOURCE_DATE_EPOCH`` (default: the checkout's last commit),
the sdist is re-packed in name order with neutral owners and modes, so the same source gives
the same hashes twice. Nothing is uploaded.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from air.contracts.error import AirException, CliExit
from air.whole_file import write_whole

_SDIST = (
    "import sys\nfrom setuptools import build_meta\nprint(build_meta.build_sdist(sys.argv[1]))\n"
)


def _bad(kind: str, message: str, user_action: str, detail: str | None = None) -> AirException:
    return AirException.of(kind=kind, message=message, user_action=user_action, detail=detail)


def default_source() -> Path:
    return Path(__file__).resolve().parents[2]


def _check_source(source: Path) -> None:
    for name in ("setup.cfg", "pyproject.toml", "air/__init__.py"):
        if not (source / name).is_file():
            raise _bad(
                "not_found",
                f"--source {source}: not a checkout of air (no {name})",
                "Run `air release` in a checkout of air, or pass --source PATH.",
            )


def source_date_epoch(source: Path) -> int:
    """``SOURCE_DATE_EPOCH`` if set, else the last commit's time of the checkout, else the
    newest of its build files' modification times.

    Raises:
        AirException: ``validation_error`` for a ``SOURCE_DATE_EPOCH`` that is no integer.
    """
    given = os.environ.get("SOURCE_DATE_EPOCH")
    if given:
        if not given.isdigit():
            raise _bad(
                "validation_error",
                f"SOURCE_DATE_EPOCH={given!r} is not a number of seconds",
                "Set it to an integer (e.g. `git log -1 --format=%ct`) or unset it.",
            )
        return int(given)
    if (source / ".git").exists():
        done = subprocess.run(
            ["git", "-C", str(source), "log", "-1", "--format=%ct"],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        if done.returncode == 0 and done.stdout.strip().isdigit():
            return int(done.stdout.strip())
    return max(int((source / n).stat().st_mtime) for n in ("setup.cfg", "pyproject.toml"))


def normalise_sdist(sdist: Path, epoch: int) -> None:
    """Re-pack ``sdist`` in place: members in name order, every time ``epoch``, owner 0/0 with
    no names, modes 0644/0755, and a gzip header without a name or a time."""
    with tarfile.open(sdist) as archive:
        members = sorted(archive.getmembers(), key=lambda m: m.name)
        data = {m.name: archive.extractfile(m).read() for m in members if m.isfile()}  # type: ignore[union-attr]
    tmp = sdist.with_suffix(".tmp")
    with (
        open(tmp, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=epoch) as gz,
    ):
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as out:
            for member in members:
                member.mtime = epoch
                member.uid = member.gid = 0
                member.uname = member.gname = ""
                member.pax_headers = {}
                executable = member.mode & 0o111 or member.isdir()
                member.mode = 0o755 if executable else 0o644
                body = data.get(member.name)
                out.addfile(member, io.BytesIO(body) if body is not None else None)
    os.replace(tmp, sdist)


def _run(argv: list[str], cwd: Path, what: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        argv,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
        raise _bad(
            "environment_error",
            f"building the {what} failed (exit {proc.returncode})",
            "Read the detail; `bash scripts/setup.sh` installs what the build needs.",
            detail=tail,
        )
    return proc.stdout


def _shipped(source: Path, top: str) -> set[str]:
    files = set()
    for path in (source / top).rglob("*"):
        parts = path.relative_to(source).parts
        if path.is_file() and not any(
            p in ("__pycache__", ".air", "build") or p.endswith(".pyc") for p in parts
        ):
            files.add("/".join(parts))
    return files


def check_sdist(sdist: Path, source: Path) -> list[str]:
    """What the sdist lacks: test and example files of ``source``, LICENSE, MANIFEST.in."""
    with tarfile.open(sdist) as archive:
        names = {n.split("/", 1)[1] for n in archive.getnames() if "/" in n}
    wanted = _shipped(source, "tests") | _shipped(source, "examples")
    wanted |= {"LICENSE", "MANIFEST.in", "README.md", "setup.cfg", "pyproject.toml"}
    return sorted(wanted - names)


def check_wheel(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry = next((n for n in names if n.endswith(".dist-info/entry_points.txt")), None)
        points = archive.read(entry).decode() if entry else ""
    missing = [n for n in ("air/__init__.py", "air/cli/__init__.py") if n not in names]
    if "air = air.cli:main" not in points:
        missing.append("console script `air = air.cli:main`")
    if not any(n.endswith(".dist-info/LICENSE") or "/licenses/LICENSE" in n for n in names):
        missing.append("LICENSE in the wheel's metadata")
    return missing


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 16), b""):
            digest.update(chunk)
    return digest.hexdigest()


def build_release(source: Path, dist: Path) -> list[Path]:
    """Build, check and checksum; returns the sdist, the wheel and SHA256SUMS (in ``dist``).

    Raises:
        AirException: a bad source, a failed build, or an artefact that lacks something.
    """
    _check_source(source)
    dist.mkdir(parents=True, exist_ok=True)
    epoch = source_date_epoch(source)
    env = {**os.environ, "SOURCE_DATE_EPOCH": str(epoch), "PYTHONHASHSEED": "0"}
    with tempfile.TemporaryDirectory(prefix="air-release-") as tmp:
        out = Path(tmp)
        name = _run([sys.executable, "-c", _SDIST, str(out)], source, "sdist", env).strip()
        sdist = out / name.splitlines()[-1]
        normalise_sdist(sdist, epoch)
        missing = check_sdist(sdist, source)
        if missing:
            raise _bad(
                "validation_error",
                f"the sdist lacks {len(missing)} file(s), e.g. {missing[0]}",
                "Add them to MANIFEST.in.",
                detail="\n".join(missing[:20]),
            )
        wheels = out / "wheels"
        pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "-q"]
        _run([*pip, "-w", str(wheels), str(sdist)], out, "wheel", env)
        [wheel] = list(wheels.glob("*.whl"))
        missing = check_wheel(wheel)
        if missing:
            raise _bad(
                "validation_error",
                f"the wheel lacks {', '.join(missing)}",
                "Check setup.cfg's packages, package_data and entry_points.",
            )
        built = []
        for artefact in (sdist, wheel):  # through no link put in DIR (air.whole_file)
            target = dist / artefact.name
            write_whole(target, artefact.read_bytes())
            built.append(target)
    sums = dist / "SHA256SUMS"
    write_whole(sums, "".join(f"{sha256(p)}  {p.name}\n" for p in built).encode())
    return [*built, sums]


def run_release(args: dict[str, Any]) -> int:
    source = Path(args["--source"]).resolve() if args["--source"] else default_source()
    dist = Path(args["--dist"] or "dist").resolve()
    print(f"air release: building {source} into {dist} ...", file=sys.stderr, flush=True)
    for path in build_release(source, dist):
        print(path)
    print((dist / "SHA256SUMS").read_text(encoding="utf-8"), end="", file=sys.stderr)
    return CliExit.OK

"""``air release``: build the sdist and the wheel of air, with SHA-256 checksums.

Owns (IMPL-REL-6): the sdist by setuptools' PEP 517 ``build_sdist`` of this interpreter, the
wheel built FROM that sdist by ``pip wheel --no-deps`` (an isolated build with the declared
build requirements, so the wheel proves the sdist is complete), the checks of what the sdist
must hold (every test file and example file of the checkout, the LICENSE, MANIFEST.in) and
of the wheel (the ``air`` package and its ``air`` console script), and ``SHA256SUMS``.
Nothing is uploaded.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from air.contracts.error import AirException, CliExit

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


def _run(argv: list[str], cwd: Path, what: str) -> str:
    proc = subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL
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
    with tempfile.TemporaryDirectory(prefix="air-release-") as tmp:
        out = Path(tmp)
        name = _run([sys.executable, "-c", _SDIST, str(out)], source, "sdist").strip()
        sdist = out / name.splitlines()[-1]
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
        _run([*pip, "-w", str(wheels), str(sdist)], out, "wheel")
        [wheel] = list(wheels.glob("*.whl"))
        missing = check_wheel(wheel)
        if missing:
            raise _bad(
                "validation_error",
                f"the wheel lacks {', '.join(missing)}",
                "Check setup.cfg's packages, package_data and entry_points.",
            )
        built = []
        for artefact in (sdist, wheel):
            target = dist / artefact.name
            shutil.copyfile(artefact, target)
            built.append(target)
    sums = dist / "SHA256SUMS"
    tmp_sums = sums.with_suffix(".tmp")
    tmp_sums.write_text("".join(f"{sha256(p)}  {p.name}\n" for p in built), encoding="utf-8")
    os.replace(tmp_sums, sums)
    return [*built, sums]


def run_release(args: dict[str, Any]) -> int:
    source = Path(args["--source"]).resolve() if args["--source"] else default_source()
    dist = Path(args["--dist"] or "dist").resolve()
    print(f"air release: building {source} into {dist} ...", file=sys.stderr, flush=True)
    for path in build_release(source, dist):
        print(path)
    print((dist / "SHA256SUMS").read_text(encoding="utf-8"), end="", file=sys.stderr)
    return CliExit.OK

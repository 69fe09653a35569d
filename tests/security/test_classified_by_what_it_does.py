"""Commands classified by what they do, options included (issue 22, item 3).

Each case names a command, the category the analyzer must give it and, for a task with no
write area (``write_area: []``) run headless, whether the PermissionEngine lets it run. The
attacks (an option or a script that runs another program or writes a file) must not be
allowed; their benign look-alikes must stay allowed, in a read-only task and in a task with
the default scope, so nothing over-blocks. Written paths are checked as write targets.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest

from air.contracts.permission import CommandCategory, PermissionAction
from air.contracts.permission_records import PermissionRequestContext
from air.contracts.runtime import PermissionTemplate
from air.security.commands import CommandRiskAnalyzer
from air.security.engine import PermissionEngine
from air.security.options import Opt, option_spec, scan
from air.security.paths import PathClassifier
from air.security.scripts import read_awk, read_sed

C = CommandCategory
A = PermissionAction
REFUSED = (A.DENY, A.BLOCK)


class Case(NamedTuple):
    command: str
    category: CommandCategory
    allowed: bool
    """Whether a headless task with ``write_area: []`` may run it."""
    writes: tuple[str, ...] = ()
    """Write targets (relative to the project) the analysis must list."""


ATTACKS: list[Case] = [
    # cmake -E <mode>, -P/-C scripts, -D programs, --build's native tool options
    Case("cmake -E rm -rf src", C.DESTRUCTIVE, False, ("src",)),
    Case("cmake -E remove_directory src", C.DESTRUCTIVE, False, ("src",)),
    Case("cmake -E remove -f src/app.py", C.DESTRUCTIVE, False, ("src/app.py",)),
    Case("cmake -E copy /dev/null src/app.py", C.FILE_MUTATION, False, ("src/app.py",)),
    Case("cmake -E copy_directory /tmp/x src", C.FILE_MUTATION, False, ("src",)),
    Case("cmake -E rename src/app.py gone.py", C.FILE_MUTATION, False, ("src/app.py", "gone.py")),
    Case("cmake -E touch notes/x", C.FILE_MUTATION, False, ("notes/x",)),
    Case("cmake -E make_directory out", C.FILE_MUTATION, False, ("out",)),
    Case("cmake -E create_symlink /etc/passwd link", C.FILE_MUTATION, False, ("link",)),
    Case("cmake -E tar xf a.tar", C.FILE_MUTATION, False),
    Case("cmake -E env FOO=1 rm -rf src", C.DESTRUCTIVE, False, ("src",)),
    Case("cmake -E chdir sub rm -rf x", C.DESTRUCTIVE, False, ("sub/x",)),
    Case("cmake -E time rm src/app.py", C.DESTRUCTIVE, False, ("src/app.py",)),
    Case("cmake -E frobnicate src", C.OPAQUE, False),
    Case("cmake -P /tmp/evil.cmake", C.OPAQUE, False),
    Case("cmake -C ~/cache.cmake -B build", C.OPAQUE, False),
    Case("cmake -DCMAKE_C_COMPILER_LAUNCHER=rm -B build", C.OPAQUE, False),
    Case("cmake -DCMAKE_TOOLCHAIN_FILE=/tmp/t.cmake -B build", C.OPAQUE, False),
    Case("cmake --build build -- --eval='$(shell rm -rf src)'", C.OPAQUE, False),
    Case("ctest -S /tmp/dash.cmake", C.OPAQUE, False),
    Case("ctest --test-command rm -rf src", C.DESTRUCTIVE, False, ("src",)),
    # make: --eval/-E, SHELL=, .SHELLFLAGS=, make variables and functions, stdin makefiles
    Case("make --eval='$(shell rm -rf src)'", C.OPAQUE, False),
    Case("make --ev='$(shell rm -rf src)'", C.OPAQUE, False),
    Case("make --eval=$X", C.OPAQUE, False),
    Case("make -E '$(shell rm -rf src)'", C.OPAQUE, False),
    Case("make SHELL=/bin/rm", C.OPAQUE, False),
    Case("make -j SHELL=rm all", C.OPAQUE, False),
    Case("make .SHELLFLAGS='-c rm -rf src;'", C.OPAQUE, False),
    Case("make 'CFLAGS=$(shell rm -rf src)'", C.OPAQUE, False),
    Case("make 'X!=rm -rf src'", C.OPAQUE, False),
    Case("make CC=rm", C.OPAQUE, False),
    Case("make MAKESHELL=rm", C.OPAQUE, False),
    Case("make SHELL='sh -c \"rm -rf src\"'", C.OPAQUE, False),
    Case("make CC='gcc -wrapper rm,-rf,src'", C.OPAQUE, False),
    Case("make CFLAGS='-wrapper rm,-rf,src'", C.OPAQUE, False),
    Case("CFLAGS=-fplugin=/tmp/p.so make", C.OPAQUE, False),
    Case("cmake -B build -DCMAKE_C_FLAGS=-fplugin=/tmp/p.so", C.OPAQUE, False),
    Case("make MAKEFILES=/tmp/evil.mk", C.OPAQUE, False),
    Case("make -f /dev/stdin", C.OPAQUE, False),
    Case("make -f - all", C.OPAQUE, False),
    Case("make -I /tmp/mk all", C.OPAQUE, False),
    Case("MAKEFILES=/tmp/evil.mk make", C.OPAQUE, False),
    Case("MAKEFLAGS=--eval=x make", C.OPAQUE, False),
    Case("CC=rm make", C.OPAQUE, False),
    # compiler drivers and the linker
    Case("gcc -wrapper rm,-rf,src -c a.c", C.DESTRUCTIVE, False, ("src",)),
    Case("g++ -wrapper /tmp/evil,x -c a.cc", C.OPAQUE, False),
    Case("g++ -wrapper sh -c a.cc", C.OPAQUE, False),
    Case("gcc -fplugin=./evil.so -c a.c", C.OPAQUE, False),
    Case("clang -fpass-plugin=/tmp/p.so -c a.c", C.OPAQUE, False),
    Case("clang -Xclang -load -Xclang p.so -c a.c", C.OPAQUE, False),
    Case("gcc -specs=/tmp/evil.specs -c a.c", C.OPAQUE, False),
    Case("gcc --specs=evil.specs -c a.c", C.OPAQUE, False),
    Case("gcc @opts.rsp", C.OPAQUE, False),
    Case("gcc -B /tmp/tools -c a.c", C.OPAQUE, False),
    Case("gcc -B/tmp/tools -c a.c", C.OPAQUE, False),
    Case("gcc -fuse-ld=/tmp/ld a.c", C.OPAQUE, False),
    Case("clang --ld-path=/tmp/ld a.c", C.OPAQUE, False),
    Case("gcc -Wl,-plugin,/tmp/p.so a.c", C.OPAQUE, False),
    Case("ld -plugin /tmp/p.so a.o", C.OPAQUE, False),
    Case("clang --config=/tmp/evil.cfg a.c", C.OPAQUE, False),
    Case("gcc -Wl,@/tmp/opts a.c", C.OPAQUE, False),
    Case("gcc -Xlinker -plugin -Xlinker p.so a.c", C.OPAQUE, False),
    Case("COMPILER_PATH=/tmp/tools gcc -c a.c", C.OPAQUE, False),
    # sed: w/W, s///w, -i, e, s///e, -f
    Case("sed -n '1w notes/keep.txt' src/app.py", C.FILE_MUTATION, False, ("notes/keep.txt",)),
    Case("sed -n '/x/W out.txt' f", C.FILE_MUTATION, False, ("out.txt",)),
    Case("sed 's/a/b/w out.txt' f", C.FILE_MUTATION, False, ("out.txt",)),
    Case("sed -e 1d -e 'w out.txt' f", C.FILE_MUTATION, False, ("out.txt",)),
    Case("sed -i s/a/b/ src/app.py", C.FILE_MUTATION, False, ("src/app.py",)),
    Case("sed -ie s/a/b/ src/app.py", C.FILE_MUTATION, False, ("src/app.py",)),
    Case("sed --in-place=.bak s/a/b/ src/app.py", C.FILE_MUTATION, False, ("src/app.py",)),
    Case("sed --in-pl s/a/b/ src/app.py", C.FILE_MUTATION, False, ("src/app.py",)),
    Case("sed -n '1e rm -rf src' f", C.OPAQUE, False),
    Case("sed 's/.*/rm -rf src/e' f", C.OPAQUE, False),
    Case("sed -f prog.sed f", C.OPAQUE, False),
    Case("sed --file=evil.sed p", C.OPAQUE, False),
    Case("sed -n 'k' f", C.OPAQUE, False),
    # sort, tee
    Case("sort --compress-program=rm f", C.DESTRUCTIVE, False),
    Case("sort --compress-program=./evil.sh f", C.BUILD_TEST, True),
    Case("sort --comp=/bin/sh f", C.OPAQUE, False),
    Case("sort --compress-program=$P f", C.OPAQUE, False),
    Case('sort -o"$OUT" f', C.FILE_MUTATION, False),
    Case("sort -o src/app.py f", C.FILE_MUTATION, False, ("src/app.py",)),
    Case("sort --outp=src/app.py f", C.FILE_MUTATION, False, ("src/app.py",)),
    Case("tee src/app.py", C.FILE_MUTATION, False, ("src/app.py",)),
    Case("tee -a notes/log", C.FILE_MUTATION, False, ("notes/log",)),
    # rg
    Case("rg --pre rm x", C.DESTRUCTIVE, False),
    Case("rg --pre=/tmp/pre.sh x", C.OPAQUE, False),
    Case("rg --hostname-bin=/bin/sh x", C.OPAQUE, False),
    Case("rg -z x", C.OPAQUE, False),
    Case("rg --pre=$CMD x", C.OPAQUE, False),
    Case('rg "--pre=$CMD" x', C.OPAQUE, False),
    Case("rg -iz x", C.OPAQUE, False),
    Case("rg --search-zip x", C.OPAQUE, False),
    Case("RIPGREP_CONFIG_PATH=/tmp/rgrc rg x", C.OPAQUE, False),
    # pytest and python -m
    Case("pytest -p evil", C.OPAQUE, False),
    Case("pytest -pevil tests", C.OPAQUE, False),
    Case("pytest -o addopts='-p evil'", C.OPAQUE, False),
    Case("pytest --override-ini=pythonpath=/tmp", C.OPAQUE, False),
    Case("pytest --pdbcls=evil:Debugger", C.OPAQUE, False),
    Case("pytest --basetemp=src", C.DESTRUCTIVE, False, ("src",)),
    Case("pytest --rootdir=/tmp/evil", C.BUILD_TEST, False),
    Case("pytest -c /tmp/evil/pytest.ini", C.BUILD_TEST, False),
    Case("pytest /tmp/evil/test_x.py", C.BUILD_TEST, False),
    Case("cd /tmp/evil && pytest", C.BUILD_TEST, False, ("/tmp/evil",)),
    Case("cd /tmp/evil; make", C.BUILD_TEST, False, ("/tmp/evil",)),
    Case("cd /tmp/evil && python -m pytest", C.BUILD_TEST, False, ("/tmp/evil",)),
    Case("python -m pytest -p evil", C.OPAQUE, False),
    Case("python3 -m timeit 'import shutil; shutil.rmtree(\"src\")'", C.OPAQUE, False),
    Case("python -m cProfile -m pytest -p evil", C.OPAQUE, False),
    # a write however its option is spelled: attached, clustered, abbreviated, `=`
    Case("tar -cfsrc/app.py notes", C.FILE_MUTATION, False, ("src/app.py",)),
    Case("tar -czfsrc/app.py notes", C.FILE_MUTATION, False, ("src/app.py",)),
    Case("tar -xfa.tar -Csrc", C.FILE_MUTATION, False, ("src",)),
    Case("tar -xIrm -f a.tar", C.OPAQUE, False),
    Case("tar --use-comp=rm -xf a.tar", C.OPAQUE, False),
    Case("tar -cf a.tar --remove-files src", C.DESTRUCTIVE, False, ("src", "a.tar")),
    Case("cp --target src x", C.FILE_MUTATION, False, ("src",)),
    Case("mv -tsrc x", C.FILE_MUTATION, False, ("src",)),
    Case("unzip -dsrc a.zip", C.FILE_MUTATION, False, ("src",)),
    Case("rsync -a --remove-source-files src out", C.DESTRUCTIVE, False, ("src", "out")),
    Case("rsync -a --del x src", C.DESTRUCTIVE, False, ("src",)),
    Case("patch --output=src/app.py", C.FILE_MUTATION, False, ("src/app.py",)),
    Case("/usr/bin/time -o src/app.py make", C.BUILD_TEST, False, ("src/app.py",)),
    Case("valgrind --xml-file=src/app.py ./x", C.BUILD_TEST, False, ("src/app.py",)),
    # the profile's file, however its option is spelled
    Case(
        "python -m cProfile --outfile=src/app.py script.py", C.FILE_MUTATION, False, ("src/app.py",)
    ),
    Case("python -m cProfile -osrc/app.py script.py", C.FILE_MUTATION, False, ("src/app.py",)),
    Case("python -m profile --out src/app.py script.py", C.FILE_MUTATION, False, ("src/app.py",)),
    Case("python -m evilmodule", C.OPAQUE, False),
    # find
    Case("find . -fprint notes/list", C.FILE_MUTATION, False, ("notes/list",)),
    Case("find . -fprint0 out", C.FILE_MUTATION, False, ("out",)),
    Case("find . -fprintf out '%p'", C.FILE_MUTATION, False, ("out",)),
    Case("find . -fls out", C.FILE_MUTATION, False, ("out",)),
    Case("find src -delete", C.DESTRUCTIVE, False, ("src",)),
    Case("find -L src -name '*.py' -delete", C.DESTRUCTIVE, False, ("src",)),
    Case("find . -exec rm -rf src \\;", C.DESTRUCTIVE, False, ("src",)),
    Case("find . -execdir sh -c 'rm -rf src' \\;", C.DESTRUCTIVE, False, ("src",)),
    Case("find . -ok rm {} \\;", C.DESTRUCTIVE, False),
    # git -c / --exec-path / --ext-diff
    Case("git -c core.pager='rm -rf src' log", C.OPAQUE, False),
    Case("git -c core.editor=evil commit", C.OPAQUE, False),
    Case("git -c core.sshCommand='rm -rf src' fetch", C.OPAQUE, False),
    Case("git -c core.fsmonitor='rm -rf src' status", C.OPAQUE, False),
    Case("git -c core.hooksPath=/tmp/hooks commit -m x", C.OPAQUE, False),
    Case("git -c alias.st='!rm -rf src' st", C.OPAQUE, False),
    Case("git -c diff.evil.command=rm diff", C.OPAQUE, False),
    Case("git -c Core.Pager=rm log", C.OPAQUE, False),
    Case("git --exec-path=/tmp/git log", C.OPAQUE, False),
    Case("git log -p --ext-diff", C.OPAQUE, False),
    Case("git -c user.name=x commit -m y", C.VCS_MUTATION, False),
    Case("git stash", C.VCS_MUTATION, False),
    # env -S
    Case("env -S 'rm -rf src'", C.DESTRUCTIVE, False, ("src",)),
    Case("env -S'rm -rf src'", C.DESTRUCTIVE, False, ("src",)),
    Case("env --split-string='rm -rf src'", C.DESTRUCTIVE, False, ("src",)),
    Case("env --split='rm -rf src'", C.DESTRUCTIVE, False, ("src",)),
    Case("env -iS 'rm -rf src'", C.DESTRUCTIVE, False, ("src",)),
    Case("env -S 'sed -n 1w\\ x f'", C.OPAQUE, False),
    Case("env -S '$CMD'", C.OPAQUE, False),
    # awk
    Case("awk 'BEGIN{system(\"rm -rf src\")}'", C.OPAQUE, False),
    Case("gawk 'BEGIN { system (\"id\") }'", C.OPAQUE, False),
    Case("mawk '{print | \"sh\"}' f", C.OPAQUE, False),
    Case("awk 'BEGIN{\"rm -rf src\" | getline}'", C.OPAQUE, False),
    Case('gawk \'BEGIN{print "x" |& "sh"}\'', C.OPAQUE, False),
    Case("awk '{print > \"notes/out\"}' f", C.FILE_MUTATION, False, ("notes/out",)),
    Case("awk '{print $0 >> \"src/app.py\"}' f", C.FILE_MUTATION, False, ("src/app.py",)),
    Case('awk \'{printf("%s", $1) > "out"}\' f', C.FILE_MUTATION, False, ("out",)),
    Case("awk '{print > $1}' f", C.FILE_MUTATION, False),
    Case("awk -f prog.awk f", C.OPAQUE, False),
    Case("awk -fprog.awk f", C.OPAQUE, False),
    Case("gawk -i inplace '{print}' f", C.OPAQUE, False),
    Case("gawk -l ./evil.so 'BEGIN{}'", C.OPAQUE, False),
    Case('gawk \'BEGIN{f="system"; @f("id")}\'', C.OPAQUE, False),
    Case("gawk '@include \"x.awk\"'", C.OPAQUE, False),
    Case('gawk \'BEGIN{print "x" > "/inet/tcp/0/example.com/80"}\'', C.OPAQUE, False),
    Case("mawk -W exec prog.awk f", C.OPAQUE, False),
    Case("gawk -p '{print}' f", C.FILE_MUTATION, False, ("awkprof.out",)),
    Case("awk $PROG f", C.OPAQUE, False),
    # xargs / timeout / nice / nohup / stdbuf / sudo around any of these
    Case("timeout 5 cmake -E rm -rf src", C.DESTRUCTIVE, False, ("src",)),
    Case("nice -n 5 make --eval='$(shell rm -rf src)'", C.OPAQUE, False),
    Case("nohup sed -n '1w notes/x' f", C.PROCESS_CONTROL, False, ("notes/x",)),
    Case("stdbuf -oL rg --pre=rm x", C.DESTRUCTIVE, False),
    Case("xargs cmake -E rm -rf", C.DESTRUCTIVE, False),
    Case("xargs -I{} sed -i s/a/b/ {}", C.FILE_MUTATION, False),
    Case("timeout -s KILL 9 gcc -wrapper rm,-rf,src -c a.c", C.DESTRUCTIVE, False, ("src",)),
    Case("env FOO=1 awk 'BEGIN{system(\"id\")}'", C.OPAQUE, False),
]

LOOK_ALIKES: list[Case] = [
    Case("sed -n 1p f", C.READ_ONLY, True),
    Case("sed -n '/start/,/end/p' f", C.READ_ONLY, True),
    Case("sed -E 's/(a|b)+/x/g' f", C.READ_ONLY, True),
    Case("sed ':a;N;$!ba;s/\\n/ /g' f", C.READ_ONLY, True),
    Case("sed -n 's/x/y/w /dev/stdout' f", C.READ_ONLY, True),
    Case("sed --sandbox -n '1w x' f", C.READ_ONLY, True),
    Case("sed -e 's/wrong/right/' -e '/^#/d' f", C.READ_ONLY, True),
    Case("sort f", C.READ_ONLY, True),
    Case("sort -u -k2,2 f", C.READ_ONLY, True),
    Case("sort --compress-program=gzip -S 1G f", C.READ_ONLY, True),
    Case("rg pattern", C.READ_ONLY, True),
    Case("rg -n 'foo|bar' src", C.READ_ONLY, True),
    Case("rg -e -z src", C.READ_ONLY, True),
    Case("rg --pre-glob '*.pdf' x", C.READ_ONLY, True),
    Case("rg --pre cat x", C.READ_ONLY, True),
    Case("find . -name x -print", C.READ_ONLY, True),
    Case("find . -name '*.py' -exec grep -l TODO {} +", C.READ_ONLY, True),
    Case("find -L . -type f -newer src/app.py", C.READ_ONLY, True),
    Case("cmake --build build", C.BUILD_TEST, True),
    Case("cmake -S . -B build -DCMAKE_BUILD_TYPE=Release", C.BUILD_TEST, True),
    Case("cmake -B build -DCMAKE_C_COMPILER_LAUNCHER=ccache", C.BUILD_TEST, True),
    Case("cmake -B build -DCMAKE_CXX_COMPILER=clang++-17", C.BUILD_TEST, True),
    Case("cmake -E echo hello", C.READ_ONLY, True),
    Case("cmake -E sha256sum src/app.py", C.READ_ONLY, True),
    Case("cmake -E capabilities", C.READ_ONLY, True),
    Case("cmake -P cmake/check.cmake", C.BUILD_TEST, True),
    Case("ctest --test-dir build --output-on-failure", C.BUILD_TEST, True),
    Case("make -n", C.BUILD_TEST, True),
    Case("make", C.BUILD_TEST, True),
    Case("make -j4 test", C.BUILD_TEST, True),
    Case("make CC=clang-17 CFLAGS=-O2", C.BUILD_TEST, True),
    Case("make CC='ccache gcc' all", C.BUILD_TEST, True),
    Case("make .SHELLFLAGS=-ec all", C.BUILD_TEST, True),
    Case("make 'CFLAGS=-O2 -Wall' LDFLAGS=-Wl,-Bstatic", C.BUILD_TEST, True),
    Case("make 'SHELL = /bin/bash'", C.BUILD_TEST, True),
    Case("cmake -B build -DCMAKE_C_FLAGS='-O2 -g'", C.BUILD_TEST, True),
    Case("make -C sub all", C.BUILD_TEST, True),
    Case("make -j$(nproc) all", C.BUILD_TEST, True),
    Case('rg "$pattern" src', C.READ_ONLY, True),
    Case("cd sub && make", C.BUILD_TEST, True, ("sub",)),
    Case("gcc -c a.c", C.BUILD_TEST, True),
    Case("gcc -O2 -Wall -o app main.c -lm", C.BUILD_TEST, True),
    Case("g++ -std=c++20 -I include -c x.cpp -o build/x.o", C.BUILD_TEST, True),
    Case("gcc -fuse-ld=lld a.c", C.BUILD_TEST, True),
    Case("gcc -Wl,-Bstatic -c a.c", C.BUILD_TEST, True),
    Case("gcc -wrapper gdb,--args -c a.c", C.BUILD_TEST, True),
    Case("CC=gcc make", C.BUILD_TEST, True),
    Case("CC=x86_64-linux-gnu-gcc-12 make", C.BUILD_TEST, True),
    Case("git -c color.ui=never log", C.READ_ONLY, True),
    Case("git -c core.quotepath=off status", C.READ_ONLY, True),
    Case("git --exec-path", C.READ_ONLY, True),
    Case("git log -p", C.READ_ONLY, True),
    Case("awk '{print $1}' f", C.READ_ONLY, True),
    Case("awk '$1 > 5' f", C.READ_ONLY, True),
    Case("awk '{print ($1 > 2)}' f", C.READ_ONLY, True),
    Case("awk '/a|b/ {print}' f", C.READ_ONLY, True),
    Case("awk '{ s += $2 } END { print s / NR }' f", C.READ_ONLY, True),
    Case("awk -F: -v n=3 'NR==n {print > \"/dev/stderr\"}' f", C.READ_ONLY, True),
    Case("awk 'BEGIN { while ((getline line < \"f\") > 0) n++; print n }'", C.READ_ONLY, True),
    Case("gawk --sandbox 'BEGIN{system(\"id\")}'", C.READ_ONLY, True),
    Case("env FOO=1 make", C.BUILD_TEST, True),
    Case("env -S 'ls -l'", C.READ_ONLY, True),
    Case("env -i PATH=/usr/bin ls", C.OPAQUE, False),
    Case("pytest tests/ -x -q", C.BUILD_TEST, True),
    Case("pytest -p no:cacheprovider -o xfail_strict=true", C.BUILD_TEST, True),
    Case("python -m pytest tests -q", C.BUILD_TEST, True),
    Case("python -m cProfile script.py", C.BUILD_TEST, True),
    Case("python -m cProfile script.py -o report.txt", C.BUILD_TEST, True),
    Case("clang-format src/app.py", C.BUILD_TEST, True),
    Case("clang-tidy src/app.py -- -Isrc", C.BUILD_TEST, True),
    Case("cppcheck src", C.BUILD_TEST, True),
    Case("tar -tvfa.tar", C.READ_ONLY, True),
    Case("tar -czf - src | wc -c", C.FILE_MUTATION, True),  # the archive goes to stdout
    # a build or check tool's own outputs, however spelled, are its targets (outside the project
    # they ask); in the task's read-only view they are allowed (IMPL-CLS-6)
    Case("clang --output=src/app.py -c x.c", C.BUILD_TEST, True, ("src/app.py",)),
    Case("ctest --output-junit src/app.py", C.BUILD_TEST, True, ("src/app.py",)),
    Case("clang-format -i src/app.py", C.BUILD_TEST, True, ("src/app.py",)),
    Case("clang-tidy --fix src/app.py", C.BUILD_TEST, True, ("src/app.py",)),
    Case("clang-tidy -export-fixes=src/app.py x.c", C.BUILD_TEST, True, ("src/app.py",)),
    Case("cppcheck --output-file=src/app.py .", C.BUILD_TEST, True, ("src/app.py",)),
    Case("go build -modfile=src/app.py .", C.BUILD_TEST, True, ("src/app.py",)),
    Case("go build -overlay=src/app.py .", C.BUILD_TEST, True, ("src/app.py",)),
    Case("timeout 60 make test", C.BUILD_TEST, True),
    Case("echo x | tee /dev/null", C.READ_ONLY, True),
    Case("xargs -n1 echo", C.READ_ONLY, True),
]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ro") / "proj"
    for d in ("src", "notes", "build", "sub", ".git"):
        (root / d).mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('x')\n")
    (root.parent / "home").mkdir()
    return root


@pytest.fixture(scope="module")
def engine(project: Path) -> PermissionEngine:
    return PermissionEngine(classifier=PathClassifier(home=str(project.parent / "home")))


def _ctx(root: Path, command: str, **kw: object) -> PermissionRequestContext:
    fields: dict[str, object] = {
        "session_id": "ses_ro",
        "task_id": "task_ro",
        "tool_name": "shell.run",
        "permission_template": PermissionTemplate.EXECUTOR,
        "project_root": str(root),
        "workspace_root": str(root),
        "command": command,
    }
    fields.update(kw)
    return PermissionRequestContext.model_validate(fields)


def test_there_are_at_least_eighty_new_cases() -> None:
    commands = [c.command for c in ATTACKS + LOOK_ALIKES]
    assert len(set(commands)) == len(commands)
    assert len(commands) >= 80


@pytest.mark.parametrize("case", ATTACKS + LOOK_ALIKES, ids=lambda c: c.command)
def test_category_targets_and_read_only_decision(
    case: Case, project: Path, engine: PermissionEngine
) -> None:
    analysis = engine.analyzer.analyze(case.command, str(project))
    assert analysis.category == case.category, analysis
    for target in case.writes:
        assert str(project / target) in analysis.write_targets, analysis
    decision = engine.evaluate_sync(_ctx(project, case.command, write_area=[], headless=True))
    if case.allowed:
        assert decision.action == A.ALLOW, decision
    else:
        assert decision.action in REFUSED, decision


@pytest.mark.parametrize("case", [c for c in LOOK_ALIKES if c.allowed], ids=lambda c: c.command)
def test_look_alikes_stay_allowed_in_an_ordinary_task(
    case: Case, project: Path, engine: PermissionEngine
) -> None:
    decision = engine.evaluate_sync(_ctx(project, case.command, write_area=["src"]))
    assert decision.action == A.ALLOW, decision


@pytest.mark.parametrize(
    "command",
    [
        "cmake -E rm -rf src",
        "cmake -E remove_directory src",
        "cmake -E copy /dev/null src/app.py",
        "make --eval='$(shell rm -rf src)'",
        "make -E '$(shell rm -rf src)'",
        "gcc -wrapper rm,-rf,src -c a.c",
        "sed -n '1w notes/keep.txt' src/app.py",
    ],
)
def test_the_issues_attacks_ask_when_a_person_can_be_asked(
    command: str, project: Path, engine: PermissionEngine
) -> None:
    """Not headless: a read-only task's attack is asked about or blocked, never run unasked."""
    decision = engine.evaluate_sync(_ctx(project, command, write_area=[]))
    assert decision.action in (A.ASK_USER, A.BLOCK, A.DENY), decision


def test_a_vcs_change_is_blocked_only_without_a_write_area(
    project: Path, engine: PermissionEngine
) -> None:
    blocked = engine.explain(_ctx(project, "git stash", write_area=[]))
    (item,) = [i for i in blocked.items if i.kind == "command"]
    assert (item.action, item.layer) == (A.BLOCK, "3-scope")
    assert "no write area" in item.reason
    ordinary = engine.evaluate_sync(_ctx(project, "git stash", write_area=["src"]))
    assert ordinary.action == A.ANNOUNCE_THEN_RUN


# -- the readers and the option scanner themselves --------------------------------------------


def test_option_scan_clusters_attached_values_and_abbreviations() -> None:
    spec = option_spec("ok", ("--output", "--compress-program"), ("--check", "--unique"))
    opts, operands = scan(["-uo", "out", "--comp=rm", "f", "--", "-z"], spec)
    assert opts == [Opt("-u", ""), Opt("-o", "out"), Opt("--compress-program", "rm")]
    assert operands == ["f", "-z"]
    opts, _ = scan(["--c=x", "-kx", "--output", None], spec)  # `--c` is ambiguous: kept as typed
    assert opts == [Opt("--c", "x"), Opt("-k", "x"), Opt("--output", None)]


@pytest.mark.parametrize(
    ("script", "runs", "writes", "reads"),
    [
        ("1w out", False, ["out"], []),
        ("s/a/b/gw out", False, ["out"], []),
        ("/x/W out\n$r in", False, ["out"], ["in"]),
        ("$a\\\nw not-a-command", False, [], []),
        ("y/w/e/;p", False, [], []),
        ("s/e/w/;1e id", True, [], []),
        ("s,a,b,e", True, [], []),
        ("\\%x%d;:w;bw", False, [], []),
        ("1,+2{/a/!d}", False, [], []),
        ("s/a", True, [], []),
    ],
)
def test_read_sed(script: str, runs: bool, writes: list[str], reads: list[str]) -> None:
    effects = read_sed(script)
    assert bool(effects.runs) == runs, effects
    if not runs:
        assert (effects.writes, effects.reads) == (writes, reads)


def test_read_sed_names_what_runs() -> None:
    assert read_sed("1e id").runs == "sed script runs shell commands (e)"
    assert read_sed("s/x/id/e").runs == "sed script runs shell commands (e)"
    assert read_sed("1k").runs == "the sed script has an unknown command 'k'"


@pytest.mark.parametrize(
    ("program", "runs", "writes"),
    [
        ('{print > "a" "b"}', False, [None]),
        ('{x = "|"; print x}', False, []),
        ("{print a > b ? c : d}", False, [None]),
        ('# system("x")\n{print}', False, []),
        ('{print "system(" }', False, []),
        ("{n = a / b / c}", False, []),
        ('{print > "/dev/stdout"}', False, ["/dev/stdout"]),
        ('{getline < "/etc/hosts"}', False, []),
        ('BEGIN{cmd = "id"; cmd | getline}', True, []),
    ],
)
def test_read_awk(program: str, runs: bool, writes: list[str | None]) -> None:
    effects = read_awk(program)
    assert bool(effects.runs) == runs, effects
    if not runs:
        assert effects.writes == writes


def test_the_analyzer_is_shared_and_pure() -> None:
    analyzer = CommandRiskAnalyzer()
    first = analyzer.analyze("sed -n '1w out' f", "/p")
    assert analyzer.analyze("sed -n '1w out' f", "/p") == first
    assert first.write_targets == ["/p/out"]

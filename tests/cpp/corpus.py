"""The diagnostics corpus, built by the suite from the real compilers, linker and CMake.

Each kind injects one error into a tiny translation unit (or CMake script). Every kind is built
in two variants, in different directories and files, with different identifiers and with the
error on a different line, by gcc and by clang (text, colour on) and by gcc again with
``-fdiagnostics-format=json``. Nothing is cached across runs: ``build_corpus`` compiles into a
fresh directory, in parallel, one translation unit per kind and variant.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["KINDS", "CorpusEntry", "Kind", "build_corpus"]

WARN = ["-Wall", "-Wextra", "-Werror"]


@dataclass(frozen=True)
class Kind:
    name: str
    category: str
    """syntax, type, overload, template, include, werror, linker, cmake."""
    source: str
    """C++ (or CMake) text; {a} {b} {T} are identifiers that differ between variants."""
    extra: tuple[str, ...] = ()
    second: str | None = None
    """linker kinds: a second translation unit linked with the first."""


KINDS: list[Kind] = [
    # syntax
    Kind("missing_semicolon", "syntax", "int {a} = 1\nint {b} = 2;\n"),
    Kind("missing_close_brace", "syntax", "int {a}() {{\n  return 1;\n"),
    Kind("unbalanced_paren", "syntax", "int {a}() {{ return (1 + 2; }}\n"),
    Kind("stray_character", "syntax", "int {a} = 1 @ 2;\n"),
    Kind("missing_type", "syntax", "{a}() {{ return 1; }}\n"),
    Kind("else_without_if", "syntax", "int {a}(int x) {{ else {{ return x; }} return 0; }}\n"),
    Kind("unterminated_string", "syntax", 'const char* {a} = "abc;\n'),
    Kind("break_outside_loop", "syntax", "void {a}() {{ break; }}\n"),
    # type
    Kind("undeclared_identifier", "type", "int {a}() {{ return {b}; }}\n"),
    Kind("pointer_conversion", "type", "int {a}; double* {b} = &{a};\n"),
    Kind("assign_read_only", "type", "const int {a} = 1;\nvoid {b}() {{ {a} = 2; }}\n"),
    Kind("no_such_member", "type", "struct {T} {{}};\nint {a}({T} s) {{ return s.{b}; }}\n"),
    Kind(
        "member_of_non_class",
        "type",
        "int {a}() {{ int x = 1; return x.{b}; }}\n",
    ),
    Kind("redefinition", "type", "int {a} = 1;\nint {a} = 2;\n"),
    Kind("conflicting_declaration", "type", "int {a};\ndouble {a};\n"),
    Kind("incomplete_type", "type", "struct {T};\nvoid {a}() {{ {T} x; (void)x; }}\n"),
    Kind("unknown_type_name", "type", "{T} {a};\n"),
    Kind("void_value_used", "type", "void {a}();\nint {b}() {{ int v = {a}(); return v; }}\n"),
    Kind("return_value_in_void", "type", "void {a}() {{ return 1; }}\n"),
    Kind("call_non_function", "type", "int {a};\nint {b}() {{ return {a}(); }}\n"),
    Kind(
        "private_member",
        "type",
        "class {T} {{ int m = 0; }};\nint {a}({T} c) {{ return c.m; }}\n",
    ),
    Kind(
        "abstract_instance",
        "type",
        "struct {T} {{ virtual void f() = 0; }};\nvoid {a}() {{ {T} b; (void)b; }}\n",
    ),
    Kind(
        "const_member_mutation",
        "type",
        "struct {T} {{ int m; void {a}() const {{ m = 1; }} }};\n",
    ),
    Kind("static_assert_failed", "type", 'static_assert(sizeof(char) == 2, "{a}");\n'),
    Kind(
        "narrowing_braces",
        "type",
        "void {a}(double d) {{ int x{{d}}; (void)x; }}\n",
        ("-Werror",),
    ),
    Kind("deref_non_pointer", "type", "int {a}(int v) {{ return *v; }}\n"),
    # overload
    Kind(
        "ambiguous_overload",
        "overload",
        "void {a}(int);\nvoid {a}(long);\nvoid {b}() {{ {a}(1.0); }}\n",
    ),
    Kind(
        "no_matching_function",
        "overload",
        "struct {T} {{}};\nvoid {a}(int);\nvoid {a}(double);\nvoid {b}() {{ {a}({T}{{}}); }}\n",
    ),
    Kind(
        "no_matching_constructor",
        "overload",
        "struct {T} {{ {T}(int) {{}} }};\nvoid {a}() {{ {T} p(1, 2); (void)p; }}\n",
    ),
    Kind("overload_by_return_type", "overload", "int {a}();\ndouble {a}();\n"),
    Kind(
        "deleted_function",
        "overload",
        "struct {T} {{ {T}() {{}} {T}(const {T}&) = delete; }};\n"
        "void {a}() {{ {T} x; {T} y(x); (void)y; }}\n",
    ),
    Kind(
        "too_many_arguments",
        "overload",
        "int {a}(int);\nint {b}() {{ return {a}(1, 2); }}\n",
    ),
    # template
    Kind(
        "deduction_conflict",
        "template",
        "template <class T> T {a}(T x, T y) {{ return x; }}\nint {b}() {{ return {a}(1, 2.0); }}\n",
    ),
    Kind(
        "template_member_missing",
        "template",
        "template <class T> int {a}(T t) {{ return t.size(); }}\nint {b}() {{ return {a}(1); }}\n",
    ),
    Kind(
        "template_arg_count",
        "template",
        "template <class T> struct {T} {{}};\n{T}<int, int> {a};\n",
    ),
    Kind(
        "missing_typename",
        "template",
        "template <class T> void {a}() {{ T::type * x; }}\n"
        "struct {T} {{ using type = int; }};\nvoid {b}() {{ {a}<{T}>(); }}\n",
    ),
    Kind(
        "non_constant_template_arg",
        "template",
        "template <int N> struct {T} {{}};\nint {a} = 3;\n{T}<{a}> {b};\n",
    ),
    Kind(
        "template_static_assert",
        "template",
        'template <class T> struct {T} {{ static_assert(sizeof(T) == 64, "{a}"); }};\n'
        "{T}<int> {b};\n",
    ),
    # includes
    Kind("missing_include", "include", '#include "{a}_missing.h"\nint {b};\n'),
    Kind(
        "missing_std_include",
        "include",
        "#include <cstddef>\nstd::vector<int> {a};\n",
    ),
    # warnings as errors
    Kind("unused_variable", "werror", "int {a}() {{ int {b} = 1; return 0; }}\n", tuple(WARN)),
    Kind("unused_parameter", "werror", "int {a}(int {b}) {{ return 0; }}\n", tuple(WARN)),
    Kind(
        "sign_compare",
        "werror",
        "bool {a}(unsigned {b}, int c) {{ return {b} < c; }}\n",
        tuple(WARN),
    ),
    Kind(
        "missing_return",
        "werror",
        "int {a}(int {b}) {{ if ({b}) return 1; }}\n",
        tuple(WARN),
    ),
    Kind(
        "parentheses_assignment",
        "werror",
        "int {a}(int {b}, int c) {{ if ({b} = c) return 1; return 0; }}\n",
        tuple(WARN),
    ),
    Kind(
        "switch_missing_enum",
        "werror",
        "enum {T} {{ X1, X2 }};\n"
        "int {a}({T} e) {{ switch (e) {{ case X1: return 1; }} return 0; }}\n",
        tuple(WARN),
    ),
    Kind(
        "unused_function",
        "werror",
        "static int {a}() {{ return 1; }}\n",
        tuple(WARN),
    ),
    # linker (compiled and linked)
    Kind("undefined_reference", "linker", "int {a}();\nint main() {{ return {a}(); }}\n"),
    Kind(
        "multiple_definition",
        "linker",
        "int {a}() {{ return 1; }}\nint main() {{ return {a}(); }}\n",
        second="int {a}() {{ return 2; }}\n",
    ),
    Kind(
        "missing_library",
        "linker",
        "int main() {{ return 0; }}\n",
        extra=("-lnosuch{a}",),
    ),
    # CMake (script mode and configure without a compiler)
    Kind("cmake_unknown_command", "cmake", "# pad\n{a}_command(1)\n"),
    Kind("cmake_fatal_error", "cmake", 'message(FATAL_ERROR "{a} broke")\n'),
    Kind(
        "cmake_minimum_version",
        "cmake",
        "cmake_minimum_required(VERSION 99.{n})\n",
    ),
    Kind(
        "cmake_parse_error",
        "cmake",
        "set({a} 1\n",
    ),
    Kind(
        "cmake_link_non_target",
        "cmake-project",
        "target_link_libraries({a} m)\n",
    ),
    Kind("cmake_missing_subdirectory", "cmake-project", "add_subdirectory({a}_dir)\n"),
    Kind("cmake_find_package", "cmake-project", "find_package({T}Pkg REQUIRED)\n"),
]

_NAMES = {
    "A": {"a": "alpha", "b": "beta", "T": "Widget", "n": "1"},
    "B": {"a": "gamma_value", "b": "delta2", "T": "Gadget", "n": "7"},
}
_PAD = {"A": "", "B": "// the same error, three lines further down\n\n\n"}


@dataclass
class CorpusEntry:
    """The outputs of one kind: ``outputs[(tool, form, variant)]`` = what the tool printed."""

    kind: Kind
    files: dict[str, str] = field(default_factory=dict)
    """variant → the path of its main file, relative to the corpus root."""
    outputs: dict[tuple[str, str, str], str] = field(default_factory=dict)
    serialized: dict[str, bytes] = field(default_factory=dict)
    """variant → clang's ``--serialize-diagnostics`` file of the clang text build."""


def _render(kind: Kind, text: str, variant: str) -> str:
    body = text.format(**_NAMES[variant])
    if kind.category.startswith("cmake"):
        pad = _PAD[variant].replace("//", "#")
        return pad + body
    return _PAD[variant] + body


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "TMPDIR")}
    env["LC_ALL"] = "C.UTF-8"
    return env


def _run(argv: list[str], cwd: Path) -> str:
    proc = subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, env=_env(), timeout=120, check=False
    )
    return proc.stdout + proc.stderr


def _jobs(root: Path, entry: CorpusEntry) -> list[tuple[tuple[str, str, str], list[str], Path]]:
    kind = entry.kind
    jobs: list[tuple[tuple[str, str, str], list[str], Path]] = []
    for variant in ("A", "B"):
        folder = root / kind.name / f"variant_{variant.lower()}"
        folder.mkdir(parents=True)
        if kind.category == "cmake":
            main = folder / f"{kind.name}_{variant.lower()}.cmake"
            main.write_text(_render(kind, kind.source, variant))
            entry.files[variant] = str(main.relative_to(root))
            jobs.append((("cmake", "text", variant), ["cmake", "-P", main.name], folder))
            continue
        if kind.category == "cmake-project":
            main = folder / "CMakeLists.txt"
            head = "cmake_minimum_required(VERSION 3.16)\nproject(corpus NONE)\n"
            main.write_text(head + _render(kind, kind.source, variant))
            entry.files[variant] = str(main.relative_to(root))
            jobs.append((("cmake", "text", variant), ["cmake", "-S", ".", "-B", "build"], folder))
            continue
        main = folder / f"{kind.name}_{variant.lower()}.cpp"
        main.write_text(_render(kind, kind.source, variant))
        entry.files[variant] = str(main.relative_to(root))
        sources = [main.name]
        if kind.second is not None:
            other = folder / f"{kind.name}_{variant.lower()}_second.cpp"
            other.write_text(kind.second.format(**_NAMES[variant]))
            sources.append(other.name)
        extra = [x.format(**_NAMES[variant]) for x in kind.extra]
        if kind.category == "linker":
            for cc, tool in (("g++", "gcc"), ("clang++", "clang")):
                argv = [cc, "-o", f"prog_{tool}", *sources, *extra]
                jobs.append(((tool, "text", variant), argv, folder))
            continue
        base = ["-std=c++17", "-c", "-o", "/dev/null", *extra, *sources]
        jobs.append(
            (("gcc", "text", variant), ["g++", "-fdiagnostics-color=always", *base], folder)
        )
        jobs.append((("gcc", "json", variant), ["g++", "-fdiagnostics-format=json", *base], folder))
        dia = ["--serialize-diagnostics", f"clang_{variant.lower()}.dia"]
        jobs.append(
            (("clang", "text", variant), ["clang++", "-fcolor-diagnostics", *dia, *base], folder)
        )
    return jobs


def build_corpus(root: Path, workers: int = 4) -> dict[str, CorpusEntry]:
    """Write every kind under ``root`` (which must be empty or absent) and run the tools.

    Returns:
        kind name → its entry with every output.
    """
    for tool in ("g++", "clang++", "cmake"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} is not installed: run scripts/setup.sh")
    root.mkdir(parents=True, exist_ok=True)
    entries = {k.name: CorpusEntry(k) for k in KINDS}
    jobs = [(entry, *job) for entry in entries.values() for job in _jobs(root, entry)]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(lambda j: _run(j[2], j[3]), jobs))
    for (entry, key, _argv, cwd), output in zip(jobs, results, strict=True):
        entry.outputs[key] = output
        dia = cwd / f"clang_{key[2].lower()}.dia"
        if key[0] == "clang" and dia.is_file():
            entry.serialized[key[2]] = dia.read_bytes()
    return entries

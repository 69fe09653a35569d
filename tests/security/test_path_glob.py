"""A path glob (a permission rule's, the architecture declaration's) is matched in time linear
in the path (air.path_glob).

The glob is the user's, the path the model's: a rule such as ``**/*secret*`` read as a regular
expression went back over a long path from each place in it (quadratic; more wildcards, worse).
The automaton gives the expression's answer for every glob and path (a property test), and a
hostile path against such rules ends in a child with a generous CPU limit (the expression meets
the limit: checked when this was written).
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from air.path_glob import _automaton, glob_match
from tests.cpu_limited import run_cpu_limited


def _as_expression(pattern: str) -> re.Pattern[str]:
    """The glob as the regular expression it always meant (``**/`` any run of directories)."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        else:
            char = pattern[i]
            out += "[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char)
            i += 1
    return re.compile(out)


_GLOB = st.lists(st.sampled_from(["a", "b", "/", ".", "é", "*", "?", "**", "**/"]), max_size=9)
_PATH = st.lists(st.sampled_from(["a", "b", "/", ".", "é", "x", "ab/"]), max_size=12)


@settings(max_examples=3000, deadline=None)
@given(glob=_GLOB.map("".join), path=_PATH.map("".join))
def test_the_automaton_matches_what_the_expression_matches(glob: str, path: str) -> None:
    expected = _as_expression(glob).fullmatch(path) is not None
    assert _automaton(glob).matches(path) is expected
    assert glob_match(glob, path) is expected


def test_a_long_path_against_rules_with_several_wildcards_ends() -> None:
    done = run_cpu_limited(
        "from air.agents.doc_globs import matches\n"
        "from air.path_glob import glob_match\n"
        "from air.security.policy import PolicyRule, rule_matches_path\n"
        "for glob, word in (('**/*secret*', 'secret'), ('src/**/*_test_*.py', '_test_'),\n"
        "                   ('**/*.min.*', '.min')):\n"
        "    path = 'src/' + word * (400_000 // len(word)) + '/x'\n"
        "    rule = PolicyRule(action='deny', path=glob)\n"
        "    covered = rule_matches_path(rule, '/w/' + path, '/w', '/home/u')\n"
        "    named = glob_match(glob, path[:-2] + ('x.py' if glob.endswith('.py') else 'x'))\n"
        "    assert matches(path, glob) is covered\n"
        "    print(glob_match(glob, path), covered, named)\n"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # the file x is no match; the directory is one where it holds the word (it covers x)
    assert done.stdout.splitlines() == ["False True True", "False False True", "False True True"]

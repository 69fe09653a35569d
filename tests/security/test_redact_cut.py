"""Text cut to a bound is redacted before the cut (``SecretRedactor.redact_cut``).

Found: ``fs.read``'s 256,000 characters, ``fs.search``'s 400 characters a line, a failed
``git.commit``'s 500 characters of git's stderr, a worker's summary over the result cap and its
log messages were each cut, then redacted: a secret that began just before the cut was no
longer whole when the redactor saw it, so its first characters were kept, and shown to the
model or recorded. Here the function itself, with registered values, a token shape and a private
key block across the cut; each place in its own tests (``tests/tools/test_fs_large_files.py``,
``tests/supervision/test_tool_guards.py``).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from air.security.redact import CUT_MARGIN, REDACTED, SecretRedactor

SECRET = "hunter2-registered-value"
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2  # a GitHub token's shape, registered nowhere
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    + "MIIEowIBAAKCAQEA7bq98example0key0material0line0of0base64xyzABC\n" * 40
    + "-----END RSA PRIVATE KEY-----\n"
)


@pytest.mark.parametrize(
    ("secret", "registered"), [(SECRET, True), (TOKEN, False)], ids=["value", "shape"]
)
@pytest.mark.parametrize("before_cut", [1, 5, len(SECRET) - 1])
def test_a_secret_across_the_cut_leaves_none_of_it(
    secret: str, registered: bool, before_cut: int
) -> None:
    redactor = SecretRedactor([secret] if registered else [])
    prefix = "x" * (99 - before_cut) + " "
    text = prefix + secret + " and after"
    cut = redactor.redact_cut(text, 100)
    assert cut == (prefix + REDACTED + " and after")[:100]
    assert secret[:before_cut] not in cut
    # what cutting first kept
    assert secret[:before_cut] in redactor.redact(text[:100])


def test_a_value_longer_than_the_margin_is_still_seen_whole() -> None:
    long_value = "v" * (CUT_MARGIN + 500)
    redactor = SecretRedactor([long_value])
    cut = redactor.redact_cut("a" * 10 + long_value, 20)
    assert cut == "a" * 10 + REDACTED


def test_a_private_key_block_across_the_cut_is_redacted() -> None:
    redactor = SecretRedactor()
    text = "config follows\n" + PEM
    cut = redactor.redact_cut(text, 200)
    assert "key0material" not in cut
    assert len(cut) <= 200


def test_text_within_the_bound_is_redacted_whole() -> None:
    redactor = SecretRedactor([SECRET])
    assert redactor.redact_cut(f"a {SECRET} b", 1000) == f"a {REDACTED} b"
    assert redactor.redact_cut("", 10) == ""


@pytest.mark.parametrize("line", [2, 3, 21, 41])
def test_a_part_from_inside_a_key_block_is_redacted_as_within_it(line: int) -> None:
    """A part that begins after a key's BEGIN line (an fs.read from line N, a search's
    matching line) held no key to the redactor when redacted alone: its key lines were kept."""
    redactor = SecretRedactor()
    text = "config follows\n" + PEM + "after: plain\n"
    lines = text.splitlines(keepends=True)
    start = sum(map(len, lines[:line]))
    part = redactor.redact_cut(text, 10_000, start=start)
    assert "key0material" in redactor.redact(text[start:])  # what redacting it alone kept
    assert "key0material" not in part
    assert part.endswith("after: plain\n")
    end = start + len(lines[line])
    assert redactor.redact_cut(text, 400, start=start, end=end) in (REDACTED + "\n", REDACTED)


def test_a_part_after_a_closed_block_or_outside_one_is_kept() -> None:
    redactor = SecretRedactor()
    text = "a line\n" + PEM + "MIIEowIBAAKCAQEA7bq98example0key0material0line0of0base64xyzABC\n"
    last = text.rindex("MIIE")  # looks like key material, but the block ended before it
    assert redactor.redact_cut(text, 400, start=last) == text[last:]
    assert redactor.redact_cut(text, 400, start=0, end=7) == "a line\n"
    assert redactor.redact_cut("a\nb\nc\n", 400, start=2, end=4) == "b\n"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "-----BEGIN RSA PRIVATE KEY-----",
                "-----END RSA PRIVATE KEY-----",
                "MIIEowIBAAKCAQEA7bq98example0key0material0line0of0base64xyzABC",
                "Proc-Type: 4,ENCRYPTED",
                f"password = {SECRET}",
                f"token {TOKEN} and PRIVATE KEY",
                "",
                "plain text\r",
                "x" * 70_000,  # past LINE_MAX: redacted in pieces
            ]
        ),
        max_size=12,
    )
)
def test_redaction_keeps_every_newline_so_a_line_is_found_by_its_number(lines: list[str]) -> None:
    """A search shows each matching line as it reads within its file: ``redacted_lines`` (by
    the line's number: redaction keeps every newline), else the line alone, which is the same
    only where no key block is around it."""
    redactor = SecretRedactor([SECRET])
    text = "\n".join(lines)
    whole = redactor.redact(text).split("\n")
    assert len(whole) == len(text.split("\n"))
    keyed = redactor.redacted_lines(text)
    shown = keyed or [redactor.redact_cut(line, 10**6) for line in text.split("\n")]
    assert shown == whole


def test_a_diff_inside_a_key_block_shows_no_key_line() -> None:
    """A hunk inside a private key block shows its lines without the BEGIN line the redactor
    needs, and a removed key line's ``-`` ended a block whose BEGIN it showed: each line of
    only base64 (mixed case and digits, 40 or more) is key material in a diff."""
    redactor = SecretRedactor([SECRET])
    key = "MIIEowIBAAKCAQEA7bq98example0key0material0line0of0base64xyzABC"
    inside = f"@@ -3,3 +3,3 @@ {key}\n {key}\n-{key}\n+{key.lower()}9Q\n {key}==\n"
    around = f"@@ -1,3 +1,3 @@\n -----BEGIN PRIVATE KEY-----\n-{key}\n+{key}Z\n"
    digest = "ab12" * 16  # a hex digest: no capitals
    other = f"@@ -1 +1 @@\n-{digest}\n+sha: {digest}\n+{'A' * 44}\n token {SECRET}\n"
    shown = redactor.redact_diff(inside + around + other)
    assert "key0material" not in shown
    assert f"-{digest}\n+sha: {digest}\n+{'A' * 44}\n token {REDACTED}\n" in shown
    assert shown.count(REDACTED) == 9
    assert shown.startswith(f"@@ -3,3 +3,3 @@ {REDACTED}\n")
    assert redactor.redact(inside).count("key0material") == 5  # what redacting as text kept
    cut = redactor.redact_diff("x" * 90 + " " + SECRET, 100)
    assert cut == ("x" * 90 + " " + REDACTED)[:100]

"""RedactingStream: what a stream redacted chunk by chunk emits equals redacting it whole.

Registered values and pattern-shaped secrets are placed across every chunk boundary (the property
test), private key blocks span chunks, lines longer than ``LINE_MAX`` are cut the same way, and
UTF-8 characters split between chunks decode whole.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from air.security.redact import LINE_MAX, REDACTED, SecretRedactor

REGISTERED = ("reg-secret-value-1", "Zq8!x-registered-two", "multi-line-top\nmulti-line-bottom")
SHAPED = (
    "sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345",
    "ghp_" + "a1" * 18,
    "AKIAIOSFODNN7EXAMPLE",
    "xoxb-1234567890-abcdefghij",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0T",
    "Authorization: Bearer tok123456789abcdef",
    "DB_PASSWORD=hunter2-value",
    "https://user:pa55word@example.com/x",
    "aws_secret_access_key = " + "A" * 40,
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEabcdefgh\nQUJDREVGR0g=\n-----END RSA PRIVATE KEY-----",
    "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBbbbbbbbbbbbbbbbbb\nnot key material here",
)
SECRETS = (*REGISTERED, *SHAPED)
FILLER = st.text(alphabet=st.sampled_from(list("ab x=:\n_-/é€")), max_size=40)


def _redactor() -> SecretRedactor:
    return SecretRedactor(REGISTERED)


def _streamed(redactor: SecretRedactor, data: bytes, cuts: list[int]) -> str:
    stream = redactor.stream()
    out: list[str] = []
    start = 0
    for cut in [*sorted(cuts), len(data)]:
        out.append(stream.feed_bytes(data[start:cut]))
        start = cut
    out.append(stream.finish())
    return "".join(out)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.lists(st.tuples(FILLER, st.sampled_from(SECRETS)), min_size=1, max_size=5),
    tail=FILLER,
    data=st.data(),
)
def test_a_stream_cut_anywhere_redacts_like_the_whole(
    parts: list[tuple[str, str]], tail: str, data: st.DataObject
) -> None:
    text = "".join(f"{filler} {secret} " for filler, secret in parts) + tail
    raw = text.encode("utf-8")
    # a cut inside every secret, and some anywhere (inside a UTF-8 character too)
    cuts: list[int] = []
    at = 0
    for filler, secret in parts:
        at += len(filler.encode("utf-8")) + 1
        size = len(secret.encode("utf-8"))
        cuts.append(at + data.draw(st.integers(1, size - 1)))
        at += size + 1
    cuts += data.draw(st.lists(st.integers(0, len(raw)), max_size=6))
    redactor = _redactor()
    whole = redactor.redact(text)
    assert _streamed(redactor, raw, cuts) == whole
    for secret in SECRETS:
        for line in secret.split("\n"):
            if len(line) >= 16 and "PRIVATE KEY" not in line and line != "not key material here":
                assert line not in whole


def test_every_boundary_of_a_log_with_secrets() -> None:
    """A cut at every byte of a text holding each secret: the same output each time."""
    text = "build ok\n" + "\n".join(f"line {i}: {s} end" for i, s in enumerate(SECRETS)) + "\n"
    raw = text.encode("utf-8")
    redactor = _redactor()
    whole = redactor.redact(text)
    for secret in ("reg-secret-value-1", "ghp_" + "a1" * 18, "hunter2-value", "MIIEabcdefgh"):
        assert secret not in whole
    assert "multi-line-top" not in whole
    assert "multi-line-bottom" not in whole
    for cut in range(len(raw) + 1):
        assert _streamed(redactor, raw, [cut]) == whole, cut
    assert _streamed(redactor, raw, list(range(len(raw)))) == whole


def test_a_key_block_across_chunks_is_redacted_and_what_follows_kept() -> None:
    block = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\nAAAA==\n"
        "-----END OPENSSH PRIVATE KEY-----"
    )
    text = f"before\n{block} after\nnext line\n"
    redactor = SecretRedactor()
    out = _streamed(redactor, text.encode(), [20, 40, 60])
    assert out == redactor.redact(text)
    assert "b3BlbnNzaC1rZXk" not in out
    assert "AAAA==" not in out
    assert out.startswith("before\n")
    assert out.endswith(f"{REDACTED} after\nnext line\n")


def test_a_line_longer_than_line_max_is_cut_the_same_way_streamed_or_whole() -> None:
    secret = "ghp_" + "b2" * 18
    text = "x" * (LINE_MAX - 10) + secret + "y" * 100 + " " + secret + "\nend\n"
    redactor = SecretRedactor()
    whole = redactor.redact(text)
    assert whole.endswith(f" {REDACTED}\nend\n")  # the secret whole within a piece
    assert _streamed(redactor, text.encode(), [5, LINE_MAX - 3, LINE_MAX + 7]) == whole


def test_a_character_split_between_chunks_decodes_whole() -> None:
    text = "é€😀 token abcdefghijklmnop\n"
    raw = text.encode("utf-8")
    redactor = SecretRedactor()
    assert _streamed(redactor, raw, [1, 3, 5, 8]) == redactor.redact(text)
    assert _streamed(redactor, raw, [1, 3, 5, 8]) == f"é€😀 token {REDACTED}\n"
    assert _streamed(redactor, b"ok \xff\n", [3]) == "ok \ufffd\n"


def test_many_registered_values_are_one_alternation_and_each_is_redacted() -> None:
    values = [f"value-{i:02d}-{'q' * i}x" for i in range(12)]  # more than are searched one by one
    redactor = SecretRedactor(values)
    text = "".join(f"line {v} end\n" for v in values)
    whole = redactor.redact(text)
    assert whole == f"line {REDACTED} end\n" * 12
    assert _streamed(redactor, text.encode(), list(range(0, len(text), 7))) == whole

"""The redactor's trigger search is exact: redacting only the lines that hold a trigger word gives
what every shape over the whole text gives, by either search (the automaton over ASCII text,
``str.find`` over any), with the characters ``(?i)`` matches as ASCII letters (``ſ``, ``ı``,
``İ``, the Kelvin sign); and many registered values are found in one pass (IMPL-REDACT-3).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from air.security.redact import REDACTED, SecretRedactor
from air.security.shapes import shapes as compiled

WORDS = (
    "token", "Bearer", "BASIC", "secret", "Passwd", "api_key", "x-api-key", "Authorization",
    "aws_secret_access_key", "sk-ant-", "sk-proj-", "ghp_", "github_pat_", "glpat-", "xoxb-",
    "rk_live_", "AIza", "akia", "AKIA", "ASIA", "npm_", "pypi-", "hf_", "eyJ", "https://u",
    "credential", "KEY", "monkey", "author",
)  # fmt: skip
ODD = ("\u017f", "\u0131", "\u0130", "\u212a", "é")
SEPARATORS = (" ", "\t", "=", ":", " = ", "\n", "_", "-", ".", "@", "/", '"', "'", ".eyJ")
RUN = st.text(alphabet=st.sampled_from(list("abcdefghijKLMNOPxyz0123456789")), max_size=40)
PIECE = st.one_of(st.sampled_from(WORDS), st.sampled_from(SEPARATORS), RUN)


def _all_stages(text: str) -> str:
    """Every stage's pattern over all of ``text``: no trigger search, no gate."""
    for pattern, repl, _ in compiled().stages:
        text = pattern.sub(repl, text)
    return text


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(PIECE, min_size=1, max_size=30))
def test_lines_with_a_trigger_word_redact_like_every_shape_over_all(pieces: list[str]) -> None:
    text = "".join(pieces)
    shapes = compiled()
    assert text.isascii()
    assert shapes.apply_to_lines(text) == _all_stages(text)
    assert shapes.apply_to_spans(text, shapes._scan(text.encode())) == _all_stages(text)
    found = shapes._scan(text.encode())
    for start, (end, mask) in (shapes._spans(text) or {}).items():  # the gated search's lines
        assert found[start][0] == end
        assert mask & ~found[start][1] == 0


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(st.one_of(PIECE, st.sampled_from(ODD)), min_size=1, max_size=30))
def test_characters_ignore_case_matches_as_letters_are_searched_for(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert compiled().apply_to_lines(text) == _all_stages(text)


def test_every_trigger_word_is_searched_for_in_any_case_the_key_prefixes_as_written() -> None:
    shapes = compiled()
    for _, triggers in shapes.groups:
        for word, mask in triggers:
            for variant in (word, word.upper(), word.title()):
                spans = shapes._scan(f"x\n.{variant}.\ny".encode())
                assert spans.get(2, (0, 0))[1] & mask == mask, variant
    for prefix in ("AIza", "AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA"):
        assert shapes._scan(f"x {prefix}".encode()) == {0: (6, shapes.aws_google_mask)}
        assert shapes._scan(f"x {prefix.lower()}".encode()) == {}


ONE_PER_STAGE = (
    "sk-ant-abcdefghijklmnop1234", "sk-proj-abcdefghijklmnopqrst12", "ghp_" + "a" * 30,
    "github_pat_" + "a" * 40, "glpat-" + "a" * 20, "xoxb-1234567890", "rk_live_" + "a" * 16,
    "AIza" + "a" * 35, "AKIAIOSFODNN7EXAMPLE", "npm_" + "a" * 36, "pypi-" + "a" * 50,
    "hf_" + "a" * 30, "eyJ" + "a" * 10 + ".eyJ" + "b" * 10 + "." + "c" * 10,
    "https://user:pw@host", "aws_secret_access_key=" + "A" * 40, "Bearer\tabcdefghijklmnop",
    "authorization:abcdef", "password=hunter2",
)  # fmt: skip


def test_each_stage_redacts_a_line_holding_only_what_its_matches_need() -> None:
    shapes = compiled()
    assert len(ONE_PER_STAGE) == len(shapes.stages)
    for index, sample in enumerate(ONE_PER_STAGE):
        line = f"({sample}"
        assert shapes.apply(line, 1 << index) == _all_stages(line) != line, sample
        assert shapes.apply_to_lines(line) == _all_stages(line), sample


def test_trigger_words_that_overlap_are_both_found() -> None:
    """``basic`` ends where ``credential`` starts: the assign stage still sees the line."""
    redactor = SecretRedactor()
    assert redactor.redact("BASICREDENTIAL=hunter2hunter2") == f"BASICREDENTIAL={REDACTED}"
    assert redactor.redact("my_secretoken: q1w2e3r4t5y6") == f"my_secretoken: {REDACTED}"


WIDE = ("é", "€", "😀", "\u00a0", "\u2028", "\ud800", "ключ", "秘密")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(st.one_of(PIECE, st.sampled_from(WIDE)), min_size=1, max_size=30))
def test_any_text_searched_in_its_utf8_redacts_like_every_shape_over_all(
    pieces: list[str],
) -> None:
    """The one pass over the UTF-8 of a text with other characters (lone surrogates too)
    finds the lines every stage would change; long texts take that way by themselves."""
    text = "".join(pieces)
    shapes = compiled()
    data = text.encode("utf-8", "surrogatepass")
    assert shapes.apply_to_spans(text, shapes._scan(data), data) == _all_stages(text)
    long = f"{text}\n{'w' * 4096}\n{text}"
    assert shapes.apply_to_lines(long) == _all_stages(long)


def test_a_long_s_or_dotless_i_in_a_secret_name_still_redacts_its_value() -> None:
    redactor = SecretRedactor()
    for line in (
        "db_pa\u017f\u017fword=hunter2hunter2",
        "\u0130NSTANCE_S\u0130GN_SECRET=abc123def",
        "api_\u212aey=hunter2hunter2",  # the Kelvin sign
    ):
        for text in (line + "\nnext\n", "é" * 5000 + "\n" + line + "\nnext\n"):
            out = redactor.redact(text)
            assert out.endswith(f"={REDACTED}\nnext\n"), out


def test_past_a_few_values_one_search_finds_any_of_them_or_none() -> None:
    values = [f"registered-{i:02d}-value" for i in range(20)] + ["clé-secrète-€-42"]
    redactor = SecretRedactor(values)
    plain = "nothing registered here\n" * 50 + "registered-99-value and registered-0\n"
    assert redactor.redact(plain) == plain
    assert redactor.redact("x clé-secrète-€-42 y\n") == f"x {REDACTED} y\n"
    assert redactor.redact("a registered-07-value\ud800 b\n") == f"a {REDACTED}\ud800 b\n"

"""Evaluate a token list: * binds tighter than + and -, parentheses group."""

from calc.tokenizer import tokenize


def evaluate(text):
    tokens = tokenize(text)
    value, rest = _sum(tokens)
    if rest:
        raise ValueError(f"unexpected {rest[0]!r}")
    return value


def _sum(tokens):
    value, tokens = _product(tokens)
    while tokens and tokens[0] in ("+", "-"):
        op, tokens = tokens[0], tokens[1:]
        right, tokens = _product(tokens)
        value = value + right if op == "+" else value + right
    return value, tokens


def _product(tokens):
    value, tokens = _atom(tokens)
    while tokens and tokens[0] == "*":
        right, tokens = _atom(tokens[1:])
        value = value * right
    return value, tokens


def _atom(tokens):
    if not tokens:
        raise ValueError("unexpected end of expression")
    head, tokens = tokens[0], tokens[1:]
    if head == "(":
        value, tokens = _sum(tokens)
        if not tokens or tokens[0] != ")":
            raise ValueError("missing )")
        return value, tokens[1:]
    if isinstance(head, int):
        return head, tokens
    raise ValueError(f"unexpected {head!r}")

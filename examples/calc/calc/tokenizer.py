"""Split an expression into integer and operator tokens."""


def tokenize(text):
    tokens = []
    number = ""
    for ch in text:
        if ch.isdigit():
            number += ch
            continue
        if number:
            tokens.append(int(number))
            number = ""
        if ch in "+-*()":
            tokens.append(ch)
        elif not ch.isspace():
            raise ValueError(f"unexpected character {ch!r}")
    return tokens

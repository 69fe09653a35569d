"""A tiny calculator: tokenize and evaluate integer expressions with + - * and parentheses."""

from calc.evaluator import evaluate
from calc.tokenizer import tokenize

__all__ = ["evaluate", "tokenize"]

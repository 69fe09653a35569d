import unittest

from calc.tokenizer import tokenize


class TokenizerTest(unittest.TestCase):
    def test_numbers_and_operators(self):
        self.assertEqual(tokenize("12 + 3*(4-5)"), [12, "+", 3, "*", "(", 4, "-", 5, ")"])

    def test_trailing_number_is_kept(self):
        self.assertEqual(tokenize("7 * 42"), [7, "*", 42])


if __name__ == "__main__":
    unittest.main()

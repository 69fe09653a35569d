import unittest

from calc.evaluator import evaluate


class EvaluatorTest(unittest.TestCase):
    def test_precedence(self):
        self.assertEqual(evaluate("2 + 3 * 4"), 14)

    def test_subtraction(self):
        self.assertEqual(evaluate("10 - 4 - (3 - 1)"), 4)


if __name__ == "__main__":
    unittest.main()

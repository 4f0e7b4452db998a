"""A part's grade-cell text: every hidden test and its message, wrapped to fit the page."""
from autograder.results.render import FEEDBACK_WIDTH, feedback_text
from autograder.results.result import Result
from autograder.results.result import TestResult as Entry   # not collected as a test class


def result(*tests: Entry) -> Result:
    return Result("residual-connections", seed=7, tests=list(tests))


def test_long_messages_and_names_are_wrapped_without_losing_a_word():
    reason = ("crashed while importing your notebook: No module named 'einops' (install it in your own "
              "environment only; the grader has torch and numpy)")
    name = "a hidden test whose name is long enough to push its line past the width of the page"
    text = feedback_text(result(Entry(name, 1, 0, 4, reason + "\n  second line, indented"),
                                Entry("short", 1, 2, 2, "")), 1)
    lines = text.splitlines()
    assert max(map(len, lines)) <= FEEDBACK_WIDTH, text
    assert " ".join(text.split()).count(" ".join(reason.split())) == 1     # every word, in order
    assert " ".join(" ".join(lines[2:4]).split()) == name and lines[1].endswith("0 / 4")   # name under its score
    assert "second line, indented" in text and "passed    2 / 2  short" in text

"""Hidden tests of residual-connections (docs/contract.md, parts 1 to 5).

Never shipped: the release, public tests and every output contain none of this.
Inputs are drawn per run from the grading seed; `t.ref` is the reference module
loaded from solutions/, Part 4 compares with nn.TransformerEncoderLayer, and Part 5 trains
the student's models on small seeded problems.

A docstring only: a sandbox child imports this package before specs.py, and must load no
hidden module (the layout: autograder/suites/__init__.py).
"""

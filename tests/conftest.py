"""Shared fixtures: the reference solution and the release's stubs as modules (paths in helpers.py)."""
import os

import nbtest
import pytest

from helpers import RELEASE_NB, SOURCE_NB

# A throwaway course secret (core/seeds.py), set before any module-scoped grader reads it and
# inherited by the command lines the tests start: runs are deterministic and ~/.config untouched.
os.environ["RESIDUAL_COURSE_SECRET"] = "00" * 32
os.environ.pop("RESIDUAL_COURSE_SECRET_FILE", None)


@pytest.fixture(scope="session")
def reference():
    """The solution cells of the source notebook, as a module."""
    return nbtest.load(SOURCE_NB, name="reference_solution")


@pytest.fixture(scope="session")
def release():
    """The stub cells of the released notebook, as a module."""
    return nbtest.load(RELEASE_NB, name="released_stubs")

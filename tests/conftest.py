"""Shared fixtures: the reference solution and the release's stubs as modules (paths in helpers.py)."""
import nbtest
import pytest

from helpers import RELEASE_NB, SOURCE_NB


@pytest.fixture(scope="session")
def reference():
    """The solution cells of the source notebook, as a module."""
    return nbtest.load(SOURCE_NB, name="reference_solution")


@pytest.fixture(scope="session")
def release():
    """The stub cells of the released notebook, as a module."""
    return nbtest.load(RELEASE_NB, name="released_stubs")

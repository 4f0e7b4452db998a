"""Shared fixtures: the repository's paths and the reference solution as a module."""
import nbtest
import pytest

from autograder.course import ROOT

ASSIGNMENT = "residual-connections"
SOURCE_NB = ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
RELEASE_NB = ROOT / "assignments" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"


@pytest.fixture(scope="session")
def reference():
    """The solution cells of the source notebook, as a module."""
    return nbtest.load(SOURCE_NB, name="reference_solution")


@pytest.fixture(scope="session")
def release():
    """The stub cells of the released notebook, as a module."""
    return nbtest.load(RELEASE_NB, name="released_stubs")

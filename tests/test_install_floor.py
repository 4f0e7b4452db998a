"""The Python floor that README.md, the student README and pyproject.toml state is the one the pins need."""
import re
from importlib import metadata

from packaging.specifiers import SpecifierSet

from autograder.nbgrading import release
from helpers import ROOT

STUDENT_README = release.RELEASE / "README.md"


def stated_floor() -> str:
    """The floor the student README states ("Python 3.11 or newer"), also pyproject's and README's."""
    floor = re.search(r"Python (3\.\d+) or newer", STUDENT_README.read_text()).group(1)
    assert f'requires-python = ">={floor}"' in (ROOT / "pyproject.toml").read_text()
    assert f"(Python {floor}+," in (ROOT / "README.md").read_text()
    return floor


def test_every_pin_installs_on_the_stated_floor_and_one_needs_it():
    floor = stated_floor()
    below = f"3.{int(floor.split('.')[1]) - 1}"
    pins = dict(re.findall(r"^([\w-]+)==([\w.]+)", (release.RELEASE / "requirements.txt").read_text(), re.M))
    needs = {}
    for name, version in pins.items():
        assert metadata.version(name).split("+")[0] == version, (name, version)   # the grader's venv holds the pin
        needs[name] = SpecifierSet(metadata.metadata(name).get("Requires-Python") or "")
        assert needs[name].contains(floor), (name, str(needs[name]))
    assert any(not spec.contains(below) for spec in needs.values()), {n: str(s) for n, s in needs.items()}

"""Per-submission seeds (core/seeds.py): derived from the code and a course secret kept outside the
repository, recorded in the result, reproducible; --seed still wins; the results store follows suit."""
from __future__ import annotations

import json
import os
import stat

import pytest

from autograder import course
from autograder.core import seeds
from autograder.course import ROOT
from autograder.grading.grader import Grader
from autograder.results.result import Result
from autograder.results.store import Store, StoreError
from helpers import RELEASE_NB

KEY = "ab" * 32


@pytest.fixture(scope="module")
def grader():
    with Grader("residual-connections", course.load(), timeout_s=3) as g:
        yield g


def edited(tmp_path, text: str):
    """The release with `text` appended to the residual_add cell: other code, so other inputs."""
    nb = json.loads(RELEASE_NB.read_text())
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == "residual_add":
            cell["source"] = "".join(cell["source"]) + text
    path = tmp_path / "edited.ipynb"
    path.write_text(json.dumps(nb))
    return path


def test_same_code_same_seed_any_edit_another(grader, tmp_path):
    first, again = grader.grade(RELEASE_NB), grader.grade(RELEASE_NB)
    assert first.seed == again.seed and first.seed_from == "code" and first == again
    assert first.seed == seeds.derive(bytes(32), "residual-connections", first.code_key)
    assert first.secret_id == seeds.secret_id(bytes(32))
    other = grader.grade(edited(tmp_path, "\n# a comment\n"))
    assert other.seed != first.seed and other.code_key != first.code_key


def test_a_given_seed_wins_and_is_recorded(grader):
    result = grader.grade(RELEASE_NB, 1234)
    assert (result.seed, result.seed_from) == (1234, "given")
    assert Result.from_json(result.to_store()) == result            # the store keeps where the seed came from
    assert Result.from_json(result.to_store()).seed_from == "given"


def test_unreadable_files_get_a_derived_seed_too(grader, tmp_path):
    path = tmp_path / "broken.ipynb"
    path.write_text("{not json")
    result = grader.grade(path)
    assert result.seed_from == "code" and result.seed == grader.grade(path).seed
    assert result.score == 0 and "could not read" in result.tests[0].output


def test_derivation_separates_assignments_and_secrets():
    seed = seeds.derive(bytes(32), "residual-connections", KEY)
    assert 0 <= seed < 2 ** 63 and seed == seeds.derive(bytes(32), "residual-connections", KEY)
    assert seed != seeds.derive(bytes(32), "fused-add-norm", KEY)
    assert seed != seeds.derive(b"\1" * 32, "residual-connections", KEY)
    assert seeds.secret_id(bytes(32)) != seeds.secret_id(b"\1" * 32)


@pytest.fixture
def no_env(monkeypatch, tmp_path):
    """No secret in the environment; ~/.config is tmp_path/config."""
    monkeypatch.delenv(seeds.ENV, raising=False)
    monkeypatch.delenv(seeds.ENV_FILE, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "config" / "residual-course" / "secret"


def test_the_secret_file_is_made_once_private_and_reused(no_env, capsys):
    secret = seeds.read_secret()
    assert no_env.is_file() and stat.S_IMODE(no_env.stat().st_mode) == 0o600
    assert stat.S_IMODE(no_env.parent.stat().st_mode) == 0o700
    assert "created the course secret" in capsys.readouterr().err
    assert seeds.read_secret() == secret and capsys.readouterr().err == ""


def test_a_secret_readable_by_others_is_refused(no_env):
    seeds.read_secret()
    os.chmod(no_env, 0o644)
    with pytest.raises(seeds.SecretError, match="chmod 600"):
        seeds.read_secret()


def test_a_secret_inside_the_repository_is_refused(no_env, monkeypatch):
    monkeypatch.setenv(seeds.ENV_FILE, str(ROOT / "course-secret"))
    with pytest.raises(seeds.SecretError, match="inside the course repository"):
        seeds.read_secret()
    assert not (ROOT / "course-secret").exists()


@pytest.mark.parametrize("value", ["abc", "zz" * 32, "00" * 31])
def test_a_malformed_secret_is_refused_with_how_to_make_one(no_env, monkeypatch, value):
    monkeypatch.setenv(seeds.ENV, value)
    with pytest.raises(seeds.SecretError, match="64 hex digits.*token_hex"):
        seeds.read_secret()


def test_a_store_keeps_each_results_seed_and_refuses_another_secret(tmp_path):
    out = tmp_path / "results.jsonl"
    store = Store(out, "residual-connections", secret_id="aaaaaaaaaaaa")
    assert store.seed is None
    for key, seed in (("k1", 5), ("k2", 6)):
        store.put(key, Result("residual-connections", seed, [], seed_from="code", code_key=key))
    again = Store(out, "residual-connections", secret_id="aaaaaaaaaaaa")
    assert (again.get("k1").seed, again.get("k2").seed) == (5, 6)
    with pytest.raises(StoreError, match="graded with the course secret of fingerprint aaaaaaaaaaaa.*bbbbbbbbbbbb"):
        Store(out, "residual-connections", secret_id="bbbbbbbbbbbb")

#!/usr/bin/env bash
# Gradescope builds the grading image once with this script, as root, on its Ubuntu 22.04 base
# image, with the zip unpacked in /autograder/source (docs/gradescope.md). Written by
# `make gradescope`; requirements.txt beside it holds pyproject.toml's lines for what grading imports.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SOURCE=/autograder/source
VENV=/opt/autograder-venv      # outside /autograder: every user may read it (student code imports torch)

apt-get update
# Ubuntu 22.04's python3 is 3.10; the grader needs 3.11 (tomllib), which jammy ships in universe.
apt-get install -y --no-install-recommends python3.11 python3.11-venv ca-certificates
python3.11 -m venv "$VENV"
"$VENV/bin/python" -m pip install --upgrade pip
# torch from its CPU index first: Gradescope has no GPU, and PyPI's wheel pulls in the CUDA
# libraries. The pin's "==" also matches the CPU build's "+cpu" local version.
"$VENV/bin/python" -m pip install --index-url https://download.pytorch.org/whl/cpu "$(grep -E '^torch\b' "$SOURCE/requirements.txt")"
"$VENV/bin/python" -m pip install -r "$SOURCE/requirements.txt"

# The unprivileged user student code runs as (Gradescope's security best practices).
id -u student >/dev/null 2>&1 || adduser student --no-create-home --disabled-password --gecos ""

# Fail the build now rather than on the first submission.
cd "$SOURCE" && PYTHONPATH="$SOURCE" "$VENV/bin/python" -c "import torch, triton, nbtest, autograder.grading.grader, autograder.lms.gradescope.run"

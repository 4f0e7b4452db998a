"""Write the sample classes: notebooks and their expected scores, one folder per assignment.

    python submissions/make_samples.py            # (re)write submissions/ASSIGNMENT/ for each class
    python submissions/make_samples.py --check    # exit 1 if the committed files are stale

Each assignment's class is declared by submissions/ASSIGNMENT.py (dashes as underscores); what
they share, from reading the release to writing expected.json, is samplekit.py.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import samplekit  # noqa: E402  (after the path is set)

if __name__ == "__main__":
    sys.exit(samplekit.main(__doc__))

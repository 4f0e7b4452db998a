"""The class report: what a graded class misunderstood, and which submissions look alike.

    python -m autograder report ASSIGNMENT     # -> instructor/report/ASSIGNMENT/report.html, CSVs, PNGs

classlist.py reads the kept results (a results store) and the notebooks they came from;
summary.py counts per test, per misconception and per part; similarity.py compares the
students' solution cells; page.py writes the files; build.py ties them together.
"""

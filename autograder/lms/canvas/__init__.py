"""Canvas in and out: the roster (roster.py), the bulk download (collect.py), the gradebook CSV
(export.py), and the nbgrader plugins that call them (plugins.py).

    python -m autograder roster EXPORT.csv       # Canvas gradebook export -> nbgrader gradebook
    nbgrader zip_collect residual-connections    # bulk download -> instructor/submitted/
    nbgrader export                              # gradebook -> instructor/canvas/grades.csv
"""

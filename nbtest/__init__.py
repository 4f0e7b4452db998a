"""nbtest: the course's student-side package, the one the public tests, the notebook's check cells and
the grader all read notebooks and apply the rules with (the student release vendors it as one folder).

The public tests (``test_public.py`` beside each notebook) never import the notebook itself: they take a
fixture ``nb``, a module built from the notebook's *module cells* only. Those are

* the code cells nbgrader marks as solution cells (where your code goes), and
* the code cells tagged ``module`` (the notebook's imports).

Cells that plot, demonstrate or run checks are not executed, so importing is fast and has no side
effects. Two ways in:

* ``pytest`` in an assignment's folder (pytest.ini loads ``nbtest.plugin``), or
* ``check(part, globals())`` in the notebook, which runs the same tests for one part against the
  kernel's live objects.

    notebook.py   reading a notebook, its cells and their nbgrader metadata; load() runs its module cells
    cellsource.py a cell's text as the Python IPython runs (magics at the start of a logical line only)
    cellcode.py   what the cells define, read from their syntax trees, and a finding (Violation)
    policy.py     the static rules, read in a cell's source (the grader's own)
    kernel_rules.py  fused-add-norm's kernel rules, which policy.py runs
    monitor.py    the runtime monitor: what the code does as it runs (the grader's own)
    sealed.py     copies of functions reading private copies of their modules' dicts (the monitor's hook)
    rules.py      the rules test: both of those on one part's cells
    rules_text.py the notebooks' import rule, written from policy.py's own lists
    checks.py     check() in the notebook, and the helpers test_public.py uses
    layers.py     a layer called as the notebook's forward runs it (an ffn held in an nn.ModuleList)
    uncompiled.py torch.compile and torch.jit.script as pass-throughs where the grader and pytest run cells
    buffers.py    torch.frombuffer and torch.asarray holding the buffer they share, in the same places
    tensor_values.py  which torch calls hand Python a tensor's values (fused-add-norm's wrapper, traced)
    plugin.py     the pytest plugin: the nb fixture and one line per failing test
    warmup.py     what runs once per process before a notebook's code
"""
from .checks import check, names_shape, report_stubs_in_one_line, run_public, value_error
from .notebook import (MAX_NOTEBOOK_BYTES, Limits, NotebookError, cell_label, cell_parts, cell_text, grade_id,
                       is_module_cell, is_solution, load, nbgrader_meta, notebook_beside, open_file, read_bounded,
                       read_file, read_notebook, source_of, top_level_names)
from .rules import follows_rules, rule_breaks
from .warmup import first_calls, interpreter_as_on_gpu, names_optim

__all__ = ["MAX_NOTEBOOK_BYTES", "Limits", "NotebookError", "cell_label", "cell_parts", "cell_text", "check",
           "first_calls", "follows_rules", "grade_id", "interpreter_as_on_gpu", "is_module_cell", "is_solution", "load",
           "names_optim", "names_shape", "nbgrader_meta", "notebook_beside", "open_file", "read_bounded", "read_file",
           "read_notebook", "rule_breaks", "run_public", "source_of", "top_level_names", "value_error"]

report_stubs_in_one_line()   # imported in a notebook: a stub a cell reaches is one line, not a traceback
interpreter_as_on_gpu()   # in a notebook, its setup cell has imported Triton before this import

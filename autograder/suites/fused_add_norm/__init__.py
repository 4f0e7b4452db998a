"""Hidden tests of fused-add-norm (docs/contract.md): part 1 correctness, part 2 timing.

Never shipped. The submission runs on the GPU where the grading machine has one and in
Triton's interpreter on CPU tensors where it has none; inputs are drawn per run from the
grading seed and every expected value is computed here, in float64, from F.layer_norm.

Points of part 1 (30): 20 for the values (the wrapper's contract: h, y, widths, shapes,
eps, weight and bias, fp16, inputs, errors), which a wrapper made of torch ops also earns,
and 10 for fusion, which it does not: "fused" tests watch, in the child, which Triton
kernels defined in the notebook a call launches and which torch operators run around them.
Part 2 (10) times the kernel against eager PyTorch on CUDA at course.toml's [timing] size, each
timed call on inputs drawn afresh and its results checked; without CUDA it is skipped and its
points follow course.toml's without_cuda (grading.grader), except under Grader(time_on_cpu=True),
which runs it on the CPU's clock at CPU's size and threshold (part2.py: CPU) to test the machinery.

A docstring only: a sandbox child imports this package before specs.py, and must load no
hidden module (the layout: autograder/suites/__init__.py).
"""

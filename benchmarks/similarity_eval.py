"""Precision and recall of the class report's similarity check on copies made by program.

    .venv/bin/python benchmarks/similarity_eval.py [--seed 0] [--threshold T] [--min-shared N] [--k K]

The evaluation set is tests/copier_edits.py's: honest notebooks of different styles and authors
(BASES), each copied with every copier's edit alone, all of them together, and three random
triples. A copy must be listed with its base; no pair of notebooks by different authors may be.
Prints, per edit, how many copies are listed (recall) and their lowest score; then the honest
pairs' highest scores, and precision and recall at the rule (course.toml [report] by default).
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "assignments")]

import copier_edits  # noqa: E402
from autograder import course  # noqa: E402
from autograder.core.extract import Template  # noqa: E402
from autograder.course import SOLUTIONS  # noqa: E402
from autograder.report import similarity  # noqa: E402
from autograder.report.code import release_code, solution_ids  # noqa: E402


def main() -> int:
    c = course.load()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threshold", type=float, default=c.report.similarity_threshold)
    p.add_argument("--min-shared", type=int, default=c.report.min_shared)
    p.add_argument("--k", type=int, default=similarity.K, help="tokens a fingerprint spans (similarity.K)")
    args = p.parse_args()
    similarity.K = args.k
    a = c.assignment(copier_edits.ASSIGNMENT)
    ids = solution_ids(Template(a.notebook_path(SOLUTIONS)))
    start = time.perf_counter()
    codes, positives, negatives = copier_edits.evaluation_set(ids, args.seed)
    prints = similarity.fingerprints(codes, release_code(a.notebook_path(ROOT / "assignments")))
    every = {frozenset((p.a, p.b)): p for p in similarity.compare(prints, 0.0, 0)}
    listed = {frozenset((p.a, p.b)) for p in similarity.compare(prints, args.threshold, args.min_shared)}
    seconds = time.perf_counter() - start
    score = lambda pair: every[frozenset(pair)].score if frozenset(pair) in every else 0.0
    shared = lambda pair: every[frozenset(pair)].shared if frozenset(pair) in every else 0

    per_edit = defaultdict(list)
    for base, copy in positives:
        per_edit[copy.split("~", 1)[1]].append((base, copy))
    print(f"rule: score >= {args.threshold:g} over >= {args.min_shared} shared fingerprints "
          f"(K = {similarity.K} tokens); {len(codes)} notebooks, {len(positives)} copies, "
          f"{len(negatives)} pairs by different authors; {seconds:.1f} s\n")
    print("| edit | copies changed by it | copies listed | lowest score | fewest shared |")
    print("| --- | --- | --- | --- | --- |")
    for edit, pairs in per_edit.items():
        found = sum(frozenset(p) in listed for p in pairs)
        changed = sum(codes[base] != codes[copy] for base, copy in pairs)
        print(f"| {edit} | {changed}/{len(pairs)} | {found}/{len(pairs)} | {min(map(score, pairs)):.2f} "
              f"| {min(map(shared, pairs))} |")
    tp = sum(frozenset(p) in listed for p in positives)
    fp = sum(frozenset(p) in listed for p in negatives)
    worst = sorted(negatives, key=score, reverse=True)[:5]
    print("\nhighest-scoring pairs by different authors: "
          + ", ".join(f"{a} ~ {b} {score((a, b)):.2f} ({shared((a, b))} shared)" for a, b in worst))
    print(f"\n| | listed | not listed |\n| --- | --- | --- |\n| copies | {tp} | {len(positives) - tp} |\n"
          f"| different authors | {fp} | {len(negatives) - fp} |")
    precision = tp / (tp + fp) if tp + fp else 1.0
    print(f"\nprecision {precision:.3f}, recall {tp / len(positives):.3f}")
    return 0 if tp == len(positives) and fp == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

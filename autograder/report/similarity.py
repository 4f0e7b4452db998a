"""Pairs of students whose solution cells overlap, found with copydetect's winnowing fingerprints.

    codes = {"alice": code, ...}                         # what each student wrote (solution_code)
    prints = fingerprints(codes, stub_code(release))
    listed = compare(prints, 0.6, 50)                    # course.toml [report]: the pairs to look at
    view_a, view_b = side_by_side(prints, pair)          # HTML-escaped code, shared runs in <mark>

copydetect's filter (Pygments) turns every name into V, F or O and every string into S, so
renaming variables changes nothing; fingerprints the release's stubs also have (signatures,
docstrings) are dropped as boilerplate. A pair's score is containment: the share of one side's
fingerprints found in the other, the larger of the two, computed for all pairs at once as one
sparse product (copydetect's own compare_files takes ~12 ms a pair: 200 s for a class of 200).
copydetect hashes with the built-in hash(), salted per process, so fingerprints are made and
compared in one process and never kept.
"""
from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass

import numpy as np
from copydetect import CodeFingerprint, compare_files
from copydetect.utils import highlight_overlap
from scipy import sparse

NOISE = 25   # k-gram length in filtered characters (copydetect's noise_t); window 1 keeps every k-gram


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    share_a: float     # share of a's fingerprints also in b
    share_b: float
    shared: int        # fingerprints in common
    identical: str     # "", "byte-identical" or "identical after renaming"

    @property
    def score(self) -> float:
        """The larger share: a copied half of the assignment still scores high on the copier's side."""
        return max(self.share_a, self.share_b)


def fingerprints(codes: dict[str, str], boilerplate: str) -> dict[str, CodeFingerprint]:
    """{student: copydetect fingerprint} without the boilerplate's k-grams; identical code is lexed once."""
    stubs = CodeFingerprint("stubs.py", NOISE, 1, fp=io.StringIO(boilerplate))
    common = np.unique(np.array(list(stubs.hashes), dtype=np.int64))
    done: dict[str, CodeFingerprint] = {}
    for code in dict.fromkeys(codes.values()):
        done[code] = CodeFingerprint("student.py", NOISE, 1, common, fp=io.StringIO(code))
    return {name: done[code] for name, code in codes.items()}


def compare(prints: dict[str, CodeFingerprint], threshold: float, min_shared: int) -> list[Pair]:
    """The pairs to look at, most similar first: a score at the threshold over at least min_shared
    fingerprints (two short, mostly unfinished notebooks can share their one canonical line and
    score 1.0), or the same fingerprints on both sides (identical code, however short)."""
    names = sorted(prints)
    column: dict[int, int] = {}
    rows, cols = [], []
    for i, name in enumerate(names):
        for h in prints[name].hashes:
            rows.append(i)
            cols.append(column.setdefault(int(h), len(column)))
    m = sparse.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(len(names), max(len(column), 1)))
    shared = sparse.triu(m @ m.T, k=1).tocoo()      # shared[i, j]: fingerprints i and j have in common
    size = np.asarray(m.sum(axis=1)).ravel()
    i, j, n = shared.row, shared.col, shared.data
    score = np.maximum(n / size[i], n / size[j])
    keep = ((score >= threshold) & (n >= min_shared)) | ((n == size[i]) & (n == size[j]))
    digest = {name: hashlib.sha256(prints[name].raw_code.encode()).hexdigest() for name in names}
    out = []
    for i, j, n in zip(i[keep], j[keep], n[keep]):
        a, b = names[i], names[j]
        same = ("byte-identical" if digest[a] == digest[b] else
                "identical after renaming" if prints[a].filtered_code == prints[b].filtered_code else "")
        out.append(Pair(a, b, float(n / size[i]), float(n / size[j]), int(n), same))
    return sorted(out, key=lambda p: (-p.score, p.a, p.b))


def side_by_side(prints: dict[str, CodeFingerprint], pair: Pair) -> tuple[str, str]:
    """Both students' code, HTML-escaped, with the stretches they share in <mark> (copydetect's highlighter)."""
    fa, fb = prints[pair.a], prints[pair.b]
    _, _, (slices_a, slices_b) = compare_files(fa, fb)
    return (highlight_overlap(fa.raw_code, slices_a, "<mark>", "</mark>", escape_html=True)[0],
            highlight_overlap(fb.raw_code, slices_b, "<mark>", "</mark>", escape_html=True)[0])

"""Pairs of students whose solution cells do the same thing, however it is typed.

    codes = {"alice": code, ...}                         # what each student wrote (solution_code)
    prints = fingerprints(codes, release_code(release))
    listed = compare(prints, 0.45, 50)                   # course.toml [report]: the pairs to look at
    groups = clusters(listed)                            # students joined by listed pairs, largest first
    regions(prints, pair) -> [(html_a, html_b), ...]     # matched units side by side, shared lines in <mark>

A notebook's fingerprints are the k-grams of K tokens of its normalised units (normalise.py),
never spanning two units, so reordered functions and moved cells keep theirs; a unit shorter
than K is one fingerprint. Fingerprints the release's own code has (signatures, stubs, the
setup cells) are boilerplate and dropped. A pair's score is containment: the share of one
side's fingerprints found in the other, the larger of the two, so code a copier adds (a helper's
call, dead code the normaliser does not see) does not hide what was copied. All pairs are
scored at once, as one sparse product.
"""
from __future__ import annotations

import hashlib
import html
from collections import Counter
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from .normalise import Unit, names_of, units

K = 12   # tokens a fingerprint spans: about one statement (benchmarks/similarity_eval.py)
EXCERPT_LINES = 400   # lines of a unit a pair's page shows, at most


@dataclass(frozen=True)
class Print:
    code: str
    units: list[Unit]
    grams: dict[int, list[tuple[int, int]]]   # fingerprint -> [(unit index, first token)], boilerplate left out
    shape: int                                # equal for code identical after normalising (order aside)


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    share_a: float     # share of a's fingerprints also in b
    share_b: float
    shared: int        # fingerprints in common
    identical: str     # "", "byte-identical" or "identical after normalising"

    @property
    def score(self) -> float:
        """The larger share: a copied half of the assignment still scores high on the copier's side."""
        return max(self.share_a, self.share_b)


def fingerprints(codes: dict[str, str], release: str) -> dict[str, Print]:
    """{student: Print}, without the release's fingerprints; identical code is normalised once."""
    prescribed = names_of(release)
    boilerplate = set(_grams(units(release, prescribed)))
    done: dict[str, Print] = {}
    for code in dict.fromkeys(codes.values()):
        us = units(code, prescribed)
        grams: dict[int, list[tuple[int, int]]] = {}
        for h, where in _grams(us).items():
            if h not in boilerplate:
                grams[h] = where
        done[code] = Print(code, us, grams, hash(tuple(sorted(u.tokens for u in us))))
    return {name: done[code] for name, code in codes.items()}


def _grams(us: list[Unit]) -> dict[int, list[tuple[int, int]]]:
    out: dict[int, list[tuple[int, int]]] = {}
    for i, u in enumerate(us):
        for start in range(max(len(u.tokens) - K + 1, 1)):
            text = "\x1f".join(u.tokens[start:start + K]).encode()
            h = int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little", signed=True)
            out.setdefault(h, []).append((i, start))
    return out


def compare(prints: dict[str, Print], threshold: float, min_shared: int) -> list[Pair]:
    """The pairs to look at, most similar first: a score at the threshold over at least min_shared
    fingerprints (two short, mostly unfinished notebooks can share their one canonical line and
    score 1.0), or the same fingerprints on both sides (identical code, however short)."""
    names = sorted(prints)
    column: dict[int, int] = {}
    rows, cols = [], []
    for i, name in enumerate(names):
        for h in prints[name].grams:
            rows.append(i)
            cols.append(column.setdefault(h, len(column)))
    m = sparse.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(len(names), max(len(column), 1)))
    shared = sparse.triu(m @ m.T, k=1).tocoo()      # shared[i, j]: fingerprints i and j have in common
    size = np.asarray(m.sum(axis=1)).ravel()
    i, j, n = shared.row, shared.col, shared.data
    score = np.maximum(n / size[i], n / size[j])
    keep = ((score >= threshold) & (n >= min_shared)) | ((n == size[i]) & (n == size[j]))
    out = []
    for i, j, n in zip(i[keep], j[keep], n[keep]):
        a, b = prints[names[i]], prints[names[j]]
        same = ("byte-identical" if a.code == b.code else
                "identical after normalising" if a.shape == b.shape else "")
        out.append(Pair(names[i], names[j], float(n / size[i]), float(n / size[j]), int(n), same))
    return sorted(out, key=lambda p: (-p.score, p.a, p.b))


@dataclass(frozen=True)
class Cluster:
    members: list[str]   # sorted
    strongest: Pair      # its most similar pair
    pairs: int           # listed pairs inside it


def clusters(pairs: list[Pair]) -> list[Cluster]:
    """The connected components of the listed pairs (three copies of one notebook are one cluster, not three
    pairs), largest first, then by their strongest pair."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = x = parent[parent[x]]
        return x

    for p in pairs:
        parent[root(p.a)] = root(p.b)
    inside: dict[str, list[Pair]] = {}
    for p in pairs:
        inside.setdefault(root(p.a), []).append(p)
    members: dict[str, list[str]] = {}
    for name in parent:
        members.setdefault(root(name), []).append(name)
    out = [Cluster(sorted(members[r]), max(ps, key=lambda p: p.score), len(ps)) for r, ps in inside.items()]
    return sorted(out, key=lambda c: (-len(c.members), -c.strongest.score, c.members))


def regions(prints: dict[str, Print], pair: Pair) -> list[tuple[str, str]]:
    """The pair's matched units side by side, in a's order: each unit of a that shares fingerprints
    with b, next to the unit of b it shares most with, as each student wrote them (HTML-escaped,
    numbered lines, the lines the shared fingerprints come from in <mark>)."""
    a, b = prints[pair.a], prints[pair.b]
    common = a.grams.keys() & b.grams.keys()
    partner: dict[int, Counter] = {}
    for h in common:
        for ua, _ in a.grams[h]:
            partner.setdefault(ua, Counter()).update(ub for ub, _ in b.grams[h])
    marked_a, marked_b = _marked(a, common), _marked(b, common)
    seen_a, seen_b = _seen(a), _seen(b)
    out = []
    for ua in sorted(partner):
        ub = partner[ua].most_common(1)[0][0]
        out.append((_excerpt(a, ua, marked_a, *seen_a), _excerpt(b, ub, marked_b, *seen_b)))
    return out


def _seen(p: Print) -> tuple[list[str], set[int]]:
    """p's code split into lines, and the lines any of its units has a token on: once a pair, not once an excerpt."""
    return p.code.split("\n"), {n for u in p.units for n in u.lines}


def _marked(p: Print, common: set[int]) -> dict[int, set[int]]:
    """{unit index: the lines its shared fingerprints come from}."""
    out: dict[int, set[int]] = {}
    for h in common:
        for i, start in p.grams[h]:
            out.setdefault(i, set()).update(p.units[i].lines[start:start + K])
    return out


def _excerpt(p: Print, index: int, marked: dict[int, set[int]], lines: list[str], taken: set[int]) -> str:
    """The unit's lines, numbered, at most EXCERPT_LINES of them (a unit may span 200,000 lines of comments)."""
    own = set(p.units[index].lines)
    out, shown = [], 0
    first, last = max(min(own), 1), min(max(own), len(lines))
    for n in range(first, last + 1):
        if n not in own and n in taken:
            continue                     # a unit's lines enclose another's (a class, the module): not this one's
        if shown == EXCERPT_LINES:
            out.append(f"      ... (up to line {last} left out)")
            break
        text = f"{n:4d}  {html.escape(lines[n - 1])}"
        out.append(f"<mark>{text}</mark>" if n in marked.get(index, ()) else text)
        shown += 1
    return "\n".join(out)

"""Markdown an honest student may write in a written answer, generated from a seed (tests/test_answers.py fuzzes
the answers PDF with it): headings, links (external, in-page anchors, empty), HTML, tables, math, images, lists,
quotes, code, and text in several scripts.

    markdown(seed) -> str
"""
import random

WORDS = ["residual", "gradient", "the", "norm", "x_0", "layer", "déjà", "数学", "שלום", "🙂", "a" * 60, "∂L/∂x",
         "O(1)", "&amp;", "<", ">", '"quoted"', "it's", "*", "_", "`", "|", "\\", "$", "#"]
LATEX = [r"x^2", r"\frac{a}{b}", r"\partial L / \partial x_0", r"\sum_{l=1}^{L} \alpha^l", r"\sqrt{d}",
         r"x_{l+1} = x_l + F(x_l)", r"\begin{aligned} a &= b \\ c &= d \end{aligned}", r"\mathbb{E}[x]",
         r"\left( \frac{1}{2} \right)", r"\|x\|_2", r"\text{if } x > 0", r"\{a, b\}", r"\nabla", r"\frac{", r"x^"]
ANCHORS = ["derivation", "Derivation", "part-2", "", "a b", "x" * 40]
TARGETS = ["https://example.org/a?b=1&c=2", "http://x", "mailto:a@b.c", "page.html", "../x", "javascript:alert(1)", ""]
IMAGES = ["fig.png", "https://e.org/x.svg", "data:image/png;base64,AAAA", "", "#x", "attachment:image.png"]
CODE = ["$HOME/data", "--out $OUT", "a\tb", "x = {'a': 1}", "<b>not bold</b>"]      # code that is not math, nor HTML
TAGS = ["sup", "sub", "b", "i", "em", "strong", "code", "span", "u", "s", "del", "kbd", "mark", "small"]
LONE = ["<br>", "<br/>", "&nbsp;", "&rarr;", "&#8594;", "\\*", "~~x~~", '<img src="x.png" width="100">',
        '<a name="derivation"></a>', "---", "***", "<hr>", "    indented code", "1) item", "- [ ] task", "- [x] done",
        "\\$5 and \\$10", "costs $3", "<u>u</u>", "<mark>m</mark>", "<kbd>Ctrl</kbd>"]


def words(r: random.Random, n: int = 0) -> str:
    return " ".join(r.choice(WORDS) for _ in range(n or r.randint(1, 12)))


INLINE = [
    lambda r: f"[{words(r, 2)}](#{r.choice(ANCHORS)})",
    lambda r: f"[{words(r, 2)}]({r.choice(TARGETS)})",
    lambda r: f"![{words(r, 1)}]({r.choice(IMAGES)})",
    lambda r: f'<a href="{r.choice(["#" + r.choice(ANCHORS), *TARGETS])}">{words(r, 2)}</a>',
    lambda r: f"${r.choice(LATEX)}$",
    lambda r: r.choice(["**{}**", "*{}*", "`{}`"]).format(words(r, 2)),
    lambda r: f"`{r.choice(CODE)}`",
    lambda r: "<{0}>{1}</{0}>".format(r.choice(TAGS), words(r, 2)),
    lambda r: r.choice(LONE),
    words,
]


def line(r: random.Random) -> str:
    return " ".join(r.choice(INLINE)(r) for _ in range(r.randint(1, 4)))


def _table(r: random.Random) -> str:
    cols = r.randint(1, 5)
    rows = ["| " + " | ".join(r.choice(INLINE)(r) for _ in range(cols)) + " |" for _ in range(r.randint(1, 4))]
    rule = "|" + "|".join(r.choice(["---", ":--", ":-:", "--:"]) for _ in range(cols)) + "|"
    return "\n".join([rows[0], rule, *rows[1:]])


def _html_table(r: random.Random) -> str:
    cells = lambda: "".join("<{0}>{1}</{0}>".format(r.choice(["td", "th"]), line(r)) for _ in range(r.randint(1, 4)))
    return "<table>" + "".join(f"<tr>{cells()}</tr>" for _ in range(r.randint(1, 3))) + "</table>"


BLOCKS = [
    lambda r: "#" * r.randint(1, 6) + " " + r.choice(["Derivation", "Part 2", words(r, 3)]),
    _table,
    _html_table,
    lambda r: f"$${r.choice(LATEX)}$$",
    lambda r: "\n".join(f"{r.choice(['-', '*', '1.', '+'])} {line(r)}" for _ in range(r.randint(1, 4))),
    lambda r: "\n".join("  " * i + "- " + line(r) for i in range(r.randint(1, 5))),
    lambda r: "\n".join("> " + line(r) for _ in range(r.randint(1, 3))),
    lambda r: f"```{r.choice(['', 'python', 'bash'])}\n" + "\n".join(r.choice(["", "\t", "    "]) + r.choice(
        [words(r), r.choice(CODE)]) for _ in range(r.randint(1, 4))) + "\n```",
    lambda r: "\n".join(f"{n}. {line(r)}" for n in range(r.randint(1, 9), 10)[:r.randint(1, 4)]),
    lambda r: f"{words(r, 2)}\n: {line(r)}",
    lambda r: f"<div>{line(r)}</div>",
    lambda r: f"<details><summary>{words(r, 2)}</summary>{line(r)}</details>",
    lambda r: f'<p align="center">{line(r)}</p>',
    line,
]


def markdown(seed: int) -> str:
    r = random.Random(seed)
    return "\n\n".join(r.choice(BLOCKS)(r) for _ in range(r.randint(1, 10)))

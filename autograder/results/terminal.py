"""Text for a terminal: what a student wrote (a quoted line, a file name, a message) made unable to drive it.

    print(shown(listing))                 # newlines and tabs kept: a table, a list of lines
    print(shown(file_name, keep=""))      # one line: a newline in it cannot forge another line

Every command that prints what a submission holds (grade, review, autograde, collect, status) prints it
through `shown`.
"""
from __future__ import annotations


def shown(text: str, keep: str = "\n\t") -> str:
    """`text` with every character a terminal could act on written as its Python escape (ESC as \\x1b, so
    "ESC ]0;title" and "ESC [2K" are plain text): C0 controls but those in `keep`, DEL, C1 controls
    (CSI as \\x9b), bidi overrides and isolates and other format characters, line and paragraph
    separators. What is left is printable, and the escape still shows an instructor what was there."""
    return "".join(c if c.isprintable() or c in keep else ascii(c)[1:-1] for c in text)

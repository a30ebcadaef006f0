#!/usr/bin/env python3
"""The 50 MB LaTeX document of docs/scale.md: 114 copies of the Carleson blueprint's chapters
(datasets/carleson-blueprint/chapter/main.tex) in one amsart document, every \\label, \\ref,
\\eqref, \\cref, \\Cref, \\uses and \\proves argument prefixed c<copy>-.

    python3 docs/gen-50mb-tex.py OUT.tex             # identical copies
    python3 docs/gen-50mb-tex.py OUT.tex --distinct  # a word of its own per copy and prose line
"""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent
src = (root / "datasets/carleson-blueprint/chapter/main.tex").read_text(encoding="utf-8")
args = re.compile(r"\\(label|ref|eqref|cref|Cref|uses|proves)\{([^}]*)\}")
distinct = "--distinct" in sys.argv[2:]
out = ["\\documentclass{amsart}\n\\begin{document}\n"]
for c in range(114):
    text = args.sub(
        lambda m: "\\%s{%s}" % (m.group(1), ",".join(f"c{c}-{a.strip()}" for a in m.group(2).split(","))),
        src,
    )
    if distinct:
        lines = text.split("\n")
        text = "\n".join(
            l + f" copy{c}w{i % 97}" if l.strip() and not l.lstrip().startswith(("\\", "%", "$")) else l
            for i, l in enumerate(lines)
        )
    out.append(text)
out.append("\\end{document}\n")
pathlib.Path(sys.argv[1]).write_text("".join(out), encoding="utf-8")

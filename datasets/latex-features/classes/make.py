"""Writes one small LaTeX document per document class into ./<name>/main.tex and compiles it
twice with pdflatex (when run with --compile), keeping main.aux: LaTeX's own numbers for every
label, the ground truth of the parser's class defaults (crates/parse/tests/it/real_world.rs) and of
`ledger eval latex`. The documents are written here; no class's sample document is used.

    python3 make.py [--compile]     # from this folder; TeX Live 2022 (Debian texlive-latex-base,
                                    # -recommended, -extra, -science, -publishers)
"""
import os, sys, subprocess, glob
CLASSES = {
 # name: (class line, has chapters, predefined theorems)
 "article": (r"\documentclass{article}", False, False),
 "article-numberwithin": (r"\documentclass{article}", False, False),
 "report": (r"\documentclass{report}", True, False),
 "book": (r"\documentclass{book}", True, False),
 "amsart": (r"\documentclass{amsart}", False, False),
 "amsart-numberwithin": (r"\documentclass{amsart}", False, False),
 "amsbook": (r"\documentclass{amsbook}", True, False),
 "amsproc": (r"\documentclass{amsproc}", False, False),
 "revtex4": (r"\documentclass{revtex4}", False, False),
 "revtex4-1": (r"\documentclass{revtex4-1}", False, False),
 "revtex4-2": (r"\documentclass{revtex4-2}", False, False),
 "elsarticle": (r"\documentclass{elsarticle}", False, False),
 "acmart": (r"\documentclass{acmart}", False, True),
 "llncs": (r"\documentclass{llncs}", False, True),
 "IEEEtran": (r"\documentclass{IEEEtran}", False, False),
 "memoir": (r"\documentclass{memoir}", True, False),
 "scrartcl": (r"\documentclass{scrartcl}", False, False),
 "scrbook": (r"\documentclass{scrbook}", True, False),
 "mnras": (r"\documentclass{mnras}", False, False),
 "aastex631": (r"\documentclass{aastex631}", False, False),
}
def body(name, chapters, predefined):
    pre = [CLASSES[name][0]]
    pre.append(r"\usepackage{amsmath}")
    if name.endswith("-numberwithin"):
        pre.append(r"\numberwithin{equation}{section}")
        pre.append(r"\newtheorem{theorem}{Theorem}[section]")
        pre.append(r"\newtheorem{lemma}[theorem]{Lemma}")
    elif not predefined:
        pre.append(r"\newtheorem{theorem}{Theorem}")
        pre.append(r"\newtheorem{lemma}[theorem]{Lemma}")
    b = [r"\begin{document}", r"\title{Numbering in %s}" % name, r"\author{A. Writer}"]
    if name.startswith("aastex") or name.startswith("revtex") :
        b.append(r"\begin{abstract}Short.\end{abstract}")
    if not name.startswith("aastex"):  # aastex631's \maketitle stops at a missing collaboration count
        b.append(r"\maketitle")
    def chap(k):
        return [r"\chapter{Chapter %d}\label{ch:%d}" % (k, k), "Text of the chapter, see Section~\\ref{sec:1b}."] if chapters else []
    for k in (1, 2):
        b += chap(k)
        b += [
         r"\section{First of %d}\label{sec:%da}" % (k, k),
         r"See Equation~\eqref{eq:%d-one} and Figure~\ref{fig:%d}." % (k, k),
         r"\begin{equation}\label{eq:%d-one} a = b \end{equation}" % k,
         r"\begin{align}", r"a &= b \label{eq:%d-al1}\\" % k, r"c &= d \notag \\", r"e &= f \label{eq:%d-al3}" % k, r"\end{align}",
         r"\begin{equation}\label{eq:%d-split}\begin{split} a &= b \\ &= c \end{split}\end{equation}" % k,
         r"\begin{subequations}\label{eq:%d-sub}\begin{align} a &= 1 \label{eq:%d-suba} \\ b &= 2 \label{eq:%d-subb}\end{align}\end{subequations}" % (k, k, k),
         r"\begin{equation} x = y \tag{*}\label{eq:%d-tag}\end{equation}" % k,
         r"\begin{equation}\label{eq:%d-after} z \end{equation}" % k,
         r"\begin{eqnarray} a &=& b \label{eq:%d-ea1}\\ c&=&d \nonumber \\ e &=& f\label{eq:%d-ea3}\end{eqnarray}" % (k, k),
         r"\begin{gather} a \label{eq:%d-g1}\\ b \notag\\ c \label{eq:%d-g3}\end{gather}" % (k, k),
         r"\begin{figure}\centering A figure.\caption{A figure}\label{fig:%d}\end{figure}" % k,
         r"\begin{table}\centering\caption{A table}\label{tab:%d}A table.\end{table}" % k,
         r"\begin{theorem}\label{thm:%d}A theorem.\end{theorem}" % k,
         r"\begin{lemma}\label{lem:%d}A lemma.\end{lemma}" % k,
         r"\subsection{Sub of %d}\label{sec:%da1}" % (k, k),
         r"Text.",
         r"\subsubsection{Subsub of %d}\label{sec:%da11}" % (k, k),
         r"Text.",
         r"\begin{equation}\label{eq:%d-deep} w \end{equation}" % k,
         r"\begin{equation}\begin{aligned} a &= b \\ c &= d \end{aligned}\label{eq:%d-aligned}\end{equation}" % k,
         r"\begin{align} a &= b \tag{A%d}\label{eq:%d-tagA} \\ c &= d \label{eq:%d-aftertag} \end{align}" % (k, k, k),
         r"\begin{multline} a + b \\ = c \label{eq:%d-multline}\end{multline}" % k,
         r"\begin{alignat}{2} a &= b &\quad c &= d \label{eq:%d-alignat}\end{alignat}" % k,
         r"\begin{gather*} a \\ b \end{gather*}",
         r"\begin{equation*} x \tag{T%d}\label{eq:%d-startag}\end{equation*}" % (k, k),
         r"\begin{align} a &= b \nonumber \\ \intertext{and} c &= d \label{eq:%d-inter}\end{align}" % k,
         r"\section{Second of %d}\label{sec:%db}" % (k, k),
         r"\begin{theorem}\label{thm:%db}Another.\end{theorem}" % k,
         r"\begin{equation}\label{eq:%d-two} q \end{equation}" % k,
        ]
    b += [r"\appendix"] + ([r"\chapter{Appendix chapter}\label{ch:app}"] if chapters else []) + [r"\section{An appendix}\label{sec:app}", r"\begin{equation}\label{eq:app} r \end{equation}",
          r"\begin{theorem}\label{thm:app}In the appendix.\end{theorem}", r"\subsection{Appendix sub}\label{sec:appsub}", "Text."]
    b.append(r"\end{document}")
    return "\n".join(pre + b) + "\n"
here = os.path.dirname(os.path.abspath(__file__))
for name, (cls, ch, pre) in CLASSES.items():
    d = os.path.join(here, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "main.tex"), "w") as f:
        f.write(body(name, ch, pre))
    if "--compile" in sys.argv:
        for _ in range(2):
            subprocess.run(["pdflatex", "-interaction=nonstopmode", "main.tex"], cwd=d,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for f in glob.glob(os.path.join(d, "*")):
            if not f.endswith(("main.tex", "main.aux")):
                os.remove(f)

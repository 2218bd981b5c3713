# Hand labels for the model's answers, written by reading the sources the model was given.
# key: record id -> {sentence index: (label, supported_by, why)}; label s=supported,
# u=unsupported, n=no_claim. supported_by: 0-based source indexes for a plain answer,
# citation numbers for a --cite answer. Sentences not listed are labelled by rule in
# build.py (punctuation only -> no_claim; lines of an echoed "Source N:" block -> echo rule).
L = {}
L['A01-compact'] = {
 0: ('u', [], '\\chname writes text below text (p.29); the main command is \\ch (p.3)'),
 1: ('u', [], 'sources do not say input spaces show in the output'),
}
L['A01-cite'] = {
 0: ('u', [], 'invented syntax \\ch[arrow]{<type>}...; \\charrow is for arrows, \\ch[options]{input} is the main command'),
 1: ('u', [], 'nothing says spaces show up; [10] does not exist'),
}
L['A02-compact'] = {
 0: ('u', [], 'no `resonance arrow` command; p.21 says <-> is the resonance arrow'),
 1: ('u', [], 'no `equilibrium arrow` command; p.21 says <=> is the equilibrium arrow'),
 2: ('n', [], 'lead-in'),
 3: ('n', [], 'restates the question term'),
 4: ('n', [], 'restates the question term'),
}
L['A02-cite'] = {
 0: ('u', [], 'no `resonance_arrow` command; p.21 says <->'),
 1: ('u', [], 'no `equilibrium_arrow` command; p.21 says <=>'),
}
L['A03-compact'] = {
 0: ('u', [], 'says there is no way; source 0 (p.15) gives \\iffalse ... \\fi and the comment environment'),
}
L['A03-cite'] = {
 0: ('u', [], 'Plain TeX Chinese is a TOC line, not an answer; nothing says it comments out text'),
}
L['A04-compact'] = {
 0: ('s', [2], 'p.14: only dvipdfmx (dvipdfm-cjk), configured to use TrueType fonts'),
}
L['A05-compact'] = {
 0: ('s', [0], 'p.12: CJK inserts \\CJKglue between characters; redefine it to adjust'),
 1: ('u', [], 'no default value is given in the sources'),
}
L['A06-compact'] = {
 0: ('u', [], 'contradicted: a contraction of Debra and Ian (p.11); Toy Story is for codenames'),
 1: ('s', [0], "p.11: pronounced Deb'-ee-en, short e, emphasis on first syllable"),
 2: ('s', [0, 3], 'p.11 verbatim'),
}
L['A06-cite'] = {
 0: ('u', [], 'contradicted: a contraction of Debra and Ian (p.11); Toy Story is for codenames'),
 1: ('s', [1], "p.11: pronounced Deb'-ee-en, short e, emphasis on first syllable"),
 2: ('s', [1, 4], 'p.11 verbatim'),
}
L['A07-compact'] = {
 0: ('u', [], 'no `apt-get hold` command in the sources'),
 1: ('u', [], 'invented: removal of configuration files is not a condition of hold'),
 2: ('n', [], 'lead-in'),
 3: ('s', [3], 'p.40: with dpkg, export the list of package selections'),
 4: ('s', [3], 'p.40: dpkg --get-selections \\* > selections.txt'),
 5: ('u', [], "'and their versions' not stated"),
 6: ('s', [3], 'p.40: edit the resulting file selections.txt (editors only as e.g.)'),
 7: ('s', [3], 'p.40: change the line containing the package you wish to hold'),
 8: ('u', [], 'line format not shown in the sources'),
 9: ('n', [], 'lead-in'),
 10: ('u', [], 'invented line format "(hold)"'),
 11: ('u', [], 'save-and-exit step not in the sources'),
 12: ('u', [], 'sources do not say how to release a hold'),
 13: ('u', [], 'apt-get purge removes a package; not an unhold'),
}
L['A07-cite'] = {
 1: ('u', [], "the prompt's example, not in the sources"),
 3: ('u', [], "the prompt's example, not in the sources"),
}
L['A08-compact'] = {
 0: ('s', [1], 'p.29: buzz (Debian 1.1) was the spaceman Buzz Lightyear'),
 1: ('s', [0], 'p.30: decision made by Bruce Perens, DPL, working at Pixar'),
}
L['A08-cite'] = {
 0: ('n', [], 'line fragment of a copied source sentence'),
 1: ('n', [], 'line fragment of a copied source sentence'),
 2: ('s', [1], 'p.30: Bruce Perens, DPL at the time, working at Pixar'),
 3: ('n', [], 'line fragment of a copied source sentence'),
}
L['A09-compact'] = {
 0: ('s', [1], 'p.20 verbatim: mail debian-private with [VAC]'),
 1: ('s', [1], 'p.20 verbatim'),
 2: ('s', [1], 'p.20 verbatim: mark yourself on vacation in the Developers Database'),
 3: ('s', [1], 'p.20 verbatim'),
}
L['A09-cite'] = {
 0: ('s', [1, 2], 'p.19-20: two things you should do'),
 1: ('s', [2], 'p.20 verbatim: mail debian-private with [VAC]'),
 2: ('s', [2], 'p.20 verbatim'),
 3: ('s', [2], 'p.20 verbatim'),
 4: ('s', [2], 'p.20 verbatim'),
 5: ('s', [2], 'p.20 verbatim: OpenPGP coordination pages'),
 6: ('s', [2], 'p.20 verbatim'),
}
L['A04-cite'] = {}
L['A05-cite'] = {}
L['A10-compact'] = {
 0: ('u', [], 'contradicted: p.59 says 1.5-2 -> 1.5-2.1; +nmuX is for native packages'),
}
L['A10-cite'] = {
 0: ('s', [1, 2], 'p.59: if the current version is 1.5-2, an NMU gets 1.5-2.1'),
 1: ('s', [2], 'p.59: new upstream -> revision 0, e.g. 1.6-0.1'),
 2: ('s', [2], 'p.59 verbatim'),
 3: ('n', [], 'line fragment of a copied source sentence'),
 4: ('s', [2], 'p.59: 1.5+nmu3 -> 1.5+nmu4'),
}
L['A11-compact'] = {
 0: ('s', [0, 2], 'p.60: the DELAYED queue'),
 1: ('s', [0], 'p.60 verbatim: DELAYED/7'),
 2: ('s', [0], 'p.60 verbatim'),
 3: ('s', [0], 'p.60: cancel using dcut'),
 4: ('s', [0], 'p.60: dcut cancel foo_1.2-1.1_all.changes'),
 5: ('s', [1], 'p.59: give the maintainer a few days to react, especially if ...'),
}
L['A11-cite'] = {
 0: ('u', [], 'dcut cancels an upload; uploading to DELAYED is not done with dcut'),
 1: ('n', [], 'lead-in'),
 2: ('s', [3], 'p.59 delays list'),
 3: ('s', [3], 'p.59 delays list'),
 4: ('s', [3], 'p.59 delays list'),
 5: ('s', [3], 'p.59 delays list'),
 6: ('s', [3], 'p.59 verbatim'),
 7: ('s', [3], 'p.59 verbatim'),
 8: ('s', [2, 3], 'p.59 verbatim'),
}
L['A12-compact'] = {
 0: ('s', [0], 'yes: p.20 syntonly + \\syntaxonly only checks errors'),
}
L['A12-cite'] = {
 0: ('s', [3], "headings strung together; '缺点显而易见' is in [3] p.14 (and [1] holds the first heading as a title only), not in [2]"),
}
L['A13-compact'] = {
 0: ('u', [], 'contradicted: p.79 says 1.8 times, not twice'),
 1: ('s', [0], 'p.79: base 1.2x, so \\linespread{1.5} gives 1.8x'),
 2: ('s', [0], "p.79: locally changing a paragraph's spacing needs \\selectfont (the condition lost its 不是)"),
 3: ('n', [], 'code fragment copied from the source'),
 4: ('n', [], 'line fragment copied from the source'),
 5: ('n', [], 'line fragment copied from the source'),
 6: ('n', [], 'table residue'),
 7: ('n', [], 'heading'),
 8: ('s', [1], 'p.74: \\fontsize takes size and baselineskip'),
 9: ('n', [], 'line fragment copied from the source'),
 10: ('s', [1], 'p.74: base skip 1.2x the font size'),
 11: ('n', [], 'line fragment copied from the source'),
}
L['A13-cite'] = {
 0: ('u', [], 'contradicted: p.79 says 1.8 times, not 2.0'),
}
L['A14-compact'] = {
 0: ('s', [0], 'p.7: chapter 6: bibliographies, indexes, colour and hyperlinks'),
}
L['A14-cite'] = {
 0: ('s', [4], 'p.87: chapter 6 first two features are BibTeX and makeindex'),
}
L['A15-compact'] = {
 0: ('s', [0], 'p.9: original idea first voiced by Marvin Minsky'),
 1: ('u', [], 'contradicted: design July 1968, coding began July 1969 (p.9)'),
}
L['A15-cite'] = {
 0: ('s', [1], 'p.9: idea first voiced by Marvin Minsky'),
 1: ('u', [], 'coding did not start in July 1968 (design did); the right 1969 is cited [3], which is about writefile'),
}
L['A16-compact'] = {
 0: ('u', [], 'forget removes an assumption; assume(n+1>0) is what stops the question (p.47)'),
 1: ('u', [], 'contradicted: after forget Maxima asks again (p.47-48)'),
}
L['A16-cite'] = {
 0: ('s', [1, 2], 'p.46-47: integrate asks "Is n+1 zero or nonzero?"'),
 1: ('u', [], 'assume, not forget, tells it once (p.47)'),
 2: ('n', [], 'code line copied from [3]; the claim is in the previous sentence'),
 3: ('u', [], 'contradicted: after forget Maxima asks again'),
 4: ('u', [], 'invented; forget(n+1>0) is how to drop it'),
}
L['A17-compact'] = {
 0: ('u', [], 'packages are chapter 13 (p.89); no source says what chapter 4 covers'),
}
L['A17-cite'] = {
 0: ('u', [], 'packages are chapter 13 (p.89), not chapter 4'),
 1: ('s', [4], 'p.89 verbatim (about chapter 13)'),
}
L['A18-compact'] = {
 0: ('s', [0], 'p.4 verbatim: \\Block centres an element in merged cells'),
 1: ('s', [0], 'p.4 verbatim: upper leftmost cell, two arguments'),
 2: ('s', [0], 'p.4: first argument i-j, i rows'),
 3: ('n', [], 'line fragment of a copied source sentence'),
 4: ('s', [0], 'p.4: default 1-1'),
 5: ('n', [], 'line fragment of a copied source sentence'),
 6: ('s', [0], 'p.4: * extends the block to the last row'),
 7: ('s', [0], 'p.4: second argument is the content'),
 8: ('s', [0], 'p.4: \\\\ may be used in the content'),
 9: ('n', [], 'line fragment of a copied source sentence'),
 10: ('s', [1], 'p.45 copied (a backslash added)'),
 11: ('n', [], 'line fragment of a copied source sentence'),
 12: ('s', [1], 'p.45 verbatim: one more compilation'),
 13: ('s', [1], 'p.45 verbatim: written on the aux file'),
 14: ('n', [], 'cut-off footnote fragment'),
}
L['A18-cite'] = {
 0: ('s', [1], 'p.4 verbatim: \\Block centres an element in merged cells'),
 1: ('s', [1], 'p.4 verbatim: upper leftmost cell, two arguments'),
 2: ('s', [1], 'p.4: first argument i-j, i rows'),
 3: ('n', [], 'line fragment of a copied source sentence'),
 4: ('s', [1], 'p.4: default 1-1'),
 5: ('n', [], 'line fragment of a copied source sentence'),
 6: ('s', [1], 'p.4: * extends the block to the last row'),
 7: ('s', [1], 'p.4: second argument is the content'),
 8: ('s', [1], 'p.4: \\\\ may be used in the content'),
 9: ('n', [], 'line fragment of a copied source sentence'),
}
L['A19-compact'] = {
 0: ('s', [0], 'p.19: \\RowStyle with rowcolor and color keys'),
 1: ('n', [], 'lead-in'),
 2: ('s', [0], 'p.19 example copied verbatim'),
 3: ('u', [], 'wrong: the style applies to the 2nd and 3rd rows; there are no "other three rows"'),
}
L['A19-cite'] = {
 0: ('u', [], 'no such option; p.19 uses \\RowStyle[nb-rows=2,rowcolor=...,color=white]{\\sffamily}'),
 1: ('n', [], 'lead-in'),
 2: ('u', [], 'an altered copy of [4] (p.17) with no colour or font keys; it does not do what is claimed'),
 3: ('u', [], 'invented description of the code'),
}
L['A20-compact'] = {
 0: ('n', [], 'restates the question'),
 1: ('n', [], 'lead-in'),
 2: ('u', [], 'wrong: by default the caption is composed below the tabular (p.32)'),
 3: ('u', [], 'wrong: the key caption-above of \\NiceMatrixOptions does it (p.32), not \\tabularnote'),
}
L['A20-cite'] = {
 0: ('u', [], 'garbled; does not say where the caption goes; [80] does not exist'),
 1: ('s', [3], 'p.76 verbatim'),
 2: ('s', [3], 'p.76 verbatim; [81] does not exist'),
}
L['A21-compact'] = {
 0: ('s', [3], 'p.9 recommends NimbusRomNo9L via txr2.map (for the Acrobat accent problem, not the printer one)'),
}
L['A21-cite'] = {
 0: ('s', [4], 'p.9 says it in [4]; [3] is about glyphs in low positions'),
 1: ('u', [], 'invented: p.9 says pdfTeX does not handle slanting; nothing says this font handles it'),
}
L['A22-compact'] = {
 0: ('s', [0], 'p.8: TX glyphs are thinner than Times (about 85%)'),
}
L['A22-cite'] = {
 0: ('s', [1], 'p.8: TX glyphs are thinner than Times'),
 1: ('u', [], 'contradicted: thinner (85% rule thickness), not a different size nor thicker'),
}
L['A23-compact'] = {
 0: ('s', [1], 'p.2: stay with LaTeX/amsmath integrals -> option [nointegrals]'),
 1: ('u', [], 'contradicted: [nointegrals] adds no integrals; amssymb/amsfonts are for other symbols'),
}
L['A23-cite'] = {
 0: ('n', [], 'lead-in'),
 1: ('s', [1], 'p.2: no option or [compat1] gives these integrals'),
 **{k: ('n', [], 'bare command name, a list entry') for k in (2, 3, 4, 5, 6, 10, 11, 12, 13, 14, 19, 20, 21, 22)},
 7: ('s', [1], 'p.2 verbatim: compatible with 1.x, not with amsmath'),
 8: ('s', [2, 3], 'p.1-2: [integrals] makes these integrals available'),
 9: ('n', [], 'line fragment'),
 15: ('n', [], 'page number'),
 16: ('n', [], 'heading'),
 17: ('n', [], 'heading'),
 18: ('s', [3], 'p.1 verbatim: math mode only'),
 23: ('n', [], 'heading'),
 24: ('s', [3], 'p.1 verbatim: a set of integral symbols'),
 25: ('s', [2, 3], 'p.1-2: [integrals] makes these integrals available'),
 26: ('n', [], 'cut-off fragment'),
}
L['A24-compact'] = {
 0: ('s', [0], 'p.1: provided by Roland Waldi, Karlsruhe'),
 1: ('s', [0], 'p.1: requires version 2 (1992)'),
 2: ('s', [0], 'p.1 verbatim'),
}
L['A24-cite'] = {}
L['Z01-compact'] = {
 0: ('u', [], '\\CJKglue is the glue between characters, not a package; the indent is \\CJKindent (p.12)'),
 1: ('u', [], 'no definition of \\CJKglue is given in the sources'),
 2: ('u', [], 'invented definition'),
 3: ('u', [], 'invented: 1.5em glue'),
 4: ('u', [], 'wrong: \\CJKindent gives the two-character indent'),
}
L['Z01-cite'] = {
 0: ('s', [2], 'p.80: \\indent / \\noindent control paragraph indentation'),
 1: ('u', [], 'command misspelt \\CJKKindent (p.12: \\CJKindent); the forcing wording is about \\indent'),
 2: ('u', [], "units are listed on p.79 but '来设置对齐方式' (for alignment) is invented"),
 3: ('u', [], 'command misspelt \\CJKKindent (p.12: \\CJKindent)'),
 4: ('u', [], "units are listed on p.79 but '来设置对齐方式' is invented"),
 5: ('u', [], 'command misspelt \\CJKKindent (p.12: \\CJKindent)'),
 6: ('n', [], 'cut-off repetition'),
}
L['Z02-compact'] = {
 0: ('n', [], 'circular: restates the question, gives no reason'),
}
L['Z02-cite'] = {
 0: ('u', [], 'no source gives the reason (only the TOC line of FAQ 30)'),
 1: ('u', [], "hyphenation text of [2] (p.29) attributed to 'CJK and CJK*' systems, which it does not mention"),
 2: ('s', [2], 'p.29 verbatim'),
 3: ('u', [], 'invented: \\newline is not given as a fix'),
}
L['Z04-compact'] = {
 0: ('n', [], 'lead-in'),
 1: ('n', [], 'list heading naming a tool'),
 2: ('s', [1], 'p.15: twocolumn option of the standard classes'),
 3: ('s', [1], 'p.15 verbatim'),
 4: ('s', [1], 'p.15 verbatim'),
 5: ('n', [], 'list heading naming a tool'),
 6: ('s', [1], 'p.15: multicol avoids the unbalanced-columns problem'),
 7: ('u', [], 'mixes sources: the switching commands do not align pages'),
 8: ('u', [], 'contradicted: in two-column mode \\newpage changes column, not page (p.84)'),
 9: ('n', [], 'list heading naming a tool'),
 10: ('s', [2], 'p.84: \\raggedbottom / \\flushbottom'),
 11: ('n', [], 'cut-off fragment'),
}
L['Z04-cite'] = {
 0: ('u', [], 'wrong: \\raggedbottom/\\flushbottom align pages vertically; the abstract uses \\twocolumn[...] (p.16)'),
 1: ('n', [], 'lead-in'),
 2: ('s', [2], 'p.15: twocolumn option produces two-column documents'),
 3: ('u', [], 'wrong: \\raggedbottom does not widen the abstract'),
}
L['Z05-compact'] = {
 0: ('u', [], 'rotate= is a TikZ transform option (p.103); nothing says it turns a page landscape'),
 1: ('n', [], 'lead-in'),
 **{k: ('n', [], 'code line copied from the TikZ example; no claim by itself') for k in range(2, 10)},
}
L['Z05-cite'] = {
 0: ('u', [], 'no \\rotate command for pages in the sources; rotate is a TikZ option (p.103)'),
 1: ('n', [], 'lead-in'),
 **{k: ('n', [], 'code line copied from the TikZ example; no claim by itself') for k in range(2, 10)},
 10: ('u', [], 'invented: nothing rotates a page 90 degrees; [4] is about footnotes/TOC, [1] about tables'),
}
L['Z06-compact'] = {
 0: ('s', [1], 'p.18: defn and lem share the thm counter'),
}
L['Z06-cite'] = {
 0: ('u', [], "'occurs in the evening' is invented (from the prompt's example); [2] does not say it"),
}
L['Z07-compact'] = {
 0: ('u', [], 'wrong: subequations gives (1a)(1b) (p.18), not (2.1)'),
 1: ('s', [2], 'p.18: \\renewcommand{\\theequation}{\\thesection.\\arabic{equation}}'),
 2: ('n', [], 'lead-in'),
 3: ('u', [], 'invented: editing amsmath.sty'),
 4: ('u', [], 'invented: editing amsmath.sty'),
 5: ('u', [], 'invented: adding code to amsmath.sty'),
 6: ('s', [2], 'the code is the \\renewcommand of p.18 in a document'),
 7: ('u', [], 'invented step (saving amsmath.sty)'),
 8: ('u', [], 'invented step (saving amsmath.sty)'),
 9: ('n', [], 'list heading'),
 10: ('n', [], 'lead-in'),
 11: ('n', [], 'cut-off code'),
}
L['Z07-cite'] = {
 0: ('u', [], 'command swapped: p.19 says \\tag plus \\ref gives variant numbers; \\numberwithin is for section prefixes'),
 1: ('n', [], 'lead-in'),
 **{k: ('n', [], 'code line / output residue copied from p.19') for k in range(2, 16)},
}
L['Z08-compact'] = {0: ('n', [], 'a bare letter; names no command')}
L['Z08-cite'] = {0: ('n', [], 'a bare letter; names no command')}
L['Z09-compact'] = {0: ('n', [], 'repeats the question')}
L['Z09-cite'] = {
 0: ('s', [1, 2], 'p.20: \\limits / \\nolimits change the position'),
 1: ('n', [], 'line fragment'),
 2: ('s', [1], 'p.20: inline -> right, display -> above/below'),
 **{k: ('n', [], 'line fragment / bare command') for k in range(3, 8)},
}
L['Z10-compact'] = {0: ('u', [], 'invented: sources only state the problem (p.24), not table width as a fix')}
L['Z10-cite'] = {
 0: ('u', [], 'invented: resizing the picture is not given as a fix'),
 1: ('s', [3], 'p.10: the body is between \\begin{document} and \\end{document}'),
 2: ('s', [3], 'p.10 verbatim: the preamble'),
 3: ('s', [3], 'p.10: text after \\end{document} is ignored'),
 4: ('s', [3], 'p.10: called postamble'),
 5: ('n', [], 'line fragment'),
 6: ('n', [], 'a question'),
 7: ('u', [], 'invented: resizing the picture is not given as a fix'),
 8: ('s', [3], 'p.10: the body is between \\begin{document} and \\end{document}'),
 9: ('s', [3], 'p.10 verbatim: the preamble'),
 10: ('s', [3], 'p.10: text after \\end{document} is ignored'),
}
L['Z11-compact'] = {
 0: ('s', [0], 'p.26: overcite makes citations superscript'),
 1: ('n', [], 'lead-in'),
 2: ('s', [0], 'p.26: \\usepackage{overcite} or natbib super'),
 3: ('s', [0], 'p.26: modify the definitions (there: to add brackets)'),
 4: ('n', [], 'copied remark, no claim'),
 5: ('s', [1], 'p.87: \\cite is the basic command'),
 6: ('n', [], 'bare code line'),
 7: ('s', [1], 'p.87: citation is the label; optional argument adds text'),
 8: ('s', [1], 'p.87: \\cite[page 22]{Paper2013} gives [13, page 22]'),
 9: ('n', [], 'line fragment'),
 10: ('s', [1], 'p.87: thebibliography environment'),
 11: ('s', [2], 'p.90: \\bibliographystyle sets the style'),
 12: ('s', [2], 'p.90: then cite in the text'),
 13: ('n', [], 'line fragment'),
 14: ('n', [], 'line fragment'),
 15: ('n', [], 'cut-off fragment'),
}
L['Z11-cite'] = {
 0: ('s', [1], 'p.26: overcite package'),
 1: ('n', [], 'lead-in'),
 2: ('n', [], 'bare code line'),
 3: ('s', [1], 'p.26: natbib super option'),
 4: ('n', [], 'bare code line'),
 5: ('s', [1], 'p.26: no brackets'),
 6: ('s', [1], 'p.26: modify the definitions to add brackets'),
}
L['Z09-cite'][27] = ('n', [], 'echoed line cut off mid-character')
L['Z12-compact'] = {
 0: ('s', [0], 'p.28: \\footnote in a standard table is swallowed'),
 1: ('s', [0], 'p.28 verbatim'),
 2: ('s', [0], 'p.28: put the table in a minipage'),
 3: ('s', [0], 'p.28: the footnotes then appear below the table'),
 **{k: ('n', [], 'code line copied from p.28') for k in range(4, 13)},
}
L['Z12-cite'] = {
 0: ('s', [1], 'p.28: the footnote text is swallowed (translated)'),
 1: ('s', [1], 'p.28 (translated)'),
 2: ('s', [1], 'p.28: minipage, footnotes below the table (translated)'),
 **{k: ('n', [], 'code line copied from p.28') for k in range(3, 12)},
}
L['Z13-compact'] = {0: ('n', [], "a stray word ('New' from the FAQ heading)")}
L['Z12-compact'].update({k: ('n', [], 'table-of-contents residue') for k in range(13, 97)})
L['Z13-cite'] = {0: ('u', [], "a stray word and the prompt's example 'occurs in the evening'; [1],[2] say neither")}
L['Z14-compact'] = {0: ('n', [], 'vacuous: says only that they have some use')}
L['Z14-cite'] = {}
L['Z15-compact'] = {0: ('u', [], 'invented: p.33 says click the line count in the status bar to toggle line numbers')}
L['Z15-cite'] = {
 0: ('u', [], 'invented: WinEdt shows line numbers automatically'),
 1: ('u', [], "p.33 says click Wrap so it turns grey; 'right-click and select' is invented"),
 2: ('n', [], 'list heading'),
 3: ('u', [], 'mixes p.33: spaces/Tab at line start stop continuation; nothing is typed into the line count'),
 4: ('u', [], 'invented consequence'),
 5: ('n', [], 'list heading'),
 6: ('s', [4], 'p.33: the line count (4th box from left) toggles line numbers'),
 7: ('u', [], 'invented consequence'),
 8: ('n', [], 'list heading'),
 9: ('u', [], 'invented: Right Margin is set under Options > Preferences, not by a shortcut'),
 10: ('u', [], 'invented shortcut Ctrl+Shift+R'),
 11: ('n', [], 'cut-off fragment'),
}
L['Z16-compact'] = {
 0: ('s', [0, 3], 'p.23: DVI viewers may not show EPS'),
 1: ('n', [], 'lead-in'),
 2: ('u', [], "p.23 says old DVI viewers show the BoundingBox; 'Yap by default' is not stated"),
 3: ('u', [], 'invented: Ghostscript described as a PostScript generator that lacks psfrag'),
 4: ('u', [], 'invented: printing problem'),
 5: ('u', [], 'contradicted: p.23 says neither the file nor the viewer is broken'),
 6: ('u', [], 'p.23: Yap/Windvi/Xdvi can show EPS through Ghostscript (limited)'),
 7: ('s', [3], 'p.23: support is limited, no psfrag'),
 8: ('n', [], 'cut-off fragment'),
}
L['Z16-cite'] = {
 0: ('s', [4], 'p.23: the viewers support EPS only in a limited way, often display it wrongly'),
 1: ('u', [], "p.23 says (old) DVI viewers show the BoundingBox; attributing it to Yap is not stated"),
}
L['Z17-compact'] = {0: ('u', [], 'wrong command: p.116 says update --all --self updates everything; --list lists updates')}
L['Z17-cite'] = {0: ('s', [1], 'right marker: p.116 tlmgr update --list')}

# Scripted answers (origin "scripted"): sentences copied from the sources and then
# altered (a number changed, a name or command swapped, a claim invented) or given a
# wrong [N] marker. Each uses the sources/citations of the model run named in 'base'.
# labels: one (label, supported_by, why) per sentence, in order; supported_by as in
# labels_model.py (citation numbers when the base run cited, else 0-based source indexes).
S = []


def add(id, base, sents):
    S.append({'id': id, 'base': base, 'answer': ' '.join(t for t, *_ in sents),
              'labels': [tuple(x[1:]) for x in sents]})


add('A01-s1', 'A01-compact', [
 ('The main command of chemformula is \\ch[options]{input}.', 's', [1, 3], 'p.3: \\ch[<options>]{<input>} main command'),
 ('The command \\charrow{type} prints an arrow of the given type.', 's', [2], 'p.27: \\charrow{<type>} print the arrow type'),
 ('The standalone command \\chname was introduced in version 3.0.', 'u', [], 'number changed 4.0->3.0'),
 ('\\chname places text 1 below text 2.', 's', [0], 'p.29: placing text 1 below of text 2'),
])
add('A02-s1', 'A02-compact', [
 ('In chemformula a resonance arrow is written <-> and an equilibrium arrow <=>.', 's', [0], 'p.21 arrow table'),
 ('The reversed equilibrium arrow >=< was introduced in version 4.5.', 's', [0], 'p.21: >=< introduced in version 4.5'),
 ('The isolobal arrow is written <=o>.', 'u', [], 'swapped: <o> is isolobal, <=o> is quasi equilibrium'),
 ('All these arrows are drawn with PSTricks.', 'u', [], 'name swapped TikZ->PSTricks'),
 ('The arrow <=>> is the unbalanced equilibrium arrow to the right.', 's', [2], 'p.22'),
])
add('A03-s1', 'A03-compact', [
 ('可以用 \\iffalse 和 \\fi 把需要注释的内容包含起来，LaTeX 编译时会忽略这些内容。', 's', [0], 'p.15'),
 ('也可以使用 verbatim 宏包提供的 comment 环境。', 's', [0], 'p.15'),
 ('也可以使用 ifthen 宏包提供的 \\ignore 命令。', 'u', [], 'invented: package and command swapped'),
])
add('A04-s1', 'A04-compact', [
 ('生成可以拷贝粘贴中文的 PDF 文件目前只有 pdfTeX 可以做到。', 'u', [], 'name swapped dvipdfmx->pdfTeX'),
 ('它必须配置成直接使用中文 Type1 字库。', 'u', [], 'swapped TrueType->Type1'),
 ('dvipdfmx 原名 dvipdfm-cjk。', 's', [2], 'p.14'),
])
add('A05-s1', 'A05-compact', [
 ('CJK 会在两个汉字之间插入一个 \\CJKglue。', 's', [0], 'p.12'),
 ('修改 \\CJKglue 的定义就可以调整汉字的间距。', 's', [0], 'p.12'),
 ('在 CJK 环境中使段首缩进两个中文字符宽度的命令是 \\CJKspace。', 'u', [], 'command swapped \\CJKindent->\\CJKspace'),
 ('两个表格项之间的间距相当于 3\\tabcolsep。', 'u', [], 'number changed 2->3'),
])
add('A06-s1', 'A06-cite', [
 ("The project name is pronounced Deb'-ee-en, with emphasis on the first syllable [1].", 's', [1], 'right marker: p.11'),
 ('The word is a contraction of the names of Debra and Ian Murdock, who founded the project [3].', 's', [1, 4], 'wrong marker: [3] is the codename list; [1] says it'),
 ('Release codenames are characters from the Toy Story movies by Pixar [3].', 's', [3], 'right marker: p.29'),
 ('Ian Murdock prefers the pronunciation eye-an [4].', 'u', [], "contradicted: Ian prefers ee'-en"),
])
add('A08-s1', 'A08-cite', [
 ('Debian 1.1 was called buzz, after the spaceman Buzz Lightyear [1].', 's', [2], 'wrong marker: [1] lists buster..sid; [2] says buzz'),
 ('The decision to use Toy Story names was made by Bruce Perens [2].', 's', [1], 'wrong marker: [2] is the codename list; [1] says Perens'),
 ('Debian 2.0 was named hamm, after the piggy bank [2].', 's', [2], 'right marker: p.29'),
 ('Debian 3.0 was named sarge, after the sergeant of the Green Plastic Army Men [4].', 'u', [], 'number changed: sarge is 3.1, 3.0 is woody'),
 ('At the time Bruce Perens was working at DreamWorks [1].', 'u', [], 'name swapped Pixar->DreamWorks'),
])
add('A09-s1', 'A09-cite', [
 ('Send a mail to debian-private@lists.debian.org with [VAC] prepended to the subject [1].', 's', [2], 'wrong marker: [1] only says there are two things to do; [2] says it'),
 ('Mark yourself as on vacation in the Developers Database [2].', 's', [2], 'right marker: p.20'),
 ('The mail must be sent at least 14 days before you leave [2].', 'u', [], 'invented deadline'),
 ('The vacation flag is removed automatically when you come back [2].', 'u', [], "contradicted: don't forget to remove the flag"),
])
add('A10-s1', 'A10-cite', [
 ('If the current version is 1.5-2, the NMU gets version 1.5-2.1 [3].', 's', [1, 2], 'wrong marker: [3] is about changelog; [1],[2] say it'),
 ('If a new upstream version is packaged in the NMU, the Debian revision is set to 1, for example 1.6-1.1 [2].', 'u', [], 'number changed 0->1'),
 ('The first line of the changelog entry must say that the upload is an NMU [1].', 's', [3], 'wrong marker: [1] is versioning; [3] says it'),
 ('For a native package at version 1.5, an NMU gets version 1.5+nmu1 [1].', 's', [1], 'right marker: p.59'),
])
add('A11-s1', 'A11-compact', [
 ('For an NMU fixing only release-critical bugs older than 7 days, the recommended delay is 2 days.', 's', [2], 'p.59 delays list'),
 ('Other NMUs should use a delay of 15 days.', 'u', [], 'number changed 10->15'),
 ('The maintainer can cancel the delayed upload themselves with dcut.', 'u', [], 'contradicted: the maintainer cannot cancel it'),
 ('You can cancel your upload with dcut cancel followed by the .changes file name.', 's', [0], 'p.60'),
 ('If the maintainer updates the package before the delay expires, your upload will be rejected.', 's', [3], 'p.60'),
])
add('Z07-s1', 'Z07-cite', [
 ('\\numberwithin 命令也可以用于将任意的两个计数器联系在一起 [3]。', 's', [2], 'wrong marker: [3] does not say it; [2] (p.18) does'),
 ('重新定义 \\theequation 以后，每当新的章节开始时公式编号会自动从 1 开始 [3]。', 'u', [], 'contradicted: p.18 says it does not restart'),
 ('(1a) (1b) 这种公式编号可以使用 amsmath 宏包中的 subequations 环境 [2]。', 's', [2], 'right marker: p.18'),
 ('公式编号的变化形式可以用 amsmath 宏包的 \\tag 命令加上 LaTeX 的引用机制实现 [1]。', 's', [1], 'right marker: p.19'),
])
add('Z09-s1', 'Z09-cite', [
 ('在行间公式中，求和符号的上下限出现在符号的右边 [1]。', 's', [1], 'right marker: p.20'),
 ('\\limits 令巨算符的上下标位于上下方 [4]。', 's', [2], 'wrong marker: [4] is about extensible arrows; [2] says it'),
 ('\\nolimits 令上下标位于正上方和正下方 [2]。', 'u', [], 'contradicted: \\nolimits puts them to the right'),
 ('amsmath 提供了两个可以伸长的箭头 \\xleftarrow 和 \\xrightarrow [1]。', 's', [4], 'wrong marker: [1] is about \\bm and limits; [4] says it'),
 ('向量常用斜体加黑体表示，可以使用 bm 宏包提供的 \\bm 命令 [1]。', 's', [1], 'right marker: p.20'),
])
add('Z11-s1', 'Z11-cite', [
 ('将文献引用作为上标出现可以使用 overcite 宏包 [2]。', 's', [1], 'wrong marker: [2] is about \\cite; [1] says it'),
 ('也可以使用 natbib 宏包的 super 参数 [1]。', 's', [1], 'right marker: p.26'),
 ('这两种方法产生的上标引用都带有方括号 [1]。', 'u', [], 'contradicted: p.26 says no brackets'),
 ('\\nocite{*} 让所有未被引用的文献都列出 [2]。', 's', [3], 'wrong marker: [2] is p.87; [3] (p.90) says it'),
 ('\\cite 带一个可选参数，为引用的编号后加上额外的内容 [2]。', 's', [2], 'right marker: p.87'),
])
add('Z12-s1', 'Z12-compact', [
 ('在标准的 LaTeX 表格环境中使用 \\footnote，脚注内容会出现在页面底部。', 'u', [], 'contradicted: p.28 says it is swallowed, not at the page bottom'),
 ('把表格放到一个 minipage 环境中，所有的脚注会出现在表格的下方。', 's', [0], 'p.28'),
 ('也可以改用 longtable 环境，脚注就会出现在页面底部。', 'u', [], 'invented: longtable is not mentioned'),
])
add('Z13-s1', 'Z13-compact', [
 ('可以使用 textcomp 宏包提供的 \\textperthousand 命令。', 's', [3], 'p.32'),
 ('也可以使用 amssymb 宏包提供的 \\permil 命令。', 'u', [], 'invented package and command'),
 ('\\makeatletter 和 \\makeatother 用于在文档中使用含有 @ 字符的内部命令。', 's', [3], 'p.32'),
])

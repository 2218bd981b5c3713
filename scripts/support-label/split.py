#!/usr/bin/env python3
"""Sentence splitter used for the labelled set (bench/data/support.jsonl).

Rules: a sentence ends at 。！？ (any time), or at . ! ? followed by whitespace or the
end of the text (not after a list number such as "1." at the start of a line, nor after
"e.g." / "i.e." / "etc." / "vs."); [N] citation markers right after the end belong to the
sentence. Every line break ends a sentence too (list items, echoed source lines). A fenced
``` code block is one unit. The text of each sentence is kept exactly (only surrounding
whitespace is trimmed), so `answer[start:end] == text`."""
import re

ABBR = ('e.g', 'i.e', 'etc', 'vs', 'cf', 'Fig', 'fig', 'No', 'p', 'pp')
CITE = re.compile(r'\s*(\[\d+\](?:\s*,?\s*\[\d+\])*)')


def spans(answer):
    out = []
    i, n, start = 0, len(answer), 0

    def emit(a, b):
        seg = answer[a:b]
        l = len(seg) - len(seg.lstrip())
        r = len(seg.rstrip())
        if r > l:
            out.append((a + l, a + r))

    while i < n:
        if answer.startswith('```', i) and answer[start:i].strip() == '':
            j = answer.find('```', i + 3)
            j = n if j < 0 else j + 3
            emit(start, j)
            i = start = j
            continue
        c = answer[i]
        if c == '\n':
            emit(start, i)
            i += 1
            start = i
            continue
        end = None
        if c in '。！？':
            end = i + 1
        elif c in '.!?' and (i + 1 == n or answer[i + 1].isspace()):
            line_start = answer.rfind('\n', 0, i) + 1
            before = answer[line_start:i]
            word = re.search(r'(\S+)$', answer[start:i])
            if c == '.' and re.fullmatch(r'\s*[-*]?\s*\d+', before):
                end = None  # list number "1."
            elif c == '.' and word and word.group(1).rstrip(')').endswith(ABBR) and len(word.group(1)) <= 5:
                end = None
            else:
                end = i + 1
        if end is not None:
            while end < n and answer[end] in '”’"\')）」』':
                end += 1
            m = CITE.match(answer, end)
            if m and '\n' not in m.group(0):
                end = m.end()
                if end < n and answer[end] in '.。':
                    end += 1
            emit(start, end)
            i = start = end
            continue
        i += 1
    emit(start, n)
    return out


def sentences(answer):
    return [answer[a:b] for a, b in spans(answer)]


def cited(text):
    return [int(x) for x in re.findall(r'\[(\d+)\]', text)]


if __name__ == '__main__':
    import sys
    for s in sentences(sys.stdin.read()):
        print(repr(s))

#!/usr/bin/env python3
"""Build bench/data/support.jsonl from the raw runs, the hand labels (labels_model.py)
and the scripted answers (labels_scripted.py).

usage: build.py RAW_DIR   (cwd = repository root)"""
import json, os, random, re, sys, collections, unicodedata
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from split import sentences, cited
from labels_model import L
import labels_scripted

RAW = sys.argv[1] if len(sys.argv) > 1 else '/tmp/qlabel/raw'
OUT = 'bench/data/support.jsonl'
SPLITS = os.path.join(HERE, 'splits.json')
SEED = 48
CODE = {'s': 'supported', 'u': 'unsupported', 'n': 'no_claim'}


def norm(t):
    return re.sub(r'\s+', '', t)


def content_size(t):
    cjk = sum(1 for c in t if '\u4e00' <= c <= '\u9fff')
    words = len(re.findall(r'[A-Za-z]{3,}', t))
    return cjk, words


def auto_label(text, in_echo, texts, numbers):
    """Rule labels: punctuation-only and the lines of an echoed 'Source N:' block."""
    if not any(c.isalnum() for c in text):
        return ('n', [], 'punctuation only', False)
    if not in_echo:
        return None
    if re.fullmatch(r'Source \d+:', text):
        return ('n', [], 'echoed source header', True)
    if text.endswith(('?', '？')):
        return ('n', [], 'echoed heading (a question)', True)
    hits = [numbers[i] for i, t in enumerate(texts) if norm(text) in norm(t)]
    cjk, words = content_size(text)
    if hits and (cjk >= 12 or words >= 4) and text.endswith(('.', '。', '！', '!', '；')):
        return ('s', hits, 'verbatim copy of a source line', True)
    if hits or cjk + words <= 3:
        return ('n', [], 'fragment of an echoed source', True)
    return None


def make_record(rid, qid, q, origin, src_ev, cit_ev, answer, labels):
    sources = [{k: s[k] for k in ('chunk_id', 'file', 'page_start', 'page_end', 'text')} for s in src_ev]
    citations = [{k: c[k] for k in ('number', 'chunk_id', 'text')} for c in (cit_ev or [])]
    if citations:
        texts, numbers = [c['text'] for c in citations], [c['number'] for c in citations]
    else:
        texts, numbers = [s['text'] for s in sources], list(range(len(sources)))
    sents, in_echo, missing = [], False, []
    for k, text in enumerate(sentences(answer)):
        if re.fullmatch(r'Source \d+:', text):
            in_echo = True
        lab = labels.get(k)
        echo = in_echo
        if lab is None:
            a = auto_label(text, in_echo, texts, numbers)
            if a is None:
                missing.append((k, text))
                continue
            code, by, why, echo = a
        else:
            code, by, why = lab[:3]
        c = cited(text)
        s = {'text': text, 'label': CODE[code], 'cited': c,
             'wrong_citation': bool(c) and code != 'n' and any(n not in by for n in c),
             'supported_by': by, 'why': why}
        if len(lab or ()) > 3:
            s.update(lab[3])
        if echo:
            s['echo'] = True
        if code == 's' and not by:
            raise SystemExit(f'{rid} S{k}: supported with no supported_by')
        if code != 's' and by:
            raise SystemExit(f'{rid} S{k}: {code} with supported_by')
        for n in by:
            if n not in numbers:
                raise SystemExit(f'{rid} S{k}: supported_by {n} not in {numbers}')
        sents.append(s)
    extra = set(labels) - set(range(len(sentences(answer))))
    if extra:
        raise SystemExit(f'{rid}: labels for missing sentences {sorted(extra)}')
    if missing:
        for k, t in missing:
            print(f'UNLABELLED {rid} S{k}: {t}')
        return None
    return {'id': rid, 'question_id': qid, 'lang': q['lang'], 'question': q['question'],
            'origin': origin, 'split': None, 'sources': sources, 'citations': citations,
            'answer': answer, 'sentences': sents}


def main():
    recs, bad = [], 0
    raws = {}
    for rid in sorted(L):
        raw = json.load(open(f'{RAW}/{rid}.json'))
        raws[rid] = raw
        q = raw['question']
        r = make_record(rid, q['id'], q, 'model', raw['sources']['sources'],
                        raw.get('citations', {}).get('citations'), raw['done']['answer'], L[rid])
        if r is None:
            bad += 1
        else:
            recs.append(r)
    for sc in labels_scripted.S:
        base = json.load(open(f"{RAW}/{sc['base']}.json"))
        q = base['question']
        answer = sc['answer']
        labels = {k: v for k, v in enumerate(sc['labels'])}
        r = make_record(sc['id'], q['id'], q, 'scripted', base['sources']['sources'],
                        base.get('citations', {}).get('citations'), answer, labels)
        if r is None:
            bad += 1
        else:
            r['based_on'] = sc['base']
            recs.append(r)
    if bad:
        raise SystemExit(f'{bad} records have unlabelled sentences')
    # the split: drawn once with a fixed seed, then kept (splits.json) so later additions
    # do not move records that were already assigned
    splits = json.load(open(SPLITS)) if os.path.exists(SPLITS) else {}
    new = sorted(r['id'] for r in recs if r['id'] not in splits)
    rng = random.Random(SEED + len(splits))
    rng.shuffle(new)
    for i, rid in enumerate(new):
        splits[rid] = 'tune' if i % 2 == 0 else 'heldout'
    json.dump(splits, open(SPLITS, 'w'), indent=0, sort_keys=True)
    for r in recs:
        r['split'] = splits[r['id']]
    with open(OUT, 'w') as f:
        for r in recs:
            f.write(json.dumps(r, ensure_ascii=False) + '\n')
    report(recs)


def report(recs):
    c = collections.Counter()
    for r in recs:
        c['records', r['origin']] += 1
        c['records', r['split']] += 1
        for s in r['sentences']:
            kind = 'echo' if s.get('echo') else 'answer'
            c[kind, 'all'] += 1
            c[kind, s['label']] += 1
            if kind == 'answer':
                for key in (r['split'], r['lang'], r['origin']):
                    c['answer', s['label'], key] += 1
                if s['cited']:
                    c['answer', 'cited', 'wrong' if s['wrong_citation'] else 'right'] += 1
    for k in sorted(c, key=str):
        print(' / '.join(k), c[k])


if __name__ == '__main__':
    main()

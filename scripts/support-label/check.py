#!/usr/bin/env python3
"""Sanity checks and counts for bench/data/support.jsonl."""
import json, collections, sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from split import sentences, cited

path = sys.argv[1] if len(sys.argv) > 1 else 'bench/data/support.jsonl'
recs = [json.loads(l) for l in open(path)]
ids = set()
c = collections.Counter()
for r in recs:
    assert r['id'] not in ids, r['id']; ids.add(r['id'])
    assert r['split'] in ('tune', 'heldout') and r['origin'] in ('model', 'scripted')
    texts = sentences(r['answer'])
    assert texts == [s['text'] for s in r['sentences']], r['id']
    nums = {x['number'] for x in r['citations']} or set(range(len(r['sources'])))
    pos = 0
    for s in r['sentences']:
        i = r['answer'].find(s['text'], pos); assert i >= 0; pos = i + len(s['text'])
        assert s['cited'] == cited(s['text'])
        assert all(n in nums for n in s['supported_by']), (r['id'], s)
        assert (s['label'] == 'supported') == bool(s['supported_by']), (r['id'], s)
        claim = s['label'] != 'no_claim'
        key = 'echo' if s.get('echo') else 'answer'
        c[key, s['label']] += 1
        if key == 'answer' and claim:
            c['claims', 'all'] += 1
            for k in (r['split'], r['lang'], r['origin']):
                c['claims', s['label'], k] += 1
            if s['cited']:
                if s['label'] == 'supported' and s['wrong_citation']:
                    c['cited', 'supported, wrong marker'] += 1
                elif s['label'] == 'supported':
                    c['cited', 'supported, right marker'] += 1
                else:
                    c['cited', 'unsupported, with a marker'] += 1
    c['records', r['origin']] += 1
    c['records', r['split']] += 1
    c['records', r['lang']] += 1
for k in sorted(c, key=str):
    print(' / '.join(k).ljust(40), c[k])

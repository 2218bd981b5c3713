#!/usr/bin/env python3
"""Print the raw runs (RAW_DIR/<qid>-<variant>.json) in a form to read while labelling:
question, sources (by 0-based index), citation map, and the split sentences."""
import json, sys, glob, os
sys.path.insert(0, os.path.dirname(__file__))
from split import sentences

raw = sys.argv[1]
only = sys.argv[2:] 
qids = sorted({os.path.basename(f).split('-')[0] for f in glob.glob(raw + '/*.json')})
for qid in qids:
    if only and qid not in only:
        continue
    recs = {v: json.load(open(f'{raw}/{qid}-{v}.json')) for v in ('compact', 'cite') if os.path.exists(f'{raw}/{qid}-{v}.json')}
    q = next(iter(recs.values()))['question']
    print('#' * 20, qid, q['question'])
    print('REF:', q.get('answer', ''), '| pages', q.get('file'), q.get('pages'))
    seen = {}
    for v, r in recs.items():
        for i, s in enumerate(r['sources']['sources']):
            if s['chunk_id'] in seen:
                continue
            seen[s['chunk_id']] = s
            print(f"--- chunk {s['chunk_id']} {s['file']} p{s['page_start']}-{s['page_end']}\n{s['text']}")
    for v, r in recs.items():
        print(f'=== {qid}-{v}  sources:', [s['chunk_id'] for s in r['sources']['sources']])
        if 'citations' in r:
            for c in r['citations']['citations']:
                src = seen.get(c['chunk_id'])
                full = src and src['text'] == c['text']
                print(f"  [{c['number']}] chunk {c['chunk_id']}" + ('' if full else f" PART: {c['text'][:60]!r}...{c['text'][-60:]!r}"))
        if 'done' not in r:
            print('  NO DONE', r.get('types'), r.get('stderr_tail', '')[-300:])
            continue
        for k, s in enumerate(sentences(r['done']['answer'])):
            print(f'  S{k}: {s}')

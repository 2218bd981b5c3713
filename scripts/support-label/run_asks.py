#!/usr/bin/env python3
"""Run `quire ask --json` (default model and settings) on the corpus questions and a
fixed subset of bench/data/questions-zh.jsonl, with and without --cite, and keep the
events the labels need (sources, citations, done) in OUT/<qid>-<variant>.json.

usage: run_asks.py QUIRE_BIN DATA_DIR OUT_DIR
(run with cwd = repository root so that models/ is found)"""
import json, os, subprocess, sys, time

quire, data_dir, out = sys.argv[1:4]
os.makedirs(out, exist_ok=True)
qs = [json.loads(l) for l in open('/work/shared/corpus/questions.jsonl')]
zh = [json.loads(l) for l in open('bench/data/questions-zh.jsonl')]
qs += zh[:16]  # the first 16 of the 32 Chinese questions (Z01..Z17, no Z03)
for q in qs:
    for variant, extra in (('compact', []), ('cite', ['--cite'])):
        path = os.path.join(out, f"{q['id']}-{variant}.json")
        if os.path.exists(path):
            continue
        t = time.time()
        p = subprocess.run(['nice', quire, 'ask', '--json', '--data-dir', data_dir, *extra, q['question']],
                           capture_output=True, text=True)
        rec = {'question': q, 'variant': variant, 'args': extra, 'rc': p.returncode,
               'stderr_tail': p.stderr[-2000:], 'wall': time.time() - t}
        for line in p.stdout.splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if ev.get('type') in ('sources', 'citations', 'done', 'quotes', 'support', 'not_found', 'error'):
                rec[ev['type']] = ev
            rec.setdefault('types', []).append(ev.get('type')) if ev.get('type') not in ('token',) else None
        json.dump(rec, open(path, 'w'), ensure_ascii=False, indent=1)
        print(q['id'], variant, p.returncode, round(rec['wall'], 1), flush=True)

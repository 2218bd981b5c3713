#!/usr/bin/env python3
"""Pool the first-turn questions the quotes are tuned on into one set, keeping each
set's committed halves: the corpus questions (bench/data/not_found_split.json), the
table questions (bench/data/table_questions_split.json) and the conversations' first
turns (bench/data/conversations_split.json). Writes bench/data/quotes_pool.jsonl and
bench/data/quotes_pool_split.json, for

    quire-bench support --data-dir D --no-llm \
        --questions bench/data/quotes_pool.jsonl --split bench/data/quotes_pool_split.json

No new draw: a question is in the tuning half exactly when its own set put it there."""
import json
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
corpus = sys.argv[2] if len(sys.argv) > 2 else "../shared/corpus/questions.jsonl"


def jl(p):
    with open(p, encoding="utf-8") as f:
        return [json.loads(l) for l in f if l.strip()]


pool, tune = [], []


def add(q, in_tune):
    pool.append({k: q[k] for k in ("id", "lang", "file", "pages", "question", "must_contain")})
    if in_tune:
        tune.append(q["id"])


nf = json.load(open(f"{root}/bench/data/not_found_split.json"))["tune"]
for q in jl(corpus):
    add(q, q["id"] in nf)
tq = json.load(open(f"{root}/bench/data/table_questions_split.json"))["tune"]
for q in jl(f"{root}/bench/data/table_questions.jsonl"):
    add(q, q["id"] in tq)
for s in json.load(open(f"{root}/bench/data/conversations_split.json"))["sets"].values():
    for c in jl(f"{root}/{s['file']}"):
        t = c["turns"][0]
        add({"id": c["id"], "lang": c["lang"], "file": c["file"], "pages": t["pages"],
             "question": t["question"], "must_contain": t["must_contain"]}, c["id"] in s["tune"])

with open(f"{root}/bench/data/quotes_pool.jsonl", "w", encoding="utf-8") as f:
    for q in pool:
        f.write(json.dumps(q, ensure_ascii=False) + "\n")
with open(f"{root}/bench/data/quotes_pool_split.json", "w", encoding="utf-8") as f:
    json.dump({"about": __doc__.split("\n\n")[0].replace("\n", " "), "tune": tune,
               "held": [q["id"] for q in pool if q["id"] not in tune]}, f, ensure_ascii=False, indent=1)
    f.write("\n")
print(f"{len(pool)} questions, {len(tune)} tuning")

"""Quire's /v1 API through the official `openai` Python client (PyPI), as
tests/it/openai.rs runs it: `python client.py BASE_URL QUESTION`.

Checks the model list (one per response mode), a whole answer with its sources in the
extra `quire` field, a streamed answer (chunks, finish reason, sources on the last
chunk), a follow-up that carries the conversation, a stream the client stops early
(the next answer still comes), and the errors for an unknown model and a request
without a user message. Exits non-zero on the first failure.
"""
import sys

import openai
from openai import OpenAI

base, question = sys.argv[1], sys.argv[2]
c = OpenAI(base_url=base, api_key="unused-on-loopback", max_retries=0, timeout=600)

ids = [m.id for m in c.models.list().data]
assert "quire-compact" in ids and "quire-extractive" in ids and len(ids) == 8, ids

r = c.chat.completions.create(model="quire-compact", max_tokens=24,
                              messages=[{"role": "user", "content": question}])
answer = r.choices[0].message.content
assert answer and answer.strip(), r
assert r.choices[0].finish_reason == "stop", r
assert r.usage.completion_tokens > 0 and r.usage.prompt_tokens > 0, r.usage
sources = r.model_extra["quire"]["sources"]
assert sources and all(s["file"] == "wasysym.pdf" for s in sources), sources
# Quire's own fields: the quotes and every sentence checked against the sources.
quire = r.model_extra["quire"]
assert quire["quotes"] and quire["quotes"][0]["file"] == "wasysym.pdf", quire["quotes"]
support = quire["support"]
assert support["sentences"] and "sentence" in support["summary"], support
print("whole:", answer.strip())

s = c.chat.completions.create(model="quire-refine", max_tokens=16, stream=True,
                              messages=[{"role": "user", "content": question}])
pieces, last = [], None
for ch in s:
    if ch.choices and ch.choices[0].delta.content:
        pieces.append(ch.choices[0].delta.content)
    last = ch
assert len(pieces) > 1, pieces
assert last.choices[0].finish_reason == "stop", last
assert (last.model_extra or {}).get("quire", {}).get("sources"), last
print("streamed:", len(pieces), "chunks:", "".join(pieces).strip())

# A follow-up: the earlier turns are the conversation the chat mode condenses.
r = c.chat.completions.create(model="quire-compact", max_tokens=16, messages=[
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": question},
    {"role": "assistant", "content": answer},
    {"role": "user", "content": "And which option gives the other integral signs?"},
])
assert r.choices[0].message.content.strip(), r
print("follow-up:", r.choices[0].message.content.strip())

# A client that stops reading: the answer is stopped and the model is free again.
s = c.chat.completions.create(model="quire-compact", max_tokens=200, stream=True,
                              messages=[{"role": "user", "content": question}])
for i, ch in enumerate(s):
    if i == 2:
        break
s.close()
r = c.chat.completions.create(model="quire-no_text",
                              messages=[{"role": "user", "content": question}])
assert r.model_extra["quire"]["sources"], r
print("after a stopped stream: answered")

try:
    c.chat.completions.create(model="gpt-4", messages=[{"role": "user", "content": "hi"}])
    raise SystemExit("an unknown model was answered")
except openai.NotFoundError as e:
    assert "quire-compact" in str(e), e
try:
    c.chat.completions.create(model="quire-compact", messages=[{"role": "system", "content": "x"}])
    raise SystemExit("a request without a user message was answered")
except openai.BadRequestError as e:
    assert "no user message" in str(e), e
print("ok")

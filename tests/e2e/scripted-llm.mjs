// A scripted OpenAI-compatible model server on loopback, for tests that need a model
// whose every word is known: it answers what Quire's `RemoteLlm` (src/llm/remote.rs)
// asks — `GET /v1/models` (with the context window as vLLM's `max_model_len`),
// `POST /extras/tokenize/count` and `/tokenize` (a rough count: a token per 4
// characters), `POST /v1/chat/completions` and `/v1/completions`, streamed as
// server-sent events or not — and replies with `reply(prompt)`, where `prompt` is the
// request's messages (or prompt) as one text (a reply of null fails the request with
// a 500). Every request is kept in `requests`.
import { createServer } from "node:http";

export const MODEL = "scripted";

/** Start it; resolves to { url, requests, close }. */
export function startScriptedLlm(reply) {
  const requests = [];
  const server = createServer(async (req, res) => {
    let raw = "";
    for await (const chunk of req) raw += chunk;
    let body = {};
    try { body = raw ? JSON.parse(raw) : {}; } catch { body = {}; }
    requests.push({ method: req.method, path: req.url, body });
    const json = (code, v) => {
      res.writeHead(code, { "content-type": "application/json" });
      res.end(JSON.stringify(v));
    };
    const path = (req.url || "").split("?")[0];
    if (req.method === "GET" && path === "/v1/models") {
      return json(200, { object: "list", data: [{ id: MODEL, object: "model", owned_by: "tests", max_model_len: 8192 }] });
    }
    const count = (s) => Math.max(1, Math.ceil(String(s || "").length / 4));
    if (req.method === "POST" && path === "/extras/tokenize/count") return json(200, { count: count(body.input) });
    if (req.method === "POST" && path === "/tokenize") {
      return json(200, { tokens: Array.from({ length: count(body.content ?? body.prompt) }, (_, i) => i) });
    }
    const chat = path === "/v1/chat/completions";
    if (req.method === "POST" && (chat || path === "/v1/completions")) {
      const prompt = chat ? (body.messages || []).map((m) => m.content).join("\n") : String(body.prompt ?? "");
      const text = reply(prompt, body);
      // null: the server fails the request, as a model server that broke would.
      if (text === null) return json(500, { error: { message: "the scripted model failed on purpose" } });
      const usage = { prompt_tokens: count(prompt), completion_tokens: count(text), total_tokens: count(prompt) + count(text) };
      const id = `cmpl-${requests.length}`;
      const created = Math.floor(Date.now() / 1000);
      if (!body.stream) {
        return json(200, chat
          ? { id, object: "chat.completion", created, model: MODEL, choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }], usage }
          : { id, object: "text_completion", created, model: MODEL, choices: [{ index: 0, text, finish_reason: "stop" }], usage });
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
      const event = (choice) => res.write(`data: ${JSON.stringify({ id, object: chat ? "chat.completion.chunk" : "text_completion", created, model: MODEL, choices: [{ index: 0, ...choice }] })}\n\n`);
      // A few words at a time, as a model streams.
      for (const piece of text.match(/\S+\s*|\s+/g) || []) {
        event(chat ? { delta: { content: piece }, finish_reason: null } : { text: piece, finish_reason: null });
      }
      event(chat ? { delta: {}, finish_reason: "stop" } : { text: "", finish_reason: "stop" });
      res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: MODEL, choices: [], usage })}\n\n`);
      res.end("data: [DONE]\n\n");
      return;
    }
    json(404, { error: { message: `not found: ${req.method} ${path}` } });
  });
  return new Promise((ok) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      ok({ url: `http://127.0.0.1:${port}`, requests, close: () => new Promise((done) => { server.closeAllConnections?.(); server.close(() => done()); }) });
    });
  });
}

/** The numbered sources of a citation prompt (`Source N:\n…`), the last text given
 *  for each number (the template's own example comes first and is overridden). */
export function numberedSources(prompt) {
  const out = new Map();
  const re = /Source (\d+):\n([\s\S]*?)(?=\nSource \d+:\n|\n-{3,}|\nQuery:|$)/g;
  for (const m of prompt.matchAll(re)) out.set(Number(m[1]), m[2]);
  return out;
}

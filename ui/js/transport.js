// The one place that knows how the UI talks to the engine: Tauri IPC inside the
// desktop window, HTTP + server-sent events in a browser. Both expose the same API.

const tauri = globalThis.__TAURI__;

/** Parse a text/event-stream body, calling onEvent with each JSON `data:` payload. */
async function readSse(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, "")).join("\n");
      if (data) onEvent(JSON.parse(data));
    }
  }
}

/** POST to `url` (`init`: body, headers, signal) and pass each server-sent event to
 * onEvent; a refusal throws with the server's message. */
async function postEvents(url, init, onEvent) {
  const r = await fetch(url, { method: "POST", ...init });
  if (!r.ok) throw await failure(r);
  await readSse(r, onEvent);
}

/** A refused response as an Error with the server's message (its JSON `error`, or
 *  its plain text, or the status). */
async function failure(r) {
  const t = await r.text();
  let msg = t;
  try { msg = JSON.parse(t).error; } catch (_) { /* plain text */ }
  return new Error(msg || `${r.status} ${r.statusText}`);
}

async function httpJson(method, url, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const r = await fetch(url, init);
  const text = await r.text();
  const data = text ? JSON.parse(text) : null;
  if (!r.ok) throw new Error((data && data.error) || `${r.status} ${r.statusText}`);
  return data;
}

const http = {
  kind: "http",
  status: () => httpJson("GET", "/api/status"),
  library: (q) => httpJson("GET", `/api/documents?${new URLSearchParams(Object.entries(q).map(([k, v]) => [k, String(v)]))}`),
  queuePage: (offset, limit) => httpJson("GET", `/api/queue/page?offset=${offset}&limit=${limit}`),
  librarySummary: () => httpJson("GET", "/api/documents/summary"),
  retryFailed: (id) => httpJson("POST", `/api/documents/${encodeURIComponent(id)}/retry`),
  ignoreFailed: (id) => httpJson("POST", `/api/documents/${encodeURIComponent(id)}/ignore`),
  removeDocument: (id) => httpJson("DELETE", `/api/documents/${encodeURIComponent(id)}`),
  /** What PDF.js opens a document from: its URL, which PDF.js reads in ranges. The
   *  first byte is asked for here, so that a file moved or changed since indexing
   *  fails with the engine's message rather than PDF.js's bare status code. */
  async documentSource(id) {
    const url = `/api/documents/${encodeURIComponent(id)}/file`;
    const r = await fetch(url, { headers: { range: "bytes=0-0" } });
    if (!r.ok) throw await failure(r);
    return { url };
  },
  settings: () => httpJson("GET", "/api/settings"),
  saveSettings: (s) => httpJson("PUT", "/api/settings", s),
  collections: () => httpJson("GET", "/api/collections"),
  createCollection: (name, documents) => httpJson("POST", "/api/collections", { name, documents }),
  updateCollection: (id, { name, documents }) =>
    httpJson("PUT", `/api/collections/${encodeURIComponent(id)}`, { name, documents }),
  removeCollection: (id) => httpJson("DELETE", `/api/collections/${encodeURIComponent(id)}`),
  conversations: () => httpJson("GET", "/api/conversations"),
  conversation: (id) => httpJson("GET", `/api/conversations/${encodeURIComponent(id)}`),
  removeConversation: (id) => httpJson("DELETE", `/api/conversations/${encodeURIComponent(id)}`),
  deleteMessage: (conversation, id) =>
    httpJson("DELETE", `/api/conversations/${encodeURIComponent(conversation)}/messages/${encodeURIComponent(id)}`),
  /** Download the conversation as a Markdown file. */
  async exportConversation(id) {
    const r = await fetch(`/api/conversations/${encodeURIComponent(id)}/export`);
    if (!r.ok) throw await failure(r);
    const url = URL.createObjectURL(await r.blob());
    const a = document.createElement("a");
    a.href = url;
    a.download = `quire-conversation-${id}.md`;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  },
  /** Ask; events stream to onEvent. Returns { cancel, done }. */
  ask(request, onEvent) {
    const ctl = new AbortController();
    const done = (async () => {
      await postEvents("/api/ask", {
        headers: { "content-type": "application/json" },
        body: JSON.stringify(request),
        signal: ctl.signal,
      }, onEvent);
    })().catch((e) => {
      if (e.name === "AbortError") onEvent({ type: "cancelled" });
      else throw e;
    });
    return { cancel: () => ctl.abort(), done };
  },
  /** Upload File objects; progress events stream to onEvent. */
  index(files, onEvent) {
    const form = new FormData();
    for (const f of files) form.append("file", f, f.name);
    return postEvents("/api/upload", { body: form }, onEvent);
  },
  /** Re-embed the index with the chosen embedding model; progress streams to onEvent. */
  reembed: (onEvent) => postEvents("/api/reembed", {}, onEvent),
  /** The indexing queue: { items, pending, eta_secs }. */
  queue: () => httpJson("GET", "/api/queue"),
  /** Cancel one queued file by id, or (no id) the whole queue. */
  cancelQueued: (id) => httpJson("POST", "/api/queue/cancel", { id: id ?? null }),
  folders: () => httpJson("GET", "/api/folders"),
  addFolder: (path, collection) => httpJson("POST", "/api/folders", { path, collection }),
  removeFolder: (id, keepDocuments) =>
    httpJson("DELETE", `/api/folders/${encodeURIComponent(id)}?keep_documents=${keepDocuments ? "true" : "false"}`),
  rescanFolder: (id) => httpJson("POST", `/api/folders/${encodeURIComponent(id)}/rescan`),
  onFileDrop: null,
};

function ipc(cmd, args) {
  return tauri.core.invoke(cmd, args);
}

/** Run a command that reports over a fresh channel, each event to `onEvent`. Tauri
 *  delivers a channel's events apart from the command's reply, so the reply can come
 *  before the last events: this resolves once the command has returned and the channel
 *  is drained (Tauri runs its cleanup when the end mark, sent as the command drops the
 *  channel, and every event before it are in). */
function streamed(cmd, args, onEvent) {
  const channel = new tauri.core.Channel();
  channel.onmessage = onEvent;
  let drained = Promise.resolve();
  if (typeof channel.cleanupCallback === "function") {
    const cleanup = channel.cleanupCallback.bind(channel);
    drained = new Promise((resolve) => {
      channel.cleanupCallback = () => { cleanup(); resolve(); };
    });
  }
  return ipc(cmd, { ...args, channel }).then(async (value) => { await drained; return value; });
}

const desktop = tauri && {
  kind: "tauri",
  status: () => ipc("status"),
  library: (query) => ipc("library", { query }),
  queuePage: (offset, limit) => ipc("queue_page", { offset, limit }),
  librarySummary: () => ipc("library_summary"),
  retryFailed: (id) => ipc("retry_failed", { id }),
  ignoreFailed: (id) => ipc("ignore_failed", { id }),
  removeDocument: (id) => ipc("remove_document", { id }),
  /** The document's bytes, over IPC (no file-system access for the page). */
  async documentSource(id) {
    const bytes = await ipc("document_file", { id });
    return { data: new Uint8Array(bytes) };
  },
  settings: () => ipc("settings"),
  saveSettings: (settings) => ipc("save_settings", { settings }),
  collections: () => ipc("collections"),
  createCollection: (name, documents) => ipc("create_collection", { name, documents }),
  updateCollection: (id, { name, documents }) => ipc("update_collection", { id, name: name ?? null, documents: documents ?? null }),
  removeCollection: (id) => ipc("remove_collection", { id }),
  conversations: () => ipc("conversations"),
  conversation: (id) => ipc("conversation", { id }),
  removeConversation: (id) => ipc("remove_conversation", { id }),
  deleteMessage: (conversationId, messageId) => ipc("delete_message", { conversationId, messageId }),
  /** Save the conversation as Markdown where the person chooses (a native dialog). */
  exportConversation: (id) => ipc("export_conversation", { id }),
  ask(request, onEvent) {
    let askId = null;
    const done = streamed("ask", { request }, (ev) => {
      if (ev.type === "started") askId = ev.ask_id;
      onEvent(ev);
    });
    return { cancel: () => askId && ipc("cancel", { askId }), done };
  },
  /** Index paths (from a drop or the file picker). */
  index: (paths, onEvent) => streamed("index_paths", { paths }, onEvent),
  reembed: (onEvent) => streamed("reembed", {}, onEvent),
  queue: () => ipc("queue"),
  cancelQueued: (id) => ipc("cancel_queued", { id: id ?? null }),
  pickFiles: () => ipc("pick_files"),
  folders: () => ipc("folders"),
  addFolder: (path, collection) => ipc("add_folder", { path, collection }),
  removeFolder: (id, keepDocuments) => ipc("remove_folder", { id, keepDocuments }),
  rescanFolder: () => ipc("rescan_folders"),
  pickFolder: () => ipc("pick_folder"),
  /** Subscribe to native drag and drop: cb({ kind: "enter"|"leave"|"drop", paths }). */
  onFileDrop(cb) {
    const win = tauri.webviewWindow?.getCurrentWebviewWindow?.() ?? tauri.window?.getCurrentWindow?.();
    if (!win || !win.onDragDropEvent) return;
    win.onDragDropEvent((e) => {
      const p = e.payload;
      if (p.type === "enter" || p.type === "over") cb({ kind: "enter", paths: p.paths || [] });
      else if (p.type === "leave") cb({ kind: "leave", paths: [] });
      else if (p.type === "drop") cb({ kind: "drop", paths: p.paths || [] });
    });
  },
};

export const transport = desktop || http;

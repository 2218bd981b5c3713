// What the chat's modules share: the conversation shown, the answer being generated,
// where the next answer goes, and the library's counts, settings and status as last
// read. One object, changed in place by the module that owns each field.
export const state = {
  conversationId: null, // the conversation shown (conversations.js, asking.js)
  running: null, // the answer being generated: its transport handle (asking.js)
  group: null, // where the next answer goes: the last question's group (messages.js, asking.js)
  settings: null, // the engine's settings (status.js, settings.js)
  status: null, // the engine's status: models found, problems (status.js)
  summary: null, // the library's counts: indexed, queued, failed, pages, chunks (documents.js)
  names: new Map(), // document id → name, of the documents listed so far (documents.js, scope.js)
};

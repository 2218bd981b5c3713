// Quire's UI: chat, response modes, sources, documents, settings. This entry applies
// the theme and wires the modules, each with one job, then starts:
//   ./documents.js ./indexing.js   the documents list; adding, dropping and indexing PDFs
//   ./folders.js                   watched folders: add, list, rescan, stop watching
//   ./status.js ./welcome.js       what is missing or stale; the empty conversation
//   ./conversations.js             the kept conversations: list, open, delete, export
//   ./messages.js ./answer.js      a question and its answers on screen; one answer drawn
//   ./asking.js ./sources.js       asking, streaming, stopping; the sources panel
//   ./settings.js                  the Settings dialog and the toolbar's switches
// They talk to the engine only through ./transport.js and render untrusted text only
// through ./dom.js.
import { transport } from "./transport.js";
import "./keys.js";
import { initScope, setDocuments } from "./scope.js";
import { setModes, showModeHelp } from "./synthesis.js";
import { state } from "./state.js";
import { banner } from "./banner.js";
import { initDocuments, loadDocuments } from "./documents.js";
import { initIndexing } from "./indexing.js";
import { initFolders } from "./folders.js";
import { checkStatus } from "./status.js";
import { showWelcome } from "./welcome.js";
import { initConversations, openConversation, deleteMessage } from "./conversations.js";
import { initMessages } from "./messages.js";
import { initRoute } from "./route.js";
import { initAsking, askAgain, editQuestion } from "./asking.js";
import { initSettings, showChatSwitches } from "./settings.js";

const $ = (id) => document.getElementById(id);

// ---------- theme ----------
function applyTheme(t) {
  document.documentElement.dataset.theme = t;
  localStorage.setItem("quire-theme", t);
}
applyTheme(localStorage.getItem("quire-theme") || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"));
$("theme-btn").addEventListener("click", () => applyTheme(document.documentElement.dataset.theme === "dark" ? "light" : "dark"));

// ---------- modes ----------
setModes(null, "compact");
$("mode").addEventListener("change", showModeHelp);

// ---------- wiring ----------
// A new library summary changes the welcome and what the scope picker offers.
initDocuments({ onChange: (summary) => { showWelcome(); setDocuments(summary); } });
initIndexing();
initFolders();
initConversations();
initMessages({ edit: editQuestion, remove: deleteMessage, again: askAgain });
initRoute({ again: askAgain });
initAsking();
initSettings();
initScope({ onError: banner });

// ---------- start ----------
async function start() {
  showModeHelp();
  await checkStatus();
  showChatSwitches();
  if (state.settings?.mode) $("mode").value = state.settings.mode;
  showModeHelp();
  await loadDocuments();
  // localStorage keeps strings; the engine wants the numeric id.
  // A remembered conversation that is gone (deleted, or another data directory's) is
  // forgotten quietly.
  let last = Number(localStorage.getItem("quire-conversation")) || null;
  if (last) {
    try {
      if (!(await transport.conversations()).some((c) => c.id === last)) last = null;
    } catch (_) { last = null; }
  }
  await openConversation(last);
}
start();
